/*
 * afrt_dwconv.h -- direct depthwise convolution for afrt.h (included by afrt.h, which defines
 * afrt_conv_params, afrt_epilogue, afrt_thread_scratch and the small helpers used here; this
 * file does not stand alone). Copied beside afrt.h into every build and package folder.
 *
 *   afrt_dwconv2d_f32(x, w, bias, y, &p, epi)
 *
 * Any conv with one input channel per group (C / group == 1; a channel multiplier K / group
 * > 1 is allowed), any kernel size up to AFRT_DW_MAX_TAPS taps, any stride, padding and
 * dilation. No im2col. Two paths: without a channel multiplier and with dilation 1
 * (afrt_dwl_applies: MobileNet's and EfficientNet's layers) 16 channels go in the vector
 * lanes ("Channels in vector lanes" below); the rest take the phase planes.
 *
 * Method ("phase planes"). Per output channel the input plane is copied, zero-padded, into a
 * per-thread buffer split into stride_h x stride_w phase planes: plane (a, b) holds padded
 * rows a, a + sh, a + 2 sh, ... and, within each, padded columns b, b + sw, .... Every plane
 * has the same pitch Lp = ceil(padded width / sw). Output (oh, ow) reads, for tap (r, s),
 * the element at oh * Lp + ow + off(r, s) with a per-tap constant off (the plane, the row and
 * column shift). So over the "wide" index q = oh * Lp + ow every tap is a unit-stride load
 * at a constant offset: the conv is a 1-d correlation of length (OH - 1) * Lp + OW with
 * R*S taps. Columns ow in [OW, Lp) are computed and dropped. Stride 2 costs no permutes in
 * the inner loop, and small planes (4x4, 7x7) fill whole vectors instead of one masked
 * vector per output row.
 *
 * AVX-512: 4 vectors (64 wide positions) per step with the tap weights broadcast from memory;
 * short tails split the taps over two accumulators to halve the FMA dependency chain.
 * Elsewhere: blocks of 32 positions in a local array, taps outer, which compilers vectorise.
 *
 * Output: the wide rows are compacted into y with the bias added, channel by channel, and
 * the epilogue (afrt_epilogue, same contract as the GEMM path: rows = output channels, cols =
 * output positions, ld = OH*OW) runs once per block of channels while the block is in L1/L2.
 * Tasks are (image, channel block); OpenMP splits them over threads when the work is worth it.
 */
#ifndef AFRT_DWCONV_H
#define AFRT_DWCONV_H

#ifndef AFRT_DW_MAX_TAPS
#define AFRT_DW_MAX_TAPS 64
#endif
#ifndef AFRT_DW_TINY_VECS
#define AFRT_DW_TINY_VECS 16
#endif
/* A channel block's output aims at this many floats (16 KiB: L1 with the phase buffer). */
#ifndef AFRT_DW_BLOCK_FLOATS
#define AFRT_DW_BLOCK_FLOATS 4096
#endif
/* Time per multiply-add relative to the GEMM core, for the threading threshold. */
#ifndef AFRT_DW_WORK
#define AFRT_DW_WORK 3.0
#endif

/* Whether afrt_dwconv2d_f32 takes this conv (the lowering's `direct_dw` choice). */
static inline int afrt_dwconv_applies(const afrt_conv_params *p) {
    const int64_t g = p->group > 0 ? p->group : 1;
    return p->C == g && p->K % g == 0 && p->R * p->S <= AFRT_DW_MAX_TAPS && p->R >= 1 &&
           p->S >= 1 && p->stride_h >= 1 && p->stride_w >= 1 && p->dil_h >= 1 && p->dil_w >= 1 &&
           p->pad_top >= 0 && p->pad_left >= 0;
}

typedef struct {
    int64_t lp, hph, plane; /* plane pitch, rows per plane, floats per plane */
    int64_t nq, nqv;        /* wide positions, and rounded up to the correlation's steps */
    int64_t filled, total;  /* floats written by the fill, buffer floats (slack zeroed) */
    int64_t taps, off[AFRT_DW_MAX_TAPS];
#if defined(__AVX512F__)
    /* Tiny planes (H*W <= 64, phase planes <= AFRT_DW_TINY_VECS vectors): the planes are
     * built from the input's 4 vectors by permutes, a table shared by every channel: lane l
     * of plane vector j is input element tidx[j][l] (bit 5: from vectors 2-3), zero where
     * tval[j] has no bit. */
    int64_t tiny_vecs; /* 0: not tiny */
    int32_t tidx[AFRT_DW_TINY_VECS][16];
    uint16_t thi[AFRT_DW_TINY_VECS], tval[AFRT_DW_TINY_VECS];
#endif
} afrt_dw_geom_;

static inline void afrt_dw_geom_init_(const afrt_conv_params *p, afrt_dw_geom_ *g) {
    const int64_t sh = p->stride_h, sw = p->stride_w;
    const int64_t hp = (p->OH - 1) * sh + (p->R - 1) * p->dil_h + 1;
    const int64_t wp = (p->OW - 1) * sw + (p->S - 1) * p->dil_w + 1;
    g->lp = afrt_cdiv_(wp, sw);
    g->hph = afrt_cdiv_(hp, sh);
    g->plane = g->lp * g->hph;
    g->nq = (p->OH - 1) * g->lp + p->OW;
    g->nqv = g->nq <= 32 ? 32 : afrt_cdiv_(g->nq, 64) * 64; /* what afrt_dw_correlate_ writes */
    g->taps = p->R * p->S;
    int64_t off_max = 0;
    for (int64_t r = 0; r < p->R; ++r)
        for (int64_t s = 0; s < p->S; ++s) {
            const int64_t dr = r * p->dil_h, ds = s * p->dil_w;
            const int64_t o = ((dr % sh) * sw + ds % sw) * g->plane + (dr / sh) * g->lp + ds / sw;
            g->off[r * p->S + s] = o;
            off_max = afrt_max_(off_max, o);
        }
    g->filled = sh * sw * g->plane;
    g->total = afrt_max_(g->filled, off_max + g->nqv);
#if defined(__AVX512F__)
    g->tiny_vecs = 0;
    if (p->H * p->W <= 64 && g->filled <= 16 * AFRT_DW_TINY_VECS) {
        g->tiny_vecs = afrt_cdiv_(g->filled, 16);
        for (int64_t j = 0; j < g->tiny_vecs; ++j) {
            g->thi[j] = g->tval[j] = 0;
            for (int64_t l = 0; l < 16; ++l) {
                const int64_t i = j * 16 + l, ph = i / g->plane, u = (i % g->plane) / g->lp;
                const int64_t ih = u * sh + ph / sw - p->pad_top;
                const int64_t iw = (i % g->lp) * sw + ph % sw - p->pad_left;
                const int ok = i < g->filled && ih >= 0 && ih < p->H && iw >= 0 && iw < p->W;
                const int64_t src = ok ? ih * p->W + iw : 0;
                g->tidx[j][l] = (int32_t)(src & 31);
                if (ok) g->tval[j] |= (uint16_t)(1u << l);
                if (src >= 32) g->thi[j] |= (uint16_t)(1u << l);
            }
        }
    }
#endif
}

#if defined(__AVX512F__)
/* The phase planes of a tiny plane (see afrt_dw_geom_), then the zeroed slack. */
static inline void afrt_dw_fill_tiny_(const float *restrict xc, const afrt_conv_params *p,
                                      const afrt_dw_geom_ *g, float *restrict xp) {
    const int64_t hw = p->H * p->W;
    __m512 in[4];
    for (int64_t v = 0; v < 4; ++v) {
        const int64_t m = afrt_max_(0, afrt_min_(16, hw - 16 * v));
        in[v] = m == 0 ? _mm512_setzero_ps()
                       : _mm512_maskz_loadu_ps((__mmask16)(((uint32_t)1 << m) - 1u), xc + 16 * v);
    }
    for (int64_t j = 0; j < g->tiny_vecs; ++j) {
        const __m512i idx = _mm512_loadu_si512((const void *)g->tidx[j]);
        const __m512 lo = _mm512_permutex2var_ps(in[0], idx, in[1]);
        const __m512 hi = _mm512_permutex2var_ps(in[2], idx, in[3]);
        _mm512_storeu_ps(xp + 16 * j,
                         _mm512_maskz_mov_ps((__mmask16)g->tval[j],
                                             _mm512_mask_blend_ps((__mmask16)g->thi[j], lo, hi)));
    }
    const int64_t done = 16 * g->tiny_vecs;
    for (int64_t i = done; i < g->total; i += 16) _mm512_storeu_ps(xp + i, _mm512_setzero_ps());
}
#endif

#if defined(__AVX512F__)
/* Zeroes [d, d + n) in whole 16-float stores: up to 15 floats after d + n are zeroed too. */
static inline void afrt_dw_zero16_(float *d, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(d + i, _mm512_setzero_ps());
}

/* d[j] = s[j * sw] for j in [0, n), sw = 1 or 2, in whole 16-float stores: up to 15 floats
 * after d + n are written with zeros. Reads only s[0, (n - 1) * sw]. */
static inline void afrt_dw_gather16_(float *d, const float *s, int64_t n, int64_t sw) {
    if (sw == 1) {
        for (int64_t j = 0; j < n; j += 16) {
            const int64_t m = n - j;
            const __m512 v = m >= 16 ? _mm512_loadu_ps(s + j)
                                     : _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1u), s + j);
            _mm512_storeu_ps(d + j, v);
        }
        return;
    }
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (int64_t j = 0; j < n; j += 16) {
        const int64_t m = 2 * (n - j) - 1; /* input floats this step needs */
        const float *b = s + 2 * j;
        __m512 lo, hi;
        if (m >= 32) {
            lo = _mm512_loadu_ps(b);
            hi = _mm512_loadu_ps(b + 16);
        } else if (m > 16) {
            lo = _mm512_loadu_ps(b);
            hi = _mm512_maskz_loadu_ps((__mmask16)((1u << (m - 16)) - 1u), b + 16);
        } else {
            lo = _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1u), b);
            hi = _mm512_setzero_ps();
        }
        _mm512_storeu_ps(d + j, _mm512_permutex2var_ps(lo, ev, hi));
    }
}
#endif

/* Copies input channel xc into the phase planes of xp (zero outside the input). AVX-512
 * (column strides 1 and 2): each plane in order, row by row, with whole-vector stores that
 * may spill up to 15 floats forward into what is written next (the buffer has the slack);
 * stride 2 is split into its column phases with one permute per 16 outputs. */
static inline void afrt_dw_fill_(const float *restrict xc, const afrt_conv_params *p,
                                 const afrt_dw_geom_ *g, float *restrict xp) {
    const int64_t sh = p->stride_h, sw = p->stride_w, H = p->H, W = p->W;
    const int64_t pt = p->pad_top, pl = p->pad_left, lp = g->lp;
#if defined(__AVX512F__)
    if (g->tiny_vecs) {
        afrt_dw_fill_tiny_(xc, p, g, xp);
        return;
    }
#endif
    for (int64_t a = 0; a < sh; ++a) {
        for (int64_t b = 0; b < sw; ++b) {
            float *restrict pd = xp + (a * sw + b) * g->plane;
            /* plane columns [v0, v0 + nb) hold input columns c0, c0 + sw, ... */
            const int64_t v0 = afrt_min_(lp, b >= pl ? 0 : afrt_cdiv_(pl - b, sw));
            const int64_t c0 = v0 * sw + b - pl;
            const int64_t nb = c0 >= W ? 0 : afrt_min_(lp - v0, afrt_cdiv_(W - c0, sw));
#if defined(__AVX512F__)
            if (sw <= 2) {
                const int64_t spill = (16 - nb % 16) % 16;
                afrt_dw_zero16_(pd, v0);
                for (int64_t u = 0; u < g->hph; ++u) {
                    float *d = pd + u * lp;
                    const int64_t ih = u * sh + a - pt;
                    if (ih < 0 || ih >= H || nb == 0) {
                        afrt_dw_zero16_(d + v0, lp); /* to the next row's first data column */
                        continue;
                    }
                    afrt_dw_gather16_(d + v0, xc + ih * W + c0, nb, sw);
                    /* the gather's last store zeroed `spill` floats after the data already */
                    if (spill < lp - nb + v0) afrt_dw_zero16_(d + v0 + nb + spill, lp - nb - spill);
                }
                continue;
            }
#endif
            for (int64_t u = 0; u < g->hph; ++u) {
                float *restrict d = pd + u * lp;
                const int64_t ih = u * sh + a - pt;
                for (int64_t v = 0; v < lp; ++v) d[v] = 0.0f;
                if (ih < 0 || ih >= H || nb == 0) continue;
                const float *restrict xr = xc + ih * W + c0;
                for (int64_t j = 0; j < nb; ++j) d[v0 + j] = xr[j * sw];
            }
        }
    }
#if defined(__AVX512F__)
    afrt_dw_zero16_(xp + g->filled, g->total - g->filled);
#else
    for (int64_t i = g->filled; i < g->total; ++i) xp[i] = 0.0f;
#endif
}

/* d[i] = s[i] + add for i in [0, n). */
static inline void afrt_dw_copy_(float *restrict d, const float *restrict s, int64_t n,
                                 float add) {
#if defined(__AVX512F__)
    const __m512 av = _mm512_set1_ps(add);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _mm512_add_ps(_mm512_loadu_ps(s + i), av));
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(d + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, s + i), av));
    }
#else
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] + add;
#endif
}

/* out[q] = sum_t wk[t] * xp[q + off[t]] for q in [0, nqv) (nqv a multiple of 64). */
static inline void afrt_dw_correlate_(const float *restrict xp, const afrt_dw_geom_ *g,
                                      const float *restrict wk, float *restrict out) {
    const int64_t taps = g->taps, nq = g->nq;
    const int64_t *off = g->off;
#if defined(__AVX512F__)
    int64_t q = 0;
    for (; q + 64 <= nq || (q < nq && nq - q > 32); q += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        for (int64_t t = 0; t < taps; ++t) {
            const __m512 wv = _mm512_set1_ps(wk[t]);
            const float *b = xp + off[t] + q;
            a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(b), a0);
            a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(b + 16), a1);
            a2 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(b + 32), a2);
            a3 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(b + 48), a3);
        }
        _mm512_storeu_ps(out + q, a0);
        _mm512_storeu_ps(out + q + 16, a1);
        _mm512_storeu_ps(out + q + 32, a2);
        _mm512_storeu_ps(out + q + 48, a3);
    }
    if (q < nq) { /* at most 32 positions left: two vectors, taps split over two chains */
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
        int64_t t = 0;
        for (; t + 1 < taps; t += 2) {
            const __m512 wa = _mm512_set1_ps(wk[t]), wb = _mm512_set1_ps(wk[t + 1]);
            const float *pa = xp + off[t] + q, *pb = xp + off[t + 1] + q;
            a0 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(pa), a0);
            a1 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(pa + 16), a1);
            b0 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(pb), b0);
            b1 = _mm512_fmadd_ps(wb, _mm512_loadu_ps(pb + 16), b1);
        }
        if (t < taps) {
            const __m512 wa = _mm512_set1_ps(wk[t]);
            const float *pa = xp + off[t] + q;
            a0 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(pa), a0);
            a1 = _mm512_fmadd_ps(wa, _mm512_loadu_ps(pa + 16), a1);
        }
        _mm512_storeu_ps(out + q, _mm512_add_ps(a0, b0));
        _mm512_storeu_ps(out + q + 16, _mm512_add_ps(a1, b1));
    }
#else
    for (int64_t q = 0; q < nq; q += 32) {
        float acc[32];
        for (int i = 0; i < 32; ++i) acc[i] = 0.0f;
        for (int64_t t = 0; t < taps; ++t) {
            const float wt = wk[t];
            const float *restrict b = xp + off[t] + q;
            for (int i = 0; i < 32; ++i) acc[i] += wt * b[i];
        }
        for (int i = 0; i < 32; ++i) out[q + i] = acc[i];
    }
#endif
}

/* y row-major [OH, OW] = wide [OH, lp] (first OW columns) + bias. */
static inline void afrt_dw_compact_(const float *restrict wide, const afrt_conv_params *p,
                                    int64_t lp, float bv, float *restrict yk) {
    for (int64_t oh = 0; oh < p->OH; ++oh) afrt_dw_copy_(yk + oh * p->OW, wide + oh * lp, p->OW, bv);
}

/* Channels per task: an output block of about AFRT_DW_BLOCK_FLOATS, and enough tasks to give
 * every thread several. */
static inline int64_t afrt_dw_channel_block_(const afrt_conv_params *p, int nth) {
    const int64_t ohw = p->OH * p->OW;
    int64_t cb = afrt_max_(1, afrt_min_(p->K, AFRT_DW_BLOCK_FLOATS / afrt_max_(1, ohw)));
    if (nth > 1) {
        const int64_t want = 4 * (int64_t)nth;
        while (cb > 1 && p->N * afrt_cdiv_(p->K, cb) < want) cb = afrt_cdiv_(cb, 2);
    }
    return cb;
}

/* ---------------------------------------------------------------------------------------------
 * Channels in vector lanes (afrt_dwl_*): the depthwise path for K == C (no channel multiplier),
 * dilation 1 -- MobileNet's and EfficientNet's depthwise layers. Per task (image, block of
 * AFRT_DWL_L = 16 channels, band of output rows) the block's input rows the band reads are
 * transposed (16 x 16 in registers with AVX-512, 16 channels x 16 consecutive positions of
 * the flattened plane at a time) into a zero-padded channels-last tile T[rows][wt][16]; every
 * output position is then R*S FMAs of whole vectors (bias first, the 16 channels' tap weights
 * in registers for 3x3 and 5x5), with the built-in clamp epilogue (afrt_epi_clamp without a
 * residual: Relu, Relu6) applied in registers, into an output tile O[positions][16], which is
 * transposed back into the block's NCHW rows. Any other epilogue runs on the finished rows
 * (channels of the block x the band's positions). Small maps (7x7, 4x4) fill every lane: the
 * per-channel work of the phase planes (fill, 64-wide correlation steps mostly past the
 * plane's end, compaction) is what made them slow (7-10 GFLOP/s at 4x4).
 * AVX2 + FMA: the same tiles, each 16-lane vector as two 8-lane halves (8 x 8 transposes,
 * 4 outputs x 2 halves in registers). Elsewhere plain loops over the 16 lanes.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_DWL_L 16
/* Full unrolling of the constant-bound register loops (GCC's pragma; others unroll them
 * unprompted or not at all, never wrongly). */
#if defined(__GNUC__) && !defined(__clang__)
#define AFRT_DWL_UNROLL_(n) _Pragma(#n)
#else
#define AFRT_DWL_UNROLL_(n)
#endif
/* Output positions a band aims at (at least 2 rows): O 8 KiB, T ~15 KiB at 56 columns, both
 * in L1. Measured (benchmarks/dw_lanes.py) against 256, 512, 1024: 20-25% faster on 56x56
 * and 28x28 maps, the same on 112x112 ones. */
#ifndef AFRT_DWL_BAND_POS
#define AFRT_DWL_BAND_POS 128
#endif

/* Whether the lanes path takes this conv: a depthwise conv afrt_dwconv2d_f32 takes, without
 * channel multiplier, dilation 1 (clib.dw_lanes_applies mirrors it). */
static inline int afrt_dwl_applies(const afrt_conv_params *p) {
    return afrt_dwconv_applies(p) && p->K == p->C && p->dil_h == 1 && p->dil_w == 1;
}

typedef struct {
    int64_t wt;        /* tile columns: what the taps read ((OW - 1) * sw + S), at least pad + W */
    int64_t pitch;     /* floats per tile row: wt * 16 */
    int64_t band;      /* output rows per band */
    int64_t tile_rows; /* tile rows of a full band: (band - 1) * sh + R */
    int64_t floats;    /* scratch floats per thread: T, O, weights, bias */
} afrt_dwl_geom_;

/* Output rows per band: about AFRT_DWL_BAND_POS positions (at least 2 rows), and (nth > 1)
 * enough tasks to give every thread several. */
static inline int64_t afrt_dwl_band_(const afrt_conv_params *p, int nth) {
    int64_t band = afrt_min_(p->OH, afrt_max_(2, AFRT_DWL_BAND_POS / afrt_max_(1, p->OW)));
    const int64_t nblk = afrt_cdiv_(p->K, AFRT_DWL_L);
    while (nth > 1 && band > 1 && p->N * nblk * afrt_cdiv_(p->OH, band) < 4 * (int64_t)nth)
        band = afrt_cdiv_(band, 2);
    return band;
}

/* The tiles of bands of at most `band` output rows. */
static inline afrt_dwl_geom_ afrt_dwl_geom_init_(const afrt_conv_params *p, int64_t band) {
    afrt_dwl_geom_ g;
    g.wt = afrt_max_((p->OW - 1) * p->stride_w + p->S, p->pad_left + p->W);
    g.pitch = g.wt * AFRT_DWL_L;
    g.band = band;
    g.tile_rows = (g.band - 1) * p->stride_h + p->R;
    g.floats = g.tile_rows * g.pitch + AFRT_DWL_L * (g.band * p->OW + p->R * p->S + 1);
    return g;
}

#if defined(__AVX512F__)
/* r[i] (row i, 16 floats) := column i of the 16 x 16 matrix whose rows are r[0..15]. */
static inline void afrt_dwl_transpose16_(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j) {
            t[8 * h + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0x88);
            t[8 * h + 4 + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0xDD);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
    }
}
#endif

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
/* r[i] (row i, 8 floats) := column i of the 8 x 8 matrix whose rows are r[0..7]. */
static inline void afrt_dwl_transpose8_(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
        r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

/* Lanes [0, m) of an AVX2 mask (m in [0, 8]). */
static inline __m256i afrt_dwl_mask8_(int64_t m) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

/* The tile T[rows][wt][16] of channels [k0, k0 + nc) of image plane block xb (channel c at
 * xb + c * H*W) for tile rows [0, rows) = padded input rows from r0 (input row r0 - pad_top):
 * zero outside the input. Input column iw is tile column pad_left + iw. */
static inline void afrt_dwl_fill_(const float *restrict xb, int64_t nc, const afrt_conv_params *p,
                                  const afrt_dwl_geom_ *g, int64_t r0, int64_t rows,
                                  float *restrict t) {
    const int64_t H = p->H, W = p->W, hw = H * W, pl = p->pad_left, wt = g->wt, L = AFRT_DWL_L;
    const int64_t ih0 = afrt_max_(0, r0 - p->pad_top), ih1 = afrt_min_(H, r0 + rows - p->pad_top);
    for (int64_t u = 0; u < rows; ++u) { /* zero: rows outside the input, pad columns */
        float *tr = t + u * g->pitch;
        const int64_t ih = r0 + u - p->pad_top;
        const int in = ih >= ih0 && ih < ih1;
        for (int64_t v = 0; v < wt; ++v) {
            if (in && v == pl) v += W;
            if (v >= wt) break;
#if defined(__AVX512F__)
            _mm512_storeu_ps(tr + v * L, _mm512_setzero_ps());
#else
            for (int64_t l = 0; l < L; ++l) tr[v * L + l] = 0.0f;
#endif
        }
    }
    if (ih0 >= ih1) return;
    const int64_t q0 = ih0 * W, q1 = ih1 * W, skip = (wt - W) * L;
    float *d = t + ((ih0 - (r0 - p->pad_top)) * wt + pl) * L;
#if defined(__AVX512F__)
    int64_t iw = 0;
    for (int64_t q = q0; q < q1; q += 16) {
        const int64_t m = afrt_min_(16, q1 - q);
        const __mmask16 k = (__mmask16)((1u << m) - 1u);
        __m512 r[16];
        for (int64_t c = 0; c < 16; ++c)
            r[c] = c < nc ? _mm512_maskz_loadu_ps(k, xb + c * hw + q) : _mm512_setzero_ps();
        afrt_dwl_transpose16_(r);
        for (int64_t j = 0; j < m; ++j) {
            _mm512_storeu_ps(d, r[j]);
            d += L;
            if (++iw == W) iw = 0, d += skip;
        }
    }
#elif defined(__AVX2__) && defined(__FMA__)
    int64_t iw = 0; /* 8 positions x 8 channels per transpose, two per 16-lane vector */
    for (int64_t q = q0; q < q1; q += 8) {
        const int64_t m = afrt_min_(8, q1 - q);
        const __m256i k = afrt_dwl_mask8_(m);
        float *dq = d;
        for (int64_t h = 0; h < 2; ++h) {
            __m256 r[8];
            for (int64_t c = 0; c < 8; ++c)
                r[c] = h * 8 + c < nc ? _mm256_maskload_ps(xb + (h * 8 + c) * hw + q, k)
                                      : _mm256_setzero_ps();
            afrt_dwl_transpose8_(r);
            int64_t jw = iw;
            d = dq;
            for (int64_t j = 0; j < m; ++j) {
                _mm256_storeu_ps(d + h * 8, r[j]);
                d += L;
                if (++jw == W) jw = 0, d += skip;
            }
            if (h == 1) iw = jw;
        }
    }
#else
    for (int64_t q = q0; q < q1; ++q) {
        for (int64_t c = 0; c < L; ++c) d[c] = c < nc ? xb[c * hw + q] : 0.0f;
        d += L;
        if ((q + 1) % W == 0) d += skip;
    }
#endif
}

/* Zeroes the padding of one tile row (tr, g->wt lanes-wide columns) for input row ih: the
 * whole row if ih is outside the image (returns 0), else the pad_left columns before and the
 * columns past the image's W (returns 1; the caller fills the W columns from pad_left). */
static inline int afrt_dwl_pad_row_(float *restrict tr, int64_t ih, const afrt_conv_params *p,
                                    const afrt_dwl_geom_ *g) {
    const int64_t W = p->W, pl = p->pad_left, wt = g->wt, L = AFRT_DWL_L;
    if (ih < 0 || ih >= p->H) {
        memset(tr, 0, (size_t)(wt * L) * sizeof(float));
        return 0;
    }
    if (pl > 0) memset(tr, 0, (size_t)(pl * L) * sizeof(float));
    if (wt > pl + W) memset(tr + (pl + W) * L, 0, (size_t)((wt - pl - W) * L) * sizeof(float));
    return 1;
}

/* afrt_dwl_fill_ from a 16-channel block already in lanes (NCHW16c: xbl = [H][W][16] of the
 * block, lanes past the channel count zero): the same tile, each input row one contiguous
 * copy instead of 16-way transposes (the conv chain reading gemm_1x1_b's output). */
static inline void afrt_dwl_fill_blocked_(const float *restrict xbl, const afrt_conv_params *p,
                                          const afrt_dwl_geom_ *g, int64_t r0, int64_t rows,
                                          float *restrict t) {
    const int64_t W = p->W, L = AFRT_DWL_L;
    for (int64_t u = 0; u < rows; ++u) {
        float *tr = t + u * g->pitch;
        const int64_t ih = r0 + u - p->pad_top;
        if (afrt_dwl_pad_row_(tr, ih, p, g))
            memcpy(tr + p->pad_left * L, xbl + ih * W * L, (size_t)(W * L) * sizeof(float));
    }
}

#if defined(__AVX512F__)
/* Outputs ow .. ow + NB - 1 of one row (src: the tile at the row's first tap row, column
 * ow * SW; pitch: floats per tile row) into dst[NB][16]. NB, R, S, SW constant: every loop
 * unrolls, the weights w[R*S] stay in registers and each input vector loaded serves every
 * tap that reads it (NB + 2 loads per tap row for 3x3 stride 1 instead of 3 NB). */
static inline __attribute__((always_inline)) void afrt_dwl_block_(
    const float *restrict src, int64_t pitch, const __m512 *w, __m512 b, int clamp, __m512 lov,
    __m512 hiv, float *restrict dst, const int NB, const int R, const int S, const int SW) {
    __m512 a[8];
    AFRT_DWL_UNROLL_(GCC unroll 8)
    for (int j = 0; j < NB; ++j) a[j] = b;
    AFRT_DWL_UNROLL_(GCC unroll 8)
    for (int r = 0; r < R; ++r) {
        const float *row = src + r * pitch;
        AFRT_DWL_UNROLL_(GCC unroll 32)
        for (int c = 0; c < (NB - 1) * SW + S; ++c) {
            const __m512 v = _mm512_loadu_ps(row + c * AFRT_DWL_L);
            AFRT_DWL_UNROLL_(GCC unroll 8)
            for (int s = 0; s < S; ++s) {
                const int d = c - s;
                if (d >= 0 && d % SW == 0 && d / SW < NB)
                    a[d / SW] = _mm512_fmadd_ps(w[r * S + s], v, a[d / SW]);
            }
        }
    }
    AFRT_DWL_UNROLL_(GCC unroll 8)
    for (int j = 0; j < NB; ++j) {
        __m512 v = a[j];
        if (clamp) {
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lov, _CMP_NLE_UQ), lov, v);
            v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hiv, _CMP_NGE_UQ), hiv, v);
        }
        _mm512_storeu_ps(dst + j * AFRT_DWL_L, v);
    }
}

/* The rows of afrt_dwl_rows_ for constant R, S, SW: blocks of 8 outputs, the rest by 4, 2, 1. */
static inline __attribute__((always_inline)) void afrt_dwl_rows_k_(
    const float *restrict t, int64_t pitch, int64_t sh, int64_t OW, int64_t nrow,
    const float *restrict wv, const float *restrict bv, int clamp, float lo, float hi,
    float *restrict o, const int R, const int S, const int SW) {
    __m512 w[25];
    AFRT_DWL_UNROLL_(GCC unroll 25)
    for (int i = 0; i < R * S; ++i) w[i] = _mm512_loadu_ps(wv + i * AFRT_DWL_L);
    const __m512 b = _mm512_loadu_ps(bv), lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
    for (int64_t oh = 0; oh < nrow; ++oh) {
        const float *tr = t + oh * sh * pitch;
        float *d = o + oh * OW * AFRT_DWL_L;
        int64_t ow = 0;
        for (; ow + 8 <= OW; ow += 8)
            afrt_dwl_block_(tr + ow * SW * AFRT_DWL_L, pitch, w, b, clamp, lov, hiv,
                            d + ow * AFRT_DWL_L, 8, R, S, SW);
        if (ow + 4 <= OW) {
            afrt_dwl_block_(tr + ow * SW * AFRT_DWL_L, pitch, w, b, clamp, lov, hiv,
                            d + ow * AFRT_DWL_L, 4, R, S, SW);
            ow += 4;
        }
        if (ow + 2 <= OW) {
            afrt_dwl_block_(tr + ow * SW * AFRT_DWL_L, pitch, w, b, clamp, lov, hiv,
                            d + ow * AFRT_DWL_L, 2, R, S, SW);
            ow += 2;
        }
        if (ow < OW)
            afrt_dwl_block_(tr + ow * SW * AFRT_DWL_L, pitch, w, b, clamp, lov, hiv,
                            d + ow * AFRT_DWL_L, 1, R, S, SW);
    }
}
#endif

/* O[j][16] for output rows [0, nrow) of the band (tile T from the band's first padded row,
 * g->pitch floats a row): bias + sum over taps of wv[t] * T[oh * sh + r][ow * sw + s],
 * clamped to [lo, hi] when clamp. AVX-512: 3x3 and 5x5 at strides 1 and 2 through
 * afrt_dwl_rows_k_ (constants), other kernels one position at a time. */
static inline void afrt_dwl_rows_(const float *restrict t, const afrt_conv_params *p,
                                  const afrt_dwl_geom_ *g, int64_t nrow, const float *restrict wv,
                                  const float *restrict bv, int clamp, float lo, float hi,
                                  float *restrict o) {
    const int64_t OW = p->OW, sh = p->stride_h, sw = p->stride_w, pitch = g->pitch;
    const int64_t R = p->R, S = p->S, L = AFRT_DWL_L;
#if defined(__AVX512F__)
    const int k33 = R == 3 && S == 3, k55 = R == 5 && S == 5;
    if ((k33 || k55) && (sw == 1 || sw == 2)) {
        if (k33 && sw == 1)
            afrt_dwl_rows_k_(t, pitch, sh, OW, nrow, wv, bv, clamp, lo, hi, o, 3, 3, 1);
        else if (k33)
            afrt_dwl_rows_k_(t, pitch, sh, OW, nrow, wv, bv, clamp, lo, hi, o, 3, 3, 2);
        else if (sw == 1)
            afrt_dwl_rows_k_(t, pitch, sh, OW, nrow, wv, bv, clamp, lo, hi, o, 5, 5, 1);
        else
            afrt_dwl_rows_k_(t, pitch, sh, OW, nrow, wv, bv, clamp, lo, hi, o, 5, 5, 2);
        return;
    }
    const __m512 lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
    for (int64_t oh = 0; oh < nrow; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
            __m512 a = _mm512_loadu_ps(bv);
            for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s)
                    a = _mm512_fmadd_ps(_mm512_loadu_ps(wv + (r * S + s) * L),
                                        _mm512_loadu_ps(t + (oh * sh + r) * pitch + (ow * sw + s) * L), a);
            if (clamp) {
                a = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, lov, _CMP_NLE_UQ), lov, a);
                a = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, hiv, _CMP_NGE_UQ), hiv, a);
            }
            _mm512_storeu_ps(o + (oh * OW + ow) * L, a);
        }
#elif defined(__AVX2__) && defined(__FMA__)
    /* blocks of 4 outputs x 2 halves in 8 accumulators, the tap's two weight vectors shared */
    const __m256 lov = _mm256_set1_ps(lo), hiv = _mm256_set1_ps(hi);
    for (int64_t oh = 0; oh < nrow; ++oh)
        for (int64_t ow = 0; ow < OW; ow += 4) {
            const int64_t nb = afrt_min_(4, OW - ow);
            __m256 a[4][2];
            for (int j = 0; j < 4; ++j) a[j][0] = _mm256_loadu_ps(bv), a[j][1] = _mm256_loadu_ps(bv + 8);
            for (int64_t r = 0; r < R; ++r)
                for (int64_t sx = 0; sx < S; ++sx) {
                    const __m256 w0 = _mm256_loadu_ps(wv + (r * S + sx) * L);
                    const __m256 w1 = _mm256_loadu_ps(wv + (r * S + sx) * L + 8);
                    const float *src = t + (oh * sh + r) * pitch + (ow * sw + sx) * L;
                    for (int j = 0; j < nb; ++j) {
                        a[j][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(src + j * sw * L), a[j][0]);
                        a[j][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(src + j * sw * L + 8), a[j][1]);
                    }
                }
            for (int j = 0; j < nb; ++j)
                for (int h = 0; h < 2; ++h) {
                    __m256 v = a[j][h];
                    if (clamp) { /* NaN kept: an unordered compare keeps v */
                        v = _mm256_blendv_ps(lov, v, _mm256_cmp_ps(v, lov, _CMP_NLE_UQ));
                        v = _mm256_blendv_ps(hiv, v, _mm256_cmp_ps(v, hiv, _CMP_NGE_UQ));
                    }
                    _mm256_storeu_ps(o + (oh * OW + ow + j) * L + h * 8, v);
                }
        }
#else
    for (int64_t oh = 0; oh < nrow; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
            float a[AFRT_DWL_L];
            for (int64_t l = 0; l < L; ++l) a[l] = bv[l];
            for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s) {
                    const float *restrict src = t + (oh * sh + r) * pitch + (ow * sw + s) * L;
                    const float *restrict wt = wv + (r * S + s) * L;
                    for (int64_t l = 0; l < L; ++l) a[l] += wt[l] * src[l];
                }
            float *restrict d = o + (oh * OW + ow) * L;
            for (int64_t l = 0; l < L; ++l) d[l] = clamp ? afrt_epi_clamp1_(a[l], lo, hi) : a[l];
        }
#endif
}

/* O[n][16] (n positions) into rows of yb (channel c at yb + c * ld) for channels < nc. */
static inline void afrt_dwl_unpack_(const float *restrict o, int64_t n, int64_t nc,
                                    float *restrict yb, int64_t ld) {
#if defined(__AVX512F__)
    for (int64_t q = 0; q < n; q += 16) {
        const int64_t m = afrt_min_(16, n - q);
        const __mmask16 k = (__mmask16)((1u << m) - 1u);
        __m512 r[16];
        for (int64_t j = 0; j < 16; ++j)
            r[j] = j < m ? _mm512_loadu_ps(o + (q + j) * AFRT_DWL_L) : _mm512_setzero_ps();
        afrt_dwl_transpose16_(r);
        for (int64_t c = 0; c < nc; ++c) _mm512_mask_storeu_ps(yb + c * ld + q, k, r[c]);
    }
#elif defined(__AVX2__) && defined(__FMA__)
    for (int64_t q = 0; q < n; q += 8) {
        const int64_t m = afrt_min_(8, n - q);
        const __m256i k = afrt_dwl_mask8_(m);
        for (int64_t h = 0; h * 8 < nc; ++h) {
            __m256 r[8];
            for (int64_t j = 0; j < 8; ++j)
                r[j] = j < m ? _mm256_loadu_ps(o + (q + j) * AFRT_DWL_L + h * 8) : _mm256_setzero_ps();
            afrt_dwl_transpose8_(r);
            for (int64_t c = 0; c < 8 && h * 8 + c < nc; ++c)
                _mm256_maskstore_ps(yb + (h * 8 + c) * ld + q, k, r[c]);
        }
    }
#else
    for (int64_t c = 0; c < nc; ++c)
        for (int64_t q = 0; q < n; ++q) yb[c * ld + q] = o[q * AFRT_DWL_L + c];
#endif
}

/* One task: image n, channels [k0, k0 + nc), output rows [oh0, oh1); scratch s of
 * g->floats floats. The output rows go to yb (channel k0's row oh0; channels ld floats
 * apart) finished: bias, then the clamp (in registers) when `clamp`. */
static inline void afrt_dwl_task_(const float *x, const float *w, const float *bias,
                                  const afrt_conv_params *p, const afrt_dwl_geom_ *g, int64_t n,
                                  int64_t k0, int64_t nc, int64_t oh0, int64_t oh1, int clamp,
                                  float lo, float hi, float *s, float *yb, int64_t ld) {
    const int64_t taps = p->R * p->S, L = AFRT_DWL_L, nrow = oh1 - oh0;
    const int64_t rows = (nrow - 1) * p->stride_h + p->R;
    float *t = s, *o = t + g->tile_rows * g->pitch, *wv = o + L * g->band * p->OW;
    float *bv = wv + L * taps;
    for (int64_t i = 0; i < taps; ++i)
        for (int64_t l = 0; l < L; ++l) wv[i * L + l] = l < nc ? w[(k0 + l) * taps + i] : 0.0f;
    for (int64_t l = 0; l < L; ++l) bv[l] = bias && l < nc ? bias[k0 + l] : 0.0f;
    afrt_dwl_fill_(x + (n * p->C + k0) * p->H * p->W, nc, p, g, oh0 * p->stride_h, rows, t);
    afrt_dwl_rows_(t, p, g, nrow, wv, bv, clamp, lo, hi, o);
    afrt_dwl_unpack_(o, nrow * p->OW, nc, yb, ld);
}

/* The lanes path of afrt_dwconv2d_f32 (afrt_dwl_applies). Returns 0 (nothing written) if
 * scratch memory cannot be had. */
static inline int afrt_dwl_f32_(const float *x, const float *w, const float *bias, float *y,
                                const afrt_conv_params *p, afrt_epilogue epi) {
    const int64_t ohw = p->OH * p->OW, nblk = afrt_cdiv_(p->K, AFRT_DWL_L);
    const int nth = afrt_num_threads_;
    const double work = AFRT_DW_WORK * (double)p->N * (double)p->K * (double)ohw *
                        (double)(p->R * p->S);
    const int par = nth > 1 && afrt_worth_threads_(work);
    const afrt_dwl_geom_ g = afrt_dwl_geom_init_(p, afrt_dwl_band_(p, par ? nth : 1));
    const int64_t nband = afrt_cdiv_(p->OH, g.band), tasks = p->N * nblk * nband;
    const afrt_epi_clamp *ce = afrt_epi_builtin_clamp_(epi);
    const int clamp = ce && !ce->res; /* a residual: the epilogue runs on the stored rows */
    const float lo = clamp ? ce->lo : 0.0f, hi = clamp ? ce->hi : 0.0f;
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t task = 0; task < tasks; ++task) {
        afrt_arrive_();
        float *s = (float *)afrt_thread_scratch(0, (size_t)g.floats * sizeof(float));
        if (!s) {
            afrt_flag_set_(&failed);
            continue;
        }
        const int64_t n = task / (nblk * nband), kb = (task / nband) % nblk, b = task % nband;
        const int64_t k0 = kb * AFRT_DWL_L, nc = afrt_min_(AFRT_DWL_L, p->K - k0);
        const int64_t oh0 = b * g.band, oh1 = afrt_min_(p->OH, oh0 + g.band);
        afrt_dwl_task_(x, w, bias, p, &g, n, k0, nc, oh0, oh1, clamp, lo, hi, s,
                       y + (n * p->K + k0) * ohw + oh0 * p->OW, ohw);
        if (epi.fn && !clamp)
            epi.fn(epi.ctx, y + n * p->K * ohw, n, k0, k0 + nc, oh0 * p->OW, oh1 * p->OW, ohw);
    }
    return !failed;
}

/* The phase-plane path of afrt_dwconv2d_f32 (any conv afrt_dwconv_applies takes). Returns 0
 * (nothing written) if scratch memory cannot be had. */
static inline int afrt_dw_phase_f32_(const float *x, const float *w, const float *bias,
                                      float *y, const afrt_conv_params *p, afrt_epilogue epi) {
    afrt_dw_geom_ g;
    afrt_dw_geom_init_(p, &g);
    const int64_t ohw = p->OH * p->OW, hw = p->H * p->W, kg = p->K / p->C;
    const int nth = afrt_num_threads_;
    const double work = AFRT_DW_WORK * (double)p->N * (double)p->K * (double)ohw * (double)g.taps;
    const int par = nth > 1 && afrt_worth_threads_(work);
    const int64_t cb = afrt_dw_channel_block_(p, par ? nth : 1);
    const int64_t nkb = afrt_cdiv_(p->K, cb), tasks = p->N * nkb;
    /* phase planes (+ 16 floats the fill's last whole-vector stores may reach), wide rows */
    const int64_t wide_at = g.total + 16;
    const size_t need = (size_t)(wide_at + g.nqv) * sizeof(float);
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        const int64_t n = t / nkb, k0 = (t % nkb) * cb, k1 = afrt_min_(p->K, k0 + cb);
        float *xp = (float *)afrt_thread_scratch(0, need);
        if (!xp) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *wide = xp + wide_at;
        float *yn = y + n * p->K * ohw;
        for (int64_t k = k0; k < k1; ++k) {
            /* a channel multiplier reuses the filled planes of its input channel */
            if (k == k0 || k % kg == 0) afrt_dw_fill_(x + (n * p->C + k / kg) * hw, p, &g, xp);
            afrt_dw_correlate_(xp, &g, w + k * g.taps, wide);
            afrt_dw_compact_(wide, p, g.lp, bias ? bias[k] : 0.0f, yn + k * ohw);
        }
        if (epi.fn) epi.fn(epi.ctx, yn, n, k0, k1, 0, ohw, ohw);
    }
    return !failed;
}

/* ---------------------------------------------------------------------------------------------
 * Direct convolution for few input channels (group 1, C <= AFRT_DC_MAX_C: a network's stem,
 * e.g. 3 -> 24 channels, 3x3 stride 2 at 224x224), where the GEMM's inner dimension C*R*S is
 * so short (27) that packing the im2col panels costs as much as the multiply-adds -- and,
 * group by group, a grouped conv of few channels per group (afrt_dconv_smallc_groups_, below
 * AFRT_DCG_MAX_C). The same phase planes as the depthwise kernel, one set per input channel
 * and image.
 *
 * AVX-512: planes of a pitch rounded up to whole vectors; per band of output rows, block of
 * 8 output channels and row, chunks of up to 48 positions (3 vectors, the last one masked)
 * accumulate in 24 registers (AFRT_DC_KB). The bias and the built-in clamp epilogue (with its
 * residual) are applied to the registers and the chunk is stored once, straight into y: the
 * stem's output (3 MB for 64 x 111 x 111) is written while the FMAs run instead of in a copy
 * pass and a clamp pass after them (docs/runtime.md: 3->64 3x3/2 at 224x224 with Relu
 * 490 -> 350 us, 86 -> 120 GFLOP/s).
 * Elsewhere: blocks of 4 channels x 16 wide positions into a per-band buffer, then a copy
 * into y with the bias. Any other epilogue runs on each finished band of output rows (all K
 * channels x the band's positions, in L2).
 * ------------------------------------------------------------------------------------------- */
#ifndef AFRT_DC_MAX_C
#define AFRT_DC_MAX_C 4
#endif
/* A grouped conv (group > 1, not depthwise) takes the same kernel group by group when each
 * group has 2 to AFRT_DCG_MAX_C input channels and its output rows are strided or at least
 * AFRT_DCG_MIN_OW wide: im2col_gemm multiplies such a group as a GEMM of Kg (8 in RegNet)
 * rows and Cg x taps (72) columns, whose 12-row tiles run a third empty and whose im2col
 * packing costs as much as its multiply-adds. RegNet-Y-400MF's 3x3 group-8 convs (one
 * thread, benchmarks/kernel_ab.py, minima): stride 2 at 56x56, 28x28, 14x14, 7x7 out 0.25-0.49
 * of im2col_gemm; stride 1 at 14x14 0.84; at 7x7 0.88-1.16 (a 7-wide row fills 7 of 16
 * lanes), hence the width rule (docs/runtime.md, "Grouped convolutions"). */
#ifndef AFRT_DCG_MAX_C
#define AFRT_DCG_MAX_C 16
#endif
#ifndef AFRT_DCG_MIN_OW
#define AFRT_DCG_MIN_OW 12
#endif
/* Floats of one band's output block (K channels x band positions): L2-resident. */
#ifndef AFRT_DC_BAND_FLOATS
#define AFRT_DC_BAND_FLOATS 32768
#endif

/* Whether afrt_dconv_smallc_f32 takes this conv (the lowering's `direct_smallc` choice). */
static inline int afrt_dconv_smallc_applies(const afrt_conv_params *p) {
    if (!(p->C >= 1 && p->R * p->S > 1 && p->R * p->S <= AFRT_DW_MAX_TAPS && p->stride_h >= 1 &&
          p->stride_w >= 1 && p->dil_h >= 1 && p->dil_w >= 1 && p->pad_top >= 0 &&
          p->pad_left >= 0))
        return 0;
    const int64_t G = p->group;
    if (G <= 1) return p->C <= AFRT_DC_MAX_C;
    return p->C % G == 0 && p->K % G == 0 && p->C / G >= 2 && p->C / G <= AFRT_DCG_MAX_C &&
           (p->stride_w > 1 || p->OW >= AFRT_DCG_MIN_OW);
}

/* Tap offsets (input channel c's plane + tap t's shift) of the chunk kernel, at most this many */
#define AFRT_DC_MAX_NT_ \
    ((AFRT_DC_MAX_C > AFRT_DCG_MAX_C ? AFRT_DC_MAX_C : AFRT_DCG_MAX_C) * AFRT_DW_MAX_TAPS)

#if defined(__AVX512F__)
#define AFRT_DC_VEC_ 1
#define AFRT_DC_VL 16
#define AFRT_DC_CHUNK_ afrt_dc_chunk512_
/* Output channels per register block (AVX-512): 8 channels x 3 vectors of a row in 24
 * registers, each tap's 3 input vectors serving 8 channels (24 FMAs per 3 loads and 8
 * broadcasts; 4 x 4 measured 3-8% slower, docs/runtime.md). */
#define AFRT_DC_KB 8

/* One chunk: kn <= 8 channels x NV vectors of one output row (positions at xq in the phase
 * planes; tap i of the nt = C * taps reads xq + off[i]; wb: the block's weights [i][8]),
 * finished and stored: v = acc + bias (0 without), then with cl + residual (z: at the
 * chunk, channels zld apart; NULL: none) and the clamp -- the operations and order of the
 * copy with the bias plus afrt_epi_clamp_fn, so the bits are those of the unfused path. y0:
 * channel 0 of the chunk, channels ohw apart; the last vector stores its first `tail` lanes. */
static inline __attribute__((always_inline)) void afrt_dc_chunk512_(
    const int NV, const float *restrict xq, const int64_t *off, int64_t nt,
    const float *restrict wb, const float *bias, int kn, float *y0, int64_t ohw, int tail,
    const afrt_epi_clamp *cl, const float *z, int64_t zld) {
    const __mmask16 tm = (__mmask16)(0xFFFFu >> (16 - tail));
    __m512 a[AFRT_DC_KB][3];
    for (int kk = 0; kk < AFRT_DC_KB; ++kk)
        for (int v = 0; v < NV; ++v) a[kk][v] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nt; ++i) {
        const float *b = xq + off[i];
        __m512 xv[3];
        for (int v = 0; v < NV; ++v) xv[v] = _mm512_loadu_ps(b + 16 * v);
        for (int kk = 0; kk < AFRT_DC_KB; ++kk) {
            const __m512 wv = _mm512_set1_ps(wb[i * AFRT_DC_KB + kk]);
            for (int v = 0; v < NV; ++v) a[kk][v] = _mm512_fmadd_ps(wv, xv[v], a[kk][v]);
        }
    }
    const __m512 lo = _mm512_set1_ps(cl ? cl->lo : 0.0f), hi = _mm512_set1_ps(cl ? cl->hi : 0.0f);
    for (int kk = 0; kk < kn; ++kk) {
        const __m512 bv = _mm512_set1_ps(bias ? bias[kk] : 0.0f);
        for (int v = 0; v < NV; ++v) {
            const __mmask16 m = v == NV - 1 ? tm : (__mmask16)0xFFFF;
            __m512 r = _mm512_add_ps(a[kk][v], bv);
            if (cl) {
                if (z) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, z + kk * zld + 16 * v));
                r = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(r, lo, _CMP_NLE_UQ), r);
                r = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(r, hi, _CMP_NGE_UQ), r);
            }
            _mm512_mask_storeu_ps(y0 + kk * ohw + 16 * v, m, r);
        }
    }
}

#elif defined(__AVX2__) && defined(__FMA__)
/* AVX2 + FMA (x86-64-v3): the AVX-512 design in 16 ymm registers -- 4 channels x 3 vectors of
 * 8 positions in 12 accumulators, each tap's 3 input vectors serving 4 channels (12 FMAs per
 * 3 loads and 4 broadcasts), finished in the registers and stored once into y. The portable
 * loop it replaces (afrt_dc_block4_ into a band buffer, then a copy with the bias and a clamp
 * pass) ran ResNet-50's 3 -> 64 7x7/2 stem at 224x224 in 43 ms where the AVX-512 kernel takes
 * 2.2 (GCC kept its 4 x 16 accumulators on the stack): two thirds of the whole model's time
 * in an x86-64-v3 build (benchmarks/fusion_efficiency.py --cpu x86-64-v3). */
#define AFRT_DC_KB 4
#define AFRT_DC_VEC_ 1
#define AFRT_DC_VL 8
#define AFRT_DC_CHUNK_ afrt_dc_chunk256_

/* Lanes [0, n) of a ymm as a maskload / maskstore mask. */
static inline __m256i afrt_dc_mask256_(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* afrt_dc_chunk512_ with 8-lane vectors: kn <= 4 channels x NV vectors of one output row, the
 * last vector's first `tail` lanes stored; the same operations in the same order. */
static inline __attribute__((always_inline)) void afrt_dc_chunk256_(
    const int NV, const float *restrict xq, const int64_t *off, int64_t nt,
    const float *restrict wb, const float *bias, int kn, float *y0, int64_t ohw, int tail,
    const afrt_epi_clamp *cl, const float *z, int64_t zld) {
    __m256 a[AFRT_DC_KB][3];
    for (int kk = 0; kk < AFRT_DC_KB; ++kk)
        for (int v = 0; v < NV; ++v) a[kk][v] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nt; ++i) {
        const float *b = xq + off[i];
        __m256 xv[3];
        for (int v = 0; v < NV; ++v) xv[v] = _mm256_loadu_ps(b + 8 * v);
        for (int kk = 0; kk < AFRT_DC_KB; ++kk) {
            const __m256 wv = _mm256_broadcast_ss(wb + i * AFRT_DC_KB + kk);
            for (int v = 0; v < NV; ++v) a[kk][v] = _mm256_fmadd_ps(wv, xv[v], a[kk][v]);
        }
    }
    const __m256 lo = _mm256_set1_ps(cl ? cl->lo : 0.0f), hi = _mm256_set1_ps(cl ? cl->hi : 0.0f);
    const __m256i m = afrt_dc_mask256_(tail);
    for (int kk = 0; kk < kn; ++kk) {
        const __m256 bv = _mm256_set1_ps(bias ? bias[kk] : 0.0f);
        for (int v = 0; v < NV; ++v) {
            __m256 r = _mm256_add_ps(a[kk][v], bv);
            if (cl) {
                if (z) {
                    const float *zv = z + kk * zld + 8 * v;
                    r = _mm256_add_ps(r, v == NV - 1 ? _mm256_maskload_ps(zv, m)
                                                     : _mm256_loadu_ps(zv));
                }
                r = _mm256_blendv_ps(lo, r, _mm256_cmp_ps(r, lo, _CMP_NLE_UQ));
                r = _mm256_blendv_ps(hi, r, _mm256_cmp_ps(r, hi, _CMP_NGE_UQ));
            }
            float *yv = y0 + kk * ohw + 8 * v;
            if (v == NV - 1) _mm256_maskstore_ps(yv, m, r);
            else _mm256_storeu_ps(yv, r);
        }
    }
}

#else
/* Positions per accumulator row of afrt_dc_block4_: 4 x 8 floats are 8 SSE / NEON registers.
 * At 16 (16 registers of accumulators, all SSE has) GCC kept them on the stack, and
 * ResNet-50's 3 -> 64 7x7/2 stem took 40 ms in an x86-64-v2 build (2.2 with AVX-512). */
#ifndef AFRT_DC_QW
#define AFRT_DC_QW 8
#endif
/* wide[kk][q - q0] for 4 channels (weights wk4[kk][c][t]) over positions [q0, q1). */
static inline void afrt_dc_block4_(const float *restrict xp, int64_t cstride, int64_t C,
                                   const afrt_dw_geom_ *g, const float *restrict wk4,
                                   int64_t q0, int64_t q1, float *restrict wide, int64_t ldw) {
    const int64_t taps = g->taps;
    for (int64_t q = q0; q < q1; q += AFRT_DC_QW) {
        float acc[4][AFRT_DC_QW];
        for (int kk = 0; kk < 4; ++kk)
            for (int i = 0; i < AFRT_DC_QW; ++i) acc[kk][i] = 0.0f;
        for (int64_t c = 0; c < C; ++c)
            for (int64_t t = 0; t < taps; ++t) {
                const float *restrict b = xp + c * cstride + q + g->off[t];
                for (int kk = 0; kk < 4; ++kk) {
                    const float wt = wk4[(kk * C + c) * taps + t];
                    for (int i = 0; i < AFRT_DC_QW; ++i) acc[kk][i] += wt * b[i];
                }
            }
        for (int kk = 0; kk < 4; ++kk)
            for (int i = 0; i < AFRT_DC_QW; ++i) wide[kk * ldw + (q - q0) + i] = acc[kk][i];
    }
}
#endif

#if defined(AFRT_DC_VEC_)
/* Output row oh of channels [k0, k0 + kn) of one image (planes: its phase planes, off: the
 * chunk kernel's tap offsets; yn, zn: the image's output and residual or NULL), in chunks of
 * 3 vectors (48 positions with AVX-512, 24 with AVX2: AFRT_DC_CHUNK_, AFRT_DC_VL lanes). */
static inline void afrt_dc_row_(const float *restrict planes, const int64_t *off,
                                const afrt_conv_params *p, const afrt_dw_geom_ *g,
                                const float *restrict wb, const float *bias, int64_t k0, int kn,
                                int64_t oh, float *yn, const afrt_epi_clamp *cl,
                                const float *zn) {
    const int64_t OW = p->OW, ohw = p->OH * OW, nt = p->C * g->taps, cw = 3 * AFRT_DC_VL;
    const float *bk = bias ? bias + k0 : NULL;
    const int64_t zld = cl ? cl->res_ld : 0;
    for (int64_t ow = 0; ow < OW; ow += cw) {
        const int64_t nw = afrt_min_(cw, OW - ow), nv = afrt_cdiv_(nw, AFRT_DC_VL);
        const int tail = (int)(nw - AFRT_DC_VL * (nv - 1)); /* lanes of the last vector */
        const float *xq = planes + oh * g->lp + ow;
        float *y0 = yn + k0 * ohw + oh * OW + ow;
        const float *z = zn ? zn + k0 * zld + oh * OW + ow : NULL;
        /* the next row's lines of this chunk, for writing: a cold y (a model's) otherwise
         * stalls each store on its line (AVX-512, 3->64 3x3/2 at 224, y cold: 386-410 ->
         * 361-364 us) */
        if (oh + 1 < p->OH)
            for (int kk = 0; kk < kn; ++kk)
                for (int64_t l = 0; l < nw; l += 16) __builtin_prefetch(y0 + kk * ohw + OW + l, 1, 3);
        if (nv == 3)
            AFRT_DC_CHUNK_(3, xq, off, nt, wb, bk, kn, y0, ohw, tail, cl, z, zld);
        else if (nv == 2)
            AFRT_DC_CHUNK_(2, xq, off, nt, wb, bk, kn, y0, ohw, tail, cl, z, zld);
        else
            AFRT_DC_CHUNK_(1, xq, off, nt, wb, bk, kn, y0, ohw, tail, cl, z, zld);
    }
}
#endif

/* The phase-plane geometry of the small-C kernel for p. AVX-512 / AVX2: the planes' pitch
 * rounded up to whole vectors (the geometry of a conv whose output is wider by the
 * difference, over zero columns): every row starts on a 64-byte line, so the taps without a
 * column shift load whole lines (3->32 3x3/2 at 112x112, pitch 113 -> 128: 230 -> 211 us).
 * Pitches under 48 stay: a third or more of the planes would be zeros. */
static inline void afrt_dc_geom_(const afrt_conv_params *p, afrt_dw_geom_ *g) {
#if defined(AFRT_DC_VEC_)
    afrt_conv_params wide = *p;
    const int64_t lp = afrt_cdiv_((p->OW - 1) * p->stride_w + (p->S - 1) * p->dil_w + 1, p->stride_w);
    if (lp >= 48) wide.OW += afrt_cdiv_(lp, 16) * 16 - lp;
    afrt_dw_geom_init_(&wide, g);
#else
    afrt_dw_geom_init_(p, g);
#endif
}

/* Output channels per register block of the small-C kernel */
#if defined(AFRT_DC_VEC_)
#define AFRT_DC_KBLK_ AFRT_DC_KB
#else
#define AFRT_DC_KBLK_ 4
#endif

/* K x C x taps weights w into wk, K padded to K4 (a multiple of AFRT_DC_KBLK_) with zeros:
 * blocks of KBLK channels each [c][t][KBLK] (a tap's broadcasts side by side) for the
 * vector chunks; [k][c][t] as is for the portable blocks of 4. */
static inline void afrt_dc_pack_w_(const float *w, int64_t K, int64_t C, int64_t taps, int64_t K4,
                                   float *wk) {
#if defined(AFRT_DC_VEC_)
    const int64_t KB = AFRT_DC_KBLK_;
    for (int64_t k = 0; k < K4; ++k)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t t = 0; t < taps; ++t)
                wk[((k / KB * C + c) * taps + t) * KB + k % KB] = k < K ? w[(k * C + c) * taps + t] : 0.0f;
#else
    for (int64_t i = 0; i < K4 * C * taps; ++i) wk[i] = i < K * C * taps ? w[i] : 0.0f;
#endif
}

#if !defined(AFRT_DC_VEC_)
/* Portable loops: output rows [oh0, oh1) of K channels (weights wk, K padded to K4) into y
 * (channel 0 of them; channels ohw apart) with the bias (or none), through the band buffer
 * wide (K4 rows ldw apart): blocks of 4 channels, then a copy of each row. */
static inline void afrt_dc_band4_(const float *planes, int64_t cstride, int64_t C,
                                  const afrt_dw_geom_ *g, const float *wk, int64_t K, int64_t K4,
                                  const afrt_conv_params *p, int64_t oh0, int64_t oh1,
                                  float *wide, int64_t ldw, float *y, const float *bias) {
    const int64_t ohw = p->OH * p->OW, q0 = oh0 * g->lp, q1 = (oh1 - 1) * g->lp + p->OW;
    for (int64_t k = 0; k < K4; k += 4)
        afrt_dc_block4_(planes, cstride, C, g, wk + k * C * g->taps, q0, q1, wide + k * ldw, ldw);
    for (int64_t k = 0; k < K; ++k)
        for (int64_t oh = oh0; oh < oh1; ++oh)
            afrt_dw_copy_(y + k * ohw + oh * p->OW, wide + k * ldw + (oh - oh0) * g->lp, p->OW,
                          bias ? bias[k] : 0.0f);
}
#endif

/* The small-C kernel group by group (afrt_dconv_smallc_applies' grouped rule): each task is
 * one (image, group), on one thread -- its Cg planes filled into the thread's scratch, its
 * weights packed, then all its output rows, through the same row kernel with the group's
 * channels as a conv of its own (C = Cg, K = Kg) -- so two threads split a conv of 6 to 55
 * groups on a 7x7 map, where the group-1 kernel splits bands of rows. The epilogue as there:
 * the built-in clamp (+ residual) in the registers, any other on each finished group's rows
 * (whole rows, all positions). Returns 0 if scratch memory cannot be had. */
static inline int afrt_dconv_smallc_groups_(const float *x, const float *w, const float *bias,
                                            float *y, const afrt_conv_params *p,
                                            afrt_epilogue epi) {
    afrt_dw_geom_ g;
    afrt_dc_geom_(p, &g);
    const int64_t G = p->group, C = p->C, K = p->K, Cg = C / G, Kg = K / G, taps = g.taps;
    const int64_t KB = AFRT_DC_KBLK_, K4 = afrt_cdiv_(Kg, KB) * KB;
    const int64_t ohw = p->OH * p->OW, hw = p->H * p->W;
    const int64_t cstride = afrt_cdiv_(g.total + 64, 16) * 16;
#if defined(AFRT_DC_VEC_)
    afrt_conv_params q = *p; /* one group as a conv of its own (the row kernel's C and K) */
    q.C = Cg;
    q.K = Kg;
    q.group = 1;
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    int64_t off[AFRT_DC_MAX_NT_]; /* tap (c, t): input channel c's plane + t's */
    for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < taps; ++t) off[c * taps + t] = c * cstride + g.off[t];
#else
    const int64_t rows = afrt_max_(1, afrt_min_(p->OH, AFRT_DC_BAND_FLOATS / afrt_max_(1, K4 * g.lp)));
    const int64_t ldw = afrt_cdiv_(rows * g.lp, 64) * 64;
#endif
    const int64_t ntask = p->N * G;
    const double work = (double)p->N * (double)K * (double)ohw * (double)(Cg * taps);
    const int par = afrt_num_threads_ > 1 && ntask > 1 && afrt_worth_threads_(work);
    (void)par; /* unused without OpenMP */
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par))
    for (int64_t t = 0; t < ntask; ++t) {
        afrt_arrive_();
        const int64_t n = t / G, gi = t % G;
        float *planes = (float *)afrt_thread_scratch(0, (size_t)(Cg * cstride + K4 * Cg * taps) * sizeof(float));
        if (!planes) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *wk = planes + Cg * cstride;
        afrt_dc_pack_w_(w + gi * Kg * Cg * taps, Kg, Cg, taps, K4, wk);
        for (int64_t c = 0; c < Cg; ++c)
            afrt_dw_fill_(x + (n * C + gi * Cg + c) * hw, p, &g, planes + c * cstride);
        float *yn = y + n * K * ohw, *yg = yn + gi * Kg * ohw;
        const float *bg = bias ? bias + gi * Kg : NULL;
#if defined(AFRT_DC_VEC_)
        const float *zg = cl && cl->res ? cl->res + n * cl->res_stride + gi * Kg * cl->res_ld : NULL;
        for (int64_t k = 0; k < Kg; k += KB)
            for (int64_t oh = 0; oh < p->OH; ++oh)
                afrt_dc_row_(planes, off, &q, &g, wk + k * Cg * taps, bg, k,
                             (int)afrt_min_(KB, Kg - k), oh, yg, cl, zg);
        if (epi.fn && !cl) epi.fn(epi.ctx, yn, n, gi * Kg, (gi + 1) * Kg, 0, ohw, ohw);
#else
        float *wide = (float *)afrt_thread_scratch(1, (size_t)(K4 * ldw) * sizeof(float));
        if (!wide) {
            afrt_flag_set_(&failed);
            continue;
        }
        for (int64_t oh0 = 0; oh0 < p->OH; oh0 += rows) {
            const int64_t oh1 = afrt_min_(p->OH, oh0 + rows);
            afrt_dc_band4_(planes, cstride, Cg, &g, wk, Kg, K4, p, oh0, oh1, wide, ldw, yg, bg);
            if (epi.fn)
                epi.fn(epi.ctx, yn, n, gi * Kg, (gi + 1) * Kg, oh0 * p->OW, oh1 * p->OW, ohw);
        }
#endif
    }
    return !failed;
}

/* Direct small-C convolution (above). Returns 0 if the conv does not qualify
 * (afrt_dconv_smallc_applies; nothing written) or scratch memory cannot be had (nothing
 * written, except by the grouped path, which may have finished some groups: the caller's
 * fallback computes them all again; y is never the residual here, plan-buffers writes in
 * place only over GEMM-core convs and afrt_conv2d_f32 detaches it for every other path). */
static inline int afrt_dconv_smallc_f32(const float *x, const float *w, const float *bias,
                                        float *y, const afrt_conv_params *p, afrt_epilogue epi) {
    if (!afrt_dconv_smallc_applies(p)) return 0;
    if (p->N <= 0 || p->K <= 0 || p->OH <= 0 || p->OW <= 0) return 1;
    afrt_init_once_();
    if (p->group > 1) return afrt_dconv_smallc_groups_(x, w, bias, y, p, epi);
    afrt_dw_geom_ g;
    afrt_dc_geom_(p, &g);
    const int64_t KB = AFRT_DC_KBLK_;
    const int64_t C = p->C, K = p->K, K4 = afrt_cdiv_(K, KB) * KB, taps = g.taps;
    const int64_t ohw = p->OH * p->OW, hw = p->H * p->W;
    /* per input channel: its phase planes (+16 spill floats), 64-float aligned */
    /* + 64: a row's last vector may read past `total` (lanes that are dropped) */
    const int64_t cstride = afrt_cdiv_(g.total + 64, 16) * 16;
    /* bands of output rows; band positions rounded up to the 64-position step */
    const int64_t rows = afrt_max_(1, afrt_min_(p->OH, AFRT_DC_BAND_FLOATS / afrt_max_(1, K4 * g.lp)));
    const int64_t nband = afrt_cdiv_(p->OH, rows);
    float *planes = (float *)afrt_thread_scratch(0, (size_t)(C * cstride + K4 * C * taps) * sizeof(float));
    if (!planes) return 0;
    float *wk = planes + C * cstride; /* weights with K padded to KB (zeros) */
    afrt_dc_pack_w_(w, K, C, taps, K4, wk);
#if defined(AFRT_DC_VEC_)
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    int64_t off[AFRT_DC_MAX_NT_]; /* tap (c, t): input channel c's plane + t's */
    for (int64_t c = 0; c < C; ++c)
        for (int64_t t = 0; t < taps; ++t) off[c * taps + t] = c * cstride + g.off[t];
#else
    const int64_t ldw = afrt_cdiv_(rows * g.lp, 64) * 64;
#endif
    const double work = (double)p->N * (double)K * (double)ohw * (double)(C * taps);
    const int par = afrt_num_threads_ > 1 && nband > 1 && afrt_worth_threads_(work);
    (void)par; /* unused without OpenMP */
    int failed = 0;
    for (int64_t n = 0; n < p->N; ++n) {
        /* the phase planes, a channel a task (a stem's 3: 2 + 1 at two threads): filled on
         * the calling thread alone they took ~0.03 ms of MobileNet-V2's stem at two threads
         * (docs/runtime.md, "MobileNet-V2 at two threads (session 21)") */
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && C > 1))
        for (int64_t c = 0; c < C; ++c) {
            afrt_arrive_();
            afrt_dw_fill_(x + (n * C + c) * hw, p, &g, planes + c * cstride);
        }
        float *yn = y + n * K * ohw;
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par))
        for (int64_t b = 0; b < nband; ++b) {
            afrt_arrive_();
            const int64_t oh0 = b * rows, oh1 = afrt_min_(p->OH, oh0 + rows);
#if defined(AFRT_DC_VEC_)
            const float *zn = cl && cl->res ? cl->res + n * cl->res_stride : NULL;
            /* a channel block through the band's rows, then the next: 8 output streams at a
             * time (a row through all 8 channel blocks of SqueezeNet's stem, 64 streams,
             * was 3% faster with y in cache but 1.3x slower with y cold, as in a model) */
            for (int64_t k = 0; k < K; k += AFRT_DC_KB)
                for (int64_t oh = oh0; oh < oh1; ++oh)
                    afrt_dc_row_(planes, off, p, &g, wk + k * C * taps, bias, k,
                                 (int)afrt_min_(AFRT_DC_KB, K - k), oh, yn, cl, zn);
            if (epi.fn && !cl) epi.fn(epi.ctx, yn, n, 0, K, oh0 * p->OW, oh1 * p->OW, ohw);
#else
            float *wide = (float *)afrt_thread_scratch(1, (size_t)(K4 * ldw) * sizeof(float));
            if (!wide) {
                afrt_flag_set_(&failed);
                continue;
            }
            afrt_dc_band4_(planes, cstride, C, &g, wk, K, K4, p, oh0, oh1, wide, ldw, yn, bias);
            if (epi.fn) epi.fn(epi.ctx, yn, n, 0, K, oh0 * p->OW, oh1 * p->OW, ohw);
#endif
        }
    }
    return !failed;
}

/* Direct depthwise convolution (see the top of this file): channels in lanes where
 * afrt_dwl_applies, else phase planes. Returns 0 (nothing written) if the conv does not
 * qualify (afrt_dwconv_applies) or scratch memory cannot be had. */
static inline int afrt_dwconv2d_f32(const float *x, const float *w, const float *bias,
                                     float *y, const afrt_conv_params *p, afrt_epilogue epi) {
    if (!afrt_dwconv_applies(p)) return 0;
    if (p->N <= 0 || p->K <= 0 || p->OH <= 0 || p->OW <= 0) return 1;
    afrt_init_once_();
    return afrt_dwl_applies(p) ? afrt_dwl_f32_(x, w, bias, y, p, epi)
                               : afrt_dw_phase_f32_(x, w, bias, y, p, epi);
}

#endif /* AFRT_DWCONV_H */
