/*
 * afrt_nchwc.h -- direct 1x1 and 3x3 convolution in a blocked channel layout (NCHW16c) for
 * afrt.h (included by afrt.h, which defines afrt_conv_params, afrt_epilogue, the scratch
 * slots and the packed-operand cache used here; this file does not stand alone). Copied
 * beside afrt.h into every build and package folder.
 *
 *   afrt_nchwc_f32(x, w, bias, y, &p, epi)            x, y NCHW; blocked inside
 *   afrt_nchwc_ex_f32(x, w, bias, y, &p, epi, flags)  x and/or y already NCHW16c
 *   afrt_conv1x1d_f32(x, w, bias, y, &p, epi)         1x1, few output channels, NCHW (the
 *                                                     lowering's direct_1x1; end of file)
 *
 * NCHW16c (the `assign-layout` pass's "nchw16c", docs/c-backend.md): [N][ceil(C/16)][H][W][16],
 * channels past C zero. flags: AFRT_NC_IN_BLOCKED (x is NCHW16c: each padded row is one
 * contiguous copy instead of a 16-way gather), AFRT_NC_OUT_BLOCKED (y is NCHW16c: each tile
 * row is stored as whole vectors, and the epilogue runs in its flat form, below).
 *
 * Fits (afrt_nchwc_fits): group 1, 1x1 or 3x3, equal strides 1 or 2, dilation 1, pads in
 * [0, R). Any channel counts: blocks of 16 channels are padded with zeros.
 *
 * Method. The input image is reordered once per call into the caller's scratch slot 0 as
 * [C/16][Hp][Wp][16] with the padding written as zeros (and zeros out to whole tiles), so
 * the inner loop has no bounds tests. Weights are reordered to [K/32][C/16][R][S][16 c][32 k]
 * (zero past C and K); a constant w (inside a registered region) is reordered once and kept
 * in the packed-operand cache (side 3), any other w per call into scratch slot 1.
 * A register tile is 32 output channels x 14 output columns of one row (two rows of 7 on
 * maps of at most 7 columns): 28 accumulators; per input channel and tap, two weight
 * vectors are loaded and each column's input is broadcast from the blocked row (immediate
 * offsets: the row is contiguous). Tiles are whole or 13 or 7 wide (the blocked input is
 * zero-padded to whole tiles; outputs past the map are dropped), so only four tile shapes
 * are compiled.
 * The bias is the accumulators' start value; the tile goes to NCHW y through a small local
 * array (a masked gather and a masked store per channel and row); the epilogue
 * (afrt_epilogue, same contract as the GEMM path) runs on each finished row (or row pair)
 * of 32 channels while it is in L1, except the built-in clamp epilogue (afrt_epi_clamp_fn:
 * residual add, Relu / Clip), which is applied to each row between the gather and its only
 * store (the blocked output: in its copy). Weights are prefetched AFRT_NC_PF floats ahead.
 *
 * Tasks are (image, 32-channel block, output row or row pair), static over OpenMP threads;
 * a thread's consecutive rows reuse the same weights from L2.
 *
 * Where it wins (afrt_nchwc_applies, the lowering's `direct_nchwc` choice): measured against
 * im2col_gemm / gemm_1x1 on the same conv (benchmarks/nchwc_conv.py, docs/runtime.md).
 */
#ifndef AFRT_NCHWC_H
#define AFRT_NCHWC_H

#define AFRT_NC_L 16    /* channels per block (one AVX-512 vector) */
#define AFRT_NC_KT 32   /* output channels per register tile (two blocks) */
#define AFRT_NC_MAXW 14 /* output columns per register tile */
#define AFRT_NC_IN_BLOCKED 1  /* afrt_nchwc_ex_f32: x is NCHW16c */
#define AFRT_NC_OUT_BLOCKED 2 /* afrt_nchwc_ex_f32: y is NCHW16c */
/* Weights are prefetched this many floats ahead (4 KiB): the first row of a channel block
 * streams them from memory, where a model's earlier layers left them (measured with
 * benchmarks/nchwc_conv.py --cold: 256 floats gain half as much, none loses up to 10%). */
#ifndef AFRT_NC_PF
#define AFRT_NC_PF 1024
#endif

/* Whether afrt_nchwc_f32 can run this conv at all. */
static inline int afrt_nchwc_fits(const afrt_conv_params *p) {
    const int k3 = p->R == 3 && p->S == 3, k1 = p->R == 1 && p->S == 1;
    return p->group <= 1 && (k3 || k1) && p->stride_h == p->stride_w &&
           (p->stride_h == 1 || p->stride_h == 2) && p->dil_h == 1 && p->dil_w == 1 &&
           p->pad_top >= 0 && p->pad_left >= 0 && p->pad_top < p->R && p->pad_left < p->S &&
           p->C >= 1 && p->K >= 1 && p->OH >= 1 && p->OW >= 1;
}

/* Narrow stride-1 convs (fewer than AFRT_NC_NARROW_C input channels: one 16-channel block)
 * on maps of at least AFRT_NC_NARROW_HW positions stay on im2col_gemm: there one block of
 * 16 channels x 9 taps per register tile loses to the GEMM core by 2-17% cold (SqueezeNet's
 * 16 -> 64 at 55x55: 1.04-1.12; 16 -> 64 at 32x32 1.02-1.09, at 28x28 0.85), up to 1.4 with
 * K = 48 (a third of the 32-channel tile idle) (benchmarks/nchwc_conv.py, docs/runtime.md). */
#define AFRT_NC_NARROW_C 32
#define AFRT_NC_NARROW_HW 1024
/* Wide stride-1 convs (at least AFRT_NC_WIDE_K output channels) on maps of at least
 * AFRT_NC_WIDE_HW positions stay on im2col_gemm too: there the GEMM core's 12 x 32 tiles over
 * the positions beat the 32-channel x 14-column tiles by 3-10% cold on 13x13 and 14x14 maps
 * (SqueezeNet's 48 -> 192 and 64 -> 256, Inception's 96 -> 208 ... 160 -> 320, ResNet-50's
 * 256 -> 256) and by 26-32% on 10x10 and 12x12 maps (rows that fill a 14-wide tile badly),
 * while 128 output channels are even and 32 or 64 are faster blocked (0.85-0.94), and so
 * are 7x7 maps (0.86-0.90) and stride 2 (0.80) (benchmarks/nchwc_conv.py --cold, 2026-12-05,
 * docs/runtime.md). */
#define AFRT_NC_WIDE_K 192
#define AFRT_NC_WIDE_HW 100
/* And convs whose output rows fill the 14-column tiles badly (below AFRT_NC_FILL_PCT percent
 * of the columns the tiles compute, afrt_nc_row_cols_): Inception-v3's 8x8 maps (8 of 14
 * columns: 1.66-1.73x im2col_gemm's time), its 17x17 -> 8x8 and 35x35 -> 17x17 stride-2
 * reductions (1.26-1.42x), SqueezeNet-style 10x10 and 12x12 maps (1.26-1.32x); the maps
 * 7, 13, 14, 27, 28, 35, 55 and 56 wide fill them (benchmarks/nchwc_conv.py --cold,
 * 2026-12-06, docs/runtime.md). */
#define AFRT_NC_FILL_PCT 90

/* The tile width computing nw valid columns of a row: nw itself where a copy of
 * afrt_nc_tile512_ has it (14, 13, 7: the last tiles of 13-, 27- and 55-wide maps, 7 for
 * single rows of 7-wide maps), else 7 or 14 with the columns past nw computed on the zero
 * padding and dropped. */
static inline int afrt_nc_width_(int64_t nw) {
    return nw == 13 || nw == 7 ? (int)nw : nw < 7 ? 7 : AFRT_NC_MAXW;
}

/* Output columns per row that afrt_nchwc_ex_f32's tiles compute for a map OW wide: tiles of
 * 7 columns (two rows each) on maps at most 7 wide, else of 14 with the last one
 * afrt_nc_width_ wide. */
static inline int64_t afrt_nc_row_cols_(int64_t OW) {
    if (2 * OW <= AFRT_NC_MAXW) return AFRT_NC_MAXW / 2;
    const int64_t rest = OW % AFRT_NC_MAXW;
    return OW - rest + (rest ? afrt_nc_width_(rest) : 0);
}

/* Whether the lowering calls it (algo "direct_nchwc", clib.nchwc_applies, on AVX-512 builds
 * whose config leaves conv_layout "auto"): the measured rule (benchmarks/nchwc_conv.py,
 * docs/runtime.md): 3x3 convs that do not take Winograd, whose input channels fill the
 * 16-channel blocks and whose output channels fill a 32-channel register tile, except narrow
 * and wide stride-1 convs on large maps and maps whose rows fill the tiles badly (above).
 * 1x1 convs lose to gemm_1x1 while x and y are reordered per call (1.1-1.6x), so they stay
 * there. afrt_conv2d_f32 never takes this path itself (the lowering's choice is the
 * switch). */
static inline int afrt_nchwc_applies(const afrt_conv_params *p) {
    const int narrow_big = p->stride_h == 1 && p->C < AFRT_NC_NARROW_C &&
                           p->OH * p->OW >= AFRT_NC_NARROW_HW;
    const int wide_big = p->stride_h == 1 && p->K >= AFRT_NC_WIDE_K &&
                         p->OH * p->OW >= AFRT_NC_WIDE_HW;
    const int fills = 100 * p->OW >= AFRT_NC_FILL_PCT * afrt_nc_row_cols_(p->OW);
    return afrt_nchwc_fits(p) && p->R == 3 && p->C % AFRT_NC_L == 0 && p->K >= AFRT_NC_KT &&
           !narrow_big && !wide_big && fills && !afrt_winograd_applies(p);
}

/* w [K][C][R*S] reordered to [K/32][C/16][R*S][16][32] (zeros past K and C) into dst. */
static inline void afrt_nc_pack_weights_(const float *w, int64_t K, int64_t C, int64_t RS,
                                         float *dst) {
    const int64_t Cb = afrt_cdiv_(C, AFRT_NC_L), Kp = afrt_cdiv_(K, AFRT_NC_KT);
    for (int64_t kp = 0; kp < Kp; ++kp)
        for (int64_t cb = 0; cb < Cb; ++cb)
            for (int64_t t = 0; t < RS; ++t) {
                float *o = dst + ((kp * Cb + cb) * RS + t) * AFRT_NC_L * AFRT_NC_KT;
                for (int64_t c = 0; c < AFRT_NC_L; ++c)
                    for (int64_t k = 0; k < AFRT_NC_KT; ++k) {
                        const int64_t kk = kp * AFRT_NC_KT + k, cc = cb * AFRT_NC_L + c;
                        o[c * AFRT_NC_KT + k] = kk < K && cc < C ? w[(kk * C + cc) * RS + t] : 0.0f;
                    }
            }
}

/* A reorder of w [K][C][RS] into n floats (pack): the blocked kernels' weights. */
typedef void (*afrt_nc_pack_fn_)(const float *w, int64_t K, int64_t C, int64_t RS, float *dst);

/* w reordered by pack: cached when w is constant (packed-operand cache side `side`: 3
 * afrt_nchwc_f32's, 4 direct_1x1's, 5 direct_smallc_b's), else reordered now into scratch
 * slot 1 of the calling thread. NULL if memory is short. */
static inline const float *afrt_nc_cached_(const float *w, int64_t K, int64_t C, int64_t RS,
                                           int side, size_t n, afrt_nc_pack_fn_ pack) {
    const float *found = NULL;
    AFRT_OMP(critical(afrt_cache))
    {
        if (afrt_in_region_(w, (size_t)(K * C * RS) * sizeof(float))) {
            for (int e = 0; e < afrt_n_packed_ && !found; ++e) {
                const afrt_packed_entry_ *q = &afrt_packed_[e];
                if (q->src == w && q->rows == K && q->cols == C && q->ld == RS &&
                    q->side == side && q->lp == 0)
                    found = (const float *)q->packed;
            }
            if (!found && afrt_n_packed_ < AFRT_MAX_PACKED) {
                float *buf = (float *)afrt_alloc_pack_(n * sizeof(float));
                if (buf) {
                    pack(w, K, C, RS, buf);
                    afrt_packed_entry_ e = {w, K, C, RS, 0, side, 0, buf, NULL};
                    afrt_packed_[afrt_n_packed_++] = e;
                    found = buf;
                }
            }
        }
    }
    if (found) return found;
    float *buf = (float *)afrt_thread_scratch(1, n * sizeof(float));
    if (buf) pack(w, K, C, RS, buf);
    return buf;
}

/* afrt_nc_pack_weights_'s reorder of w (cached, side 3). */
static inline const float *afrt_nc_weights_(const float *w, int64_t K, int64_t C, int64_t RS) {
    const size_t n = (size_t)(afrt_round_up_(K, AFRT_NC_KT) * afrt_round_up_(C, AFRT_NC_L) * RS);
    return afrt_nc_cached_(w, K, C, RS, 3, n, afrt_nc_pack_weights_);
}

/* Row i of block cb of image xn, zero-padded, into xr ([Wp][16]). */
static inline void afrt_nc_reorder_row_(const float *restrict xn, const afrt_conv_params *p,
                                        int64_t cb, int64_t i, int64_t Wp, float *restrict xr) {
    const int64_t ih = i - p->pad_top, H = p->H, W = p->W;
    memset(xr, 0, (size_t)(Wp * AFRT_NC_L) * sizeof(float));
    if (ih < 0 || ih >= H) return;
    const int64_t j0 = p->pad_left, j1 = afrt_min_(Wp, p->pad_left + W);
    const int64_t cn = afrt_min_(AFRT_NC_L, p->C - cb * AFRT_NC_L);
    for (int64_t c = 0; c < cn; ++c) {
        const float *restrict src = xn + ((cb * AFRT_NC_L + c) * H + ih) * W - p->pad_left;
        for (int64_t j = j0; j < j1; ++j) xr[j * AFRT_NC_L + c] = src[j];
    }
}

/* The same row from a blocked image xn ([Cb][H][W][16]): one contiguous copy. */
static inline void afrt_nc_copy_row_(const float *restrict xn, const afrt_conv_params *p,
                                     int64_t cb, int64_t i, int64_t Wp, float *restrict xr) {
    const int64_t ih = i - p->pad_top, H = p->H, W = p->W;
    const int64_t j0 = p->pad_left, j1 = afrt_min_(Wp, p->pad_left + W);
    if (ih < 0 || ih >= H || j1 <= j0) {
        memset(xr, 0, (size_t)(Wp * AFRT_NC_L) * sizeof(float));
        return;
    }
    memset(xr, 0, (size_t)(j0 * AFRT_NC_L) * sizeof(float));
    memcpy(xr + j0 * AFRT_NC_L, xn + (cb * H + ih) * W * AFRT_NC_L,
           (size_t)((j1 - j0) * AFRT_NC_L) * sizeof(float));
    memset(xr + j1 * AFRT_NC_L, 0, (size_t)((Wp - j1) * AFRT_NC_L) * sizeof(float));
}

#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
/* One register tile: 32 channels x nw outputs, ncol columns of nw / ncol rows (rstep floats
 * apart in the blocked input), from xt (the tile's first output column, block 0, tap row 0)
 * and the kp block of weights wk, the bias bb[32] as the accumulators' start; into
 * t[2][14][16]. Always inlined into afrt_nc_tile_'s switch, so nw and ncol are constants in
 * every copy and the accumulators stay in registers. */
static inline __attribute__((always_inline)) void afrt_nc_tile512_(
    const float *restrict xt, const float *restrict wk, int64_t Cb, int64_t R, int64_t S,
    int64_t sx, int64_t rowf, int64_t rstep, int64_t planef, const float *bb, float *restrict t,
    const int nw, const int ncol) {
    __m512 a0[AFRT_NC_MAXW], a1[AFRT_NC_MAXW];
    for (int j = 0; j < nw; ++j) {
        a0[j] = _mm512_loadu_ps(bb);
        a1[j] = _mm512_loadu_ps(bb + AFRT_NC_L);
    }
    for (int64_t cb = 0; cb < Cb; ++cb)
        for (int64_t r = 0; r < R; ++r)
            for (int64_t s = 0; s < S; ++s) {
                const float *restrict xs = xt + cb * planef + r * rowf + s * AFRT_NC_L;
                const float *restrict ws = wk + ((cb * R + r) * S + s) * AFRT_NC_L * AFRT_NC_KT;
                for (int c = 0; c < AFRT_NC_L; ++c) {
                    const __m512 w0 = _mm512_loadu_ps(ws + c * AFRT_NC_KT);
                    const __m512 w1 = _mm512_loadu_ps(ws + c * AFRT_NC_KT + AFRT_NC_L);
                    _mm_prefetch((const char *)(ws + c * AFRT_NC_KT + AFRT_NC_PF), _MM_HINT_T0);
                    _mm_prefetch((const char *)(ws + c * AFRT_NC_KT + AFRT_NC_PF + 16), _MM_HINT_T0);
                    for (int j = 0; j < nw; ++j) {
                        const float *src = xs + (j / ncol) * rstep + (j % ncol) * sx;
                        const __m512 xv = _mm512_set1_ps(src[c]);
                        a0[j] = _mm512_fmadd_ps(w0, xv, a0[j]);
                        a1[j] = _mm512_fmadd_ps(w1, xv, a1[j]);
                    }
                }
            }
    for (int j = 0; j < nw; ++j) {
        _mm512_storeu_ps(t + j * AFRT_NC_L, a0[j]);
        _mm512_storeu_ps(t + (AFRT_NC_MAXW + j) * AFRT_NC_L, a1[j]);
    }
}
#endif

/* afrt_nc_tile512_ for nr (1 or 2) rows of ncol columns, nr * ncol <= AFRT_NC_MAXW (the
 * AVX-512 copies: 1 x 14 and 2 x 7); portable loops elsewhere. Output j of the tile is row j / ncol, column j % ncol. */
static inline void afrt_nc_tile_(const float *restrict xt, const float *restrict wk, int64_t Cb,
                                 int64_t R, int64_t S, int64_t sx, int64_t rowf, int64_t rstep,
                                 int64_t planef, const float *bb, float *restrict t, int nr,
                                 int ncol) {
    const int nw = nr * ncol;
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
#define AFRT_NC_CASE_(r, n)                                                                \
    case r * 16 + n:                                                                       \
        if (sx == AFRT_NC_L) /* stride 1: the columns' inputs at immediate offsets */      \
            afrt_nc_tile512_(xt, wk, Cb, R, S, AFRT_NC_L, rowf, rstep, planef, bb, t, r * n, n); \
        else                                                                               \
            afrt_nc_tile512_(xt, wk, Cb, R, S, sx, rowf, rstep, planef, bb, t, r * n, n);  \
        return;
    /* the tile shapes afrt_nchwc_f32 uses (afrt_nc_width_), each for stride 1 (the column
     * step a constant: the 14 broadcasts take immediate offsets from one pointer; with the
     * step a variable GCC kept 14 column offsets in registers and spilled three, and stride
     * 1 convs ran 6-17% slower, benchmarks/nchwc_conv.py, docs/runtime.md) and any stride:
     * each copy costs ~0.035 s of compile time (GCC 13 here) */
    switch (nr * 16 + ncol) {
        AFRT_NC_CASE_(1, 14) AFRT_NC_CASE_(1, 13) AFRT_NC_CASE_(1, 7) AFRT_NC_CASE_(2, 7)
        default: break;
    }
#undef AFRT_NC_CASE_
#endif
    for (int j = 0; j < nw; ++j)
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < AFRT_NC_L; ++k)
                t[(h * AFRT_NC_MAXW + j) * AFRT_NC_L + k] = bb[h * AFRT_NC_L + k];
    for (int64_t cb = 0; cb < Cb; ++cb)
        for (int64_t r = 0; r < R; ++r)
            for (int64_t s = 0; s < S; ++s) {
                const float *restrict xs = xt + cb * planef + r * rowf + s * AFRT_NC_L;
                const float *restrict ws = wk + ((cb * R + r) * S + s) * AFRT_NC_L * AFRT_NC_KT;
                for (int j = 0; j < nw; ++j)
                    for (int c = 0; c < AFRT_NC_L; ++c) {
                        const float xv = xs[(j / ncol) * rstep + (j % ncol) * sx + c];
                        const float *restrict wc = ws + c * AFRT_NC_KT;
                        for (int h = 0; h < 2; ++h) {
                            float *restrict acc = t + (h * AFRT_NC_MAXW + j) * AFRT_NC_L;
                            for (int k = 0; k < AFRT_NC_L; ++k) acc[k] += wc[h * AFRT_NC_L + k] * xv;
                        }
                    }
            }
}


/* The tile t[2][14][16] (output j = row j / nw, column j % nw; 32 channels) into NCHW y at
 * its first output y0: kn channels, ohw apart, rows OW apart. AVX-512: one masked gather
 * from t (in L1) and one masked store per channel and row. With cl (the built-in clamp
 * epilogue) each row is finished before its store: + the residual (z0: the element of the
 * tile's first output, channels cl->res_ld apart; NULL: none), then clamped. */
static inline void afrt_nc_store_(const float *restrict t, int64_t kn, int64_t rows,
                                  int64_t ncol, int64_t nw, float *restrict y0, int64_t ohw,
                                  int64_t OW, const afrt_epi_clamp *cl, const float *z0) {
#if defined(__AVX512F__)
    const __m512i jx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32(AFRT_NC_L));
    const __mmask16 m = (__mmask16)((1u << nw) - 1u);
    const __m512 lo = _mm512_set1_ps(cl ? cl->lo : 0.0f);
    const __m512 hi = _mm512_set1_ps(cl ? cl->hi : 0.0f);
    const int up = cl && cl->hi != INFINITY; /* an infinite upper bound changes nothing */
    for (int64_t k = 0; k < kn; ++k) {
        const float *tk = t + ((k / AFRT_NC_L) * AFRT_NC_MAXW) * AFRT_NC_L + k % AFRT_NC_L;
        for (int64_t i = 0; i < rows; ++i) {
            __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, jx,
                                                tk + i * ncol * AFRT_NC_L, 4);
            if (cl) { /* afrt_epi_clamp1_: v kept where v > lo or NaN, then where v < hi or NaN */
                if (z0)
                    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, z0 + k * cl->res_ld + i * OW));
                v = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(v, lo, _CMP_NLE_UQ), v);
                if (up) v = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(v, hi, _CMP_NGE_UQ), v);
            }
            _mm512_mask_storeu_ps(y0 + k * ohw + i * OW, m, v);
        }
    }
#else
    for (int64_t k = 0; k < kn; ++k) {
        const float *restrict tk = t + ((k / AFRT_NC_L) * AFRT_NC_MAXW) * AFRT_NC_L + k % AFRT_NC_L;
        for (int64_t i = 0; i < rows; ++i) {
            float *restrict yr = y0 + k * ohw + i * OW;
            if (cl) {
                const float *zr = z0 ? z0 + k * cl->res_ld + i * OW : NULL;
                for (int64_t j = 0; j < nw; ++j) {
                    const float v = tk[(i * ncol + j) * AFRT_NC_L];
                    yr[j] = afrt_epi_clamp1_(zr ? v + zr[j] : v, cl->lo, cl->hi);
                }
                continue;
            }
            for (int64_t j = 0; j < nw; ++j) yr[j] = tk[(i * ncol + j) * AFRT_NC_L];
        }
    }
#endif
}

/* The tile t (as for afrt_nc_store_) into NCHW16c y at block kb0 of its first output y0
 * (the block's plane is planef floats): each row of each 16-channel block is nw whole
 * vectors, one copy. Channels past kn are the zero weights' sums (0 + bias 0): the blocks'
 * padding stays zero. With cl (the built-in clamp epilogue in its flat form, as
 * afrt_nc_epilogue_blocked_ calls it) each row is finished on the way: + the residual at the
 * same flat offset (z0 for y0; NULL: none), then clamped. */
static inline void afrt_nc_store_blocked_(const float *restrict t, int64_t kn, int64_t rows,
                                          int64_t ncol, int64_t nw, float *restrict y0,
                                          int64_t planef, int64_t OW, const afrt_epi_clamp *cl,
                                          const float *z0) {
    for (int64_t h = 0; h * AFRT_NC_L < kn; ++h)
        for (int64_t i = 0; i < rows; ++i) {
            const int64_t off = h * planef + i * OW * AFRT_NC_L;
            const float *src = t + (h * AFRT_NC_MAXW + i * ncol) * AFRT_NC_L;
            if (cl)
                afrt_epi_clamp_store_(y0 + off, src, z0 ? z0 + off : NULL, nw * AFRT_NC_L,
                                      cl->lo, cl->hi);
            else
                memcpy(y0 + off, src, (size_t)(nw * AFRT_NC_L) * sizeof(float));
        }
}

/* The epilogue on a blocked y: its flat form, (n 0, channels [0, 1), positions [f0, f1)),
 * which indexes y + f for f in [f0, f1) -- exactly the storage of the finished rows. Only
 * valid for an epilogue that reads y and same-layout tensors alone (assign-layout blocks
 * a conv's output only when its epilogue is elementwise on y with scalar constants). */
static inline void afrt_nc_epilogue_blocked_(afrt_epilogue epi, float *y, int64_t f0, int64_t f1,
                                             int64_t ohw) {
    if (epi.fn) epi.fn(epi.ctx, y, 0, 0, 1, f0, f1, ohw);
}

/* Scratch-free reference of afrt_nchwc_ex_f32 (the printed fallback of a conv with a blocked
 * operand when the blocked kernel cannot get memory; afrt_conv2d_f32 knows only NCHW). */
static inline void afrt_nchwc_naive_f32(const float *x, const float *w, const float *bias,
                                        float *y, const afrt_conv_params *p, afrt_epilogue epi,
                                        int flags) {
    const int64_t C = p->C, K = p->K, H = p->H, W = p->W, OH = p->OH, OW = p->OW;
    const int64_t hw = H * W, ohw = OH * OW, L = AFRT_NC_L;
    const int64_t Cb = afrt_cdiv_(C, L), Kb = afrt_cdiv_(K, L);
    const int xb = flags & AFRT_NC_IN_BLOCKED, yb = flags & AFRT_NC_OUT_BLOCKED;
    for (int64_t n = 0; n < p->N; ++n)
        for (int64_t k = 0; k < (yb ? Kb * L : K); ++k)
            for (int64_t q = 0; q < ohw; ++q) {
                const int64_t oh = q / OW, ow = q % OW;
                float acc = 0.0f;
                if (k < K) {
                    acc = bias ? bias[k] : 0.0f;
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t r = 0; r < p->R; ++r)
                            for (int64_t s = 0; s < p->S; ++s) {
                                const int64_t ih = oh * p->stride_h - p->pad_top + r * p->dil_h;
                                const int64_t iw = ow * p->stride_w - p->pad_left + s * p->dil_w;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                const float xv =
                                    xb ? x[(((n * Cb + c / L) * H + ih) * W + iw) * L + c % L]
                                       : x[(n * C + c) * hw + ih * W + iw];
                                acc += xv * w[((k * C + c) * p->R + r) * p->S + s];
                            }
                }
                if (yb)
                    y[((n * Kb + k / L) * ohw + q) * L + k % L] = acc;
                else
                    y[(n * K + k) * ohw + q] = acc;
            }
    for (int64_t n = 0; n < p->N; ++n) {
        if (yb)
            afrt_nc_epilogue_blocked_(epi, y, n * Kb * L * ohw, (n + 1) * Kb * L * ohw, ohw);
        else if (epi.fn)
            epi.fn(epi.ctx, y + n * K * ohw, n, 0, K, 0, ohw, ohw);
    }
}

/* The kernel body, always inlined with a constant flags into afrt_nchwc_f32 (0: the NCHW
 * path compiles exactly as without the blocked modes) and afrt_nchwc_ex_f32. */
#if defined(__GNUC__) || defined(__clang__)
#define AFRT_NC_INLINE_ static inline __attribute__((always_inline))
#else
#define AFRT_NC_INLINE_ static inline
#endif
AFRT_NC_INLINE_ int afrt_nchwc_body_(const float *x, const float *w, const float *bias, float *y,
                                     const afrt_conv_params *p, afrt_epilogue epi,
                                     const int flags) {
    if (!afrt_nchwc_fits(p)) return 0;
    if (p->N <= 0) return 1;
    afrt_init_once_();
    const int64_t C = p->C, K = p->K, R = p->R, S = p->S, st = p->stride_h;
    const int64_t OH = p->OH, OW = p->OW, ohw = OH * OW, hw = p->H * p->W;
    const int64_t Cb = afrt_cdiv_(C, AFRT_NC_L), Kp = afrt_cdiv_(K, AFRT_NC_KT);
    const int64_t Kb = afrt_cdiv_(K, AFRT_NC_L);
    const int xblk = flags & AFRT_NC_IN_BLOCKED, yblk = flags & AFRT_NC_OUT_BLOCKED;
    /* tiles of 14 columns (two rows of 7 on maps of at most 7 columns) or the last tile's
     * width where it has a copy (afrt_nc_width_); the blocked input is padded with zeros to
     * whole tiles, and outputs past OH x OW are computed and dropped (none on maps 7, 13,
     * 14, 27, 28, 55, 56 wide) */
    const int64_t nr = 2 * OW <= AFRT_NC_MAXW ? 2 : 1, ncol = AFRT_NC_MAXW / nr;
    const int64_t nrb = afrt_cdiv_(OH, nr), nwt = afrt_cdiv_(OW, ncol);
    const int64_t Hp = (nrb * nr - 1) * st + R, Wp = (nwt * ncol - 1) * st + S;
    const int64_t rowf = Wp * AFRT_NC_L, planef = Hp * rowf, imgf = Cb * planef;
    const float *wb = afrt_nc_weights_(w, K, C, R * S);
    if (!wb) return 0;
    float *xb = (float *)afrt_thread_scratch(0, (size_t)(p->N * imgf) * sizeof(float));
    if (!xb) return 0;
    const double work = (double)p->N * K * ohw * C * R * S;
    const int threads = afrt_worth_threads_(work);
    (void)threads; /* without OpenMP */
    const int64_t rows = p->N * Cb * Hp, tasks = p->N * Kp * nrb;
    /* the built-in clamp epilogue: on each row as it is stored (afrt_nc_store_*) */
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    /* One parallel region for both loops (the reorder, then the tiles after the loop's
     * barrier): each region is a fork and a join, and on a shared machine a thread that
     * has lost its core stalls every one of them. */
    AFRT_OMP(parallel num_threads(afrt_threads_now()) if (threads && (rows > 1 || tasks > 1)))
    {
    AFRT_OMP(for schedule(static))
    for (int64_t q = 0; q < rows; ++q) {
        afrt_arrive_();
        const int64_t n = q / (Cb * Hp), cb = (q / Hp) % Cb, i = q % Hp;
        float *xr = xb + n * imgf + cb * planef + i * rowf;
        if (xblk)
            afrt_nc_copy_row_(x + n * Cb * AFRT_NC_L * hw, p, cb, i, Wp, xr);
        else
            afrt_nc_reorder_row_(x + n * C * hw, p, cb, i, Wp, xr);
    }
    AFRT_OMP(for schedule(static))
    for (int64_t task = 0; task < tasks; ++task) {
        afrt_arrive_();
        const int64_t n = task / (Kp * nrb), kp = (task / nrb) % Kp, oh0 = (task % nrb) * nr;
        const int64_t k0 = kp * AFRT_NC_KT, kn = afrt_min_(AFRT_NC_KT, K - k0);
        const int64_t rows = afrt_min_(nr, OH - oh0);
        float bb[AFRT_NC_KT], t[2 * AFRT_NC_MAXW * AFRT_NC_L];
        for (int64_t k = 0; k < AFRT_NC_KT; ++k) bb[k] = bias && k < kn ? bias[k0 + k] : 0.0f;
        const float *xrow = xb + n * imgf + oh0 * st * rowf;
        const float *wk = wb + kp * Cb * R * S * AFRT_NC_L * AFRT_NC_KT;
        float *yn = yblk ? y + n * Kb * AFRT_NC_L * ohw : y + n * K * ohw;
        /* the built-in clamp's residual at this task's first output, in the epilogue's
         * coordinates: the flat offset of a blocked y, else image n, channel k0, row oh0 */
        const float *zt =
            !cl || !cl->res ? NULL
            : yblk          ? cl->res + (yn - y) + k0 * ohw + oh0 * OW * AFRT_NC_L
                            : afrt_epi_clamp_res_(cl, n, k0) + oh0 * OW;
        for (int64_t tw = 0; tw < nwt; ++tw) {
            const int64_t ow0 = tw * ncol, nw = afrt_min_(ncol, OW - ow0);
            const int cw = rows == 2 ? (int)ncol : afrt_nc_width_(nw);
            afrt_nc_tile_(xrow + ow0 * st * AFRT_NC_L, wk, Cb, R, S, st * AFRT_NC_L, rowf,
                          st * rowf, planef, bb, t, (int)rows, cw);
            if (yblk)
                afrt_nc_store_blocked_(t, kn, rows, cw, nw,
                                       yn + k0 * ohw + (oh0 * OW + ow0) * AFRT_NC_L,
                                       ohw * AFRT_NC_L, OW, cl,
                                       zt ? zt + ow0 * AFRT_NC_L : NULL);
            else
                afrt_nc_store_(t, kn, rows, cw, nw, yn + k0 * ohw + oh0 * OW + ow0, ohw, OW, cl,
                               zt ? zt + ow0 : NULL);
        }
        if (cl) continue; /* finished at the stores */
        if (yblk) {
            for (int64_t h = 0; h * AFRT_NC_L < kn; ++h) {
                const int64_t f0 = (yn - y) + (k0 + h * AFRT_NC_L) * ohw + oh0 * OW * AFRT_NC_L;
                afrt_nc_epilogue_blocked_(epi, y, f0, f0 + rows * OW * AFRT_NC_L, ohw);
            }
        } else if (epi.fn) {
            epi.fn(epi.ctx, yn, n, k0, k0 + kn, oh0 * OW, (oh0 + rows) * OW, ohw);
        }
    }
    } /* the parallel region */
    return 1;
}

/* Direct blocked convolution (see the top of this file), x and y NCHW (the reorder inside
 * every call). Returns 0 if the conv does not fit (afrt_nchwc_fits) or memory cannot be had;
 * then nothing useful is written and the caller computes the conv another way
 * (afrt_conv2d_f32). */
static inline int afrt_nchwc_f32(const float *x, const float *w, const float *bias, float *y,
                                 const afrt_conv_params *p, afrt_epilogue epi) {
    return afrt_nchwc_body_(x, w, bias, y, p, epi, 0);
}

/* The same with x and/or y in NCHW16c as flags says (AFRT_NC_IN_BLOCKED,
 * AFRT_NC_OUT_BLOCKED). Returns 0 as afrt_nchwc_f32 does; the caller's fallback is then
 * afrt_nchwc_naive_f32 (afrt_conv2d_f32 knows only NCHW). */
static inline int afrt_nchwc_ex_f32(const float *x, const float *w, const float *bias, float *y,
                                    const afrt_conv_params *p, afrt_epilogue epi, int flags) {
    if (!flags) return afrt_nchwc_f32(x, w, bias, y, p, epi);
    return afrt_nchwc_body_(x, w, bias, y, p, epi, flags);
}

/* ---------------------------------------------------------------------------------------------
 * Direct 1x1 convolution with few output channels (afrt_conv1x1d_f32, the lowering's
 * `direct_1x1`, AVX-512 builds whose config leaves conv_layout "auto", like direct_nchwc).
 *
 * gemm_1x1 packs the whole NCHW input into 32-wide B panels per call: on a conv with few
 * output channels (SqueezeNet's squeezes, 64 -> 16 and 128 -> 16 at 55x55; Inception's 5x5
 * reductions) the packing is as much work as the GEMM. Here the input is read in place: a
 * register tile is 8 output channels x 48 positions (three vectors of consecutive positions
 * of the flat map, 24 accumulators); per input channel three vectors are loaded straight from
 * x and each of the 8 weights is broadcast (weights reordered once to [K/8][C][8], zero past
 * K, cached as constant operands are). A map's last tile of fewer than 48 positions loads
 * its lanes masked. The bias is the accumulators' start value; the
 * built-in clamp epilogue (residual add, Relu / Clip) is applied in registers before the only
 * store; any other epilogue runs on each finished 8-channel x 48-position block (the GEMM
 * path's contract: rows = channels, cols = positions, ld = OH*OW). Tasks are (image, tile of
 * 48 positions), each through all output channels (its input tile stays in L1), static
 * over OpenMP threads. Sums run over the input channels in order from the bias, as
 * gemm_1x1's k loop does, but are not split into k blocks: results differ in rounding only.
 *
 * The rule (afrt_conv1x1d_applies, clib.direct_1x1_applies): 1x1, stride 1, no padding,
 * group 1, AFRT_1X1D_MIN_C to any input channels, at most AFRT_1X1D_MAX_K output channels,
 * at least AFRT_1X1D_MIN_HW positions (docs/runtime.md). Alone (benchmarks/conv1x1_direct.py,
 * warm) 0.66-0.95 of gemm_1x1's time with 16-32 output channels on 14x14 to 55x55 maps,
 * even with 48-64, 1.3-1.4x on 7x7 maps (a 48-wide tile and a tail of 1); inside models
 * (kernel_ab.py) 0.74-0.90 on SqueezeNet's 55x55 and 27x27 and Inception's 28x28 layers but
 * 1.08-1.16 on Inception's 14x14 ones (480-528 input channels: a tile's input outgrows L1),
 * hence the map threshold.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_1X1D_MR 8  /* output channels per register tile */
#define AFRT_1X1D_NV 3  /* vectors of 16 positions per register tile */
#define AFRT_1X1D_NT (16 * AFRT_1X1D_NV)
#ifndef AFRT_1X1D_MAX_K
#define AFRT_1X1D_MAX_K 32
#endif
#ifndef AFRT_1X1D_MIN_HW
#define AFRT_1X1D_MIN_HW 512
#endif
/* The input lines of the tile this many tiles ahead are prefetched while the first channel
 * block runs (0: none). Inside SqueezeNet (kernel_ab.py) 1 made its squeezes 0.89-0.93 of
 * no prefetch (C streams of one channel row each defeat the hardware prefetcher); 6 was
 * even there and 1.03-1.11 on Inception's 5x5 reductions. */
#ifndef AFRT_1X1D_PF
#define AFRT_1X1D_PF 1
#endif
#ifndef AFRT_1X1D_MIN_C
#define AFRT_1X1D_MIN_C 16
#endif

static inline int afrt_conv1x1d_applies(const afrt_conv_params *p) {
    return p->R == 1 && p->S == 1 && p->stride_h == 1 && p->stride_w == 1 && p->dil_h == 1 &&
           p->dil_w == 1 && p->pad_top == 0 && p->pad_left == 0 && p->pad_bottom == 0 &&
           p->pad_right == 0 && p->OH == p->H && p->OW == p->W && p->group <= 1 &&
           p->C >= AFRT_1X1D_MIN_C && p->K >= 1 && p->K <= AFRT_1X1D_MAX_K &&
           p->OH * p->OW >= AFRT_1X1D_MIN_HW;
}

/* w [K][C] reordered to [K/8][C][8] (zeros past K) into dst (RS is 1). */
static inline void afrt_1x1d_pack_(const float *w, int64_t K, int64_t C, int64_t RS, float *dst) {
    (void)RS;
    for (int64_t kb = 0; kb < afrt_cdiv_(K, AFRT_1X1D_MR); ++kb)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t k = 0; k < AFRT_1X1D_MR; ++k) {
                const int64_t kk = kb * AFRT_1X1D_MR + k;
                dst[(kb * C + c) * AFRT_1X1D_MR + k] = kk < K ? w[kk * C + c] : 0.0f;
            }
}

/* The reordered w (cached, side 4). NULL if memory is short. */
static inline const float *afrt_1x1d_weights_(const float *w, int64_t K, int64_t C) {
    const size_t n = (size_t)(afrt_round_up_(K, AFRT_1X1D_MR) * C);
    return afrt_nc_cached_(w, K, C, 1, 4, n, afrt_1x1d_pack_);
}

#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
/* One 8-channel block of one tile: xq the tile's first position (channels ld apart), wk the
 * block's reordered weights, bb its 8 biases; kn channels and the first nq positions stored
 * at yk (channels hw apart), finished with cl (NULL: none; its residual at zk, channels
 * res_ld apart). */
static inline __attribute__((always_inline)) void afrt_1x1d_block_(
    const float *xq, int64_t ld, const float *restrict wk, int64_t C, const float *bb, int64_t kn,
    int64_t nq, float *yk, int64_t hw, const afrt_epi_clamp *cl, const float *zk, int pf,
    const int tail) {
    __mmask16 lm[AFRT_1X1D_NV]; /* the lanes inside the map (all of them but in the tail) */
    for (int v = 0; v < AFRT_1X1D_NV; ++v) {
        const int64_t left = nq - 16 * v;
        lm[v] = left >= 16 ? (__mmask16)0xffff
                : left > 0 ? (__mmask16)((1u << left) - 1u)
                           : (__mmask16)0;
    }
    __m512 acc[AFRT_1X1D_MR][AFRT_1X1D_NV];
    for (int k = 0; k < AFRT_1X1D_MR; ++k)
        for (int v = 0; v < AFRT_1X1D_NV; ++v) acc[k][v] = _mm512_set1_ps(bb[k]);
    for (int64_t c = 0; c < C; ++c) {
        const float *xs = xq + c * ld, *ws = wk + c * AFRT_1X1D_MR;
        __m512 xv[AFRT_1X1D_NV];
        for (int v = 0; v < AFRT_1X1D_NV; ++v)
            xv[v] = tail ? _mm512_maskz_loadu_ps(lm[v], xs + 16 * v) : _mm512_loadu_ps(xs + 16 * v);
        if (pf) /* this channel's three lines AFRT_1X1D_PF tiles ahead */
            for (int v = 0; v < AFRT_1X1D_NV; ++v)
                _mm_prefetch((const char *)(xs + AFRT_1X1D_PF * AFRT_1X1D_NT + 16 * v),
                             _MM_HINT_T0);
        for (int k = 0; k < AFRT_1X1D_MR; ++k) {
            const __m512 wv = _mm512_set1_ps(ws[k]);
            for (int v = 0; v < AFRT_1X1D_NV; ++v) acc[k][v] = _mm512_fmadd_ps(wv, xv[v], acc[k][v]);
        }
    }
    const __m512 lo = _mm512_set1_ps(cl ? cl->lo : 0.0f), hi = _mm512_set1_ps(cl ? cl->hi : 0.0f);
    const int up = cl && cl->hi != INFINITY; /* an infinite upper bound changes nothing */
    for (int v = 0; v < AFRT_1X1D_NV; ++v) {
        const __mmask16 m = lm[v];
        if (!m) break;
        for (int k = 0; k < kn; ++k) {
            __m512 o = acc[k][v];
            if (cl) { /* afrt_epi_clamp1_ on (o + residual), as afrt_nc_store_ does */
                if (zk) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, zk + k * cl->res_ld + 16 * v));
                o = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(o, lo, _CMP_NLE_UQ), o);
                if (up) o = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(o, hi, _CMP_NGE_UQ), o);
            }
            _mm512_mask_storeu_ps(yk + k * hw + 16 * v, m, o);
        }
    }
}
#endif

/* Direct 1x1 conv (above), x and y NCHW. Returns 0 when the conv is not one it takes
 * (afrt_conv1x1d_applies), the build has no AVX-512 or memory for the reordered weights is
 * short: then nothing is written and the caller runs afrt_conv2d_f32. The built-in clamp's
 * residual may be y itself (plan-buffers' in-place residual): each element's residual is
 * read by the block that stores it, just before the store, and nothing is allocated once
 * the first store is made. */
static inline int afrt_conv1x1d_f32(const float *x, const float *w, const float *bias, float *y,
                                    const afrt_conv_params *p, afrt_epilogue epi) {
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
    if (!afrt_conv1x1d_applies(p)) return 0;
    if (p->N <= 0) return 1;
    const int64_t C = p->C, K = p->K, hw = p->OH * p->OW;
    afrt_init_once_();
    const float *wb = afrt_1x1d_weights_(w, K, C);
    if (!wb) return 0;
    const int64_t ntile = afrt_cdiv_(hw, AFRT_1X1D_NT), tasks = p->N * ntile;
    const int64_t Kb = afrt_cdiv_(K, AFRT_1X1D_MR);
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    const int threads = afrt_worth_threads_((double)p->N * K * hw * C);
    (void)threads; /* without OpenMP */
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (threads && tasks > 1))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        const int64_t n = t / ntile, q0 = (t % ntile) * AFRT_1X1D_NT;
        const int64_t nq = afrt_min_(AFRT_1X1D_NT, hw - q0);
        const float *xq = x + n * C * hw + q0;
        float *yn = y + n * K * hw;
        for (int64_t kb = 0; kb < Kb; ++kb) {
            const int64_t k0 = kb * AFRT_1X1D_MR, kn = afrt_min_(AFRT_1X1D_MR, K - k0);
            float bb[AFRT_1X1D_MR];
            for (int64_t k = 0; k < AFRT_1X1D_MR; ++k) bb[k] = bias && k < kn ? bias[k0 + k] : 0.0f;
            const float *zk = cl && cl->res ? afrt_epi_clamp_res_(cl, n, k0) + q0 : NULL;
            const float *wk = wb + kb * C * AFRT_1X1D_MR;
            const int pf = AFRT_1X1D_PF && kb == 0 && q0 + (AFRT_1X1D_PF + 1) * AFRT_1X1D_NT <= hw;
            if (nq == AFRT_1X1D_NT)
                afrt_1x1d_block_(xq, hw, wk, C, bb, kn, nq, yn + k0 * hw + q0, hw, cl, zk, pf, 0);
            else /* the map's last, short tile: masked loads */
                afrt_1x1d_block_(xq, hw, wk, C, bb, kn, nq, yn + k0 * hw + q0, hw, cl, zk, 0, 1);
            if (!cl && epi.fn) epi.fn(epi.ctx, yn, n, k0, k0 + kn, q0, q0 + nq, hw);
        }
    }
    return 1;
#else
    (void)x, (void)w, (void)bias, (void)y, (void)p, (void)epi;
    return 0;
#endif
}

/* ---------------------------------------------------------------------------------------------
 * direct_1x1_b (afrt_conv1x1nb_f32): a 1x1 stride-1 unpadded group-1 conv into NCHW16c y from
 * NCHW x or, with AFRT_NC_IN_BLOCKED, NCHW16c x: assign-layout's fire modules (a squeeze
 * writing 16-64 channels in blocks for its expands, an expand writing its half of a blocked
 * concat; docs/c-backend.md). afrt_nchwc_f32 on such a conv computes a 32-channel tile for
 * 16 channels and copies the whole input into its padded scratch (2.5x gemm_1x1's time on
 * 128 -> 16 at 55x55); gemm_1x1_b's 32-wide B panels are half empty there too. Here the output
 * channels go along the lanes and the input is read in place: a register tile is one 16-channel
 * block x 28 consecutive positions of the flat map (K <= 16), four blocks x 7 where 64 whole
 * channels remain (the input broadcast once for all 64: SqueezeNet's expands 0.85-0.93 of the
 * two-block tiles' time, docs/runtime.md) or two blocks x 14 (28 accumulators each); per
 * input channel one, two or four weight vectors are loaded and each position's
 * input is broadcast straight from x -- consecutive floats of one channel row in NCHW, 16
 * floats apart in NCHW16c, immediate offsets either way (a map's positions are the same flat
 * sequence in both layouts, so there is nothing to copy or transpose). The next tile's lines
 * are prefetched (C channel rows at once defeat the hardware prefetcher). Weights as
 * afrt_nchwc_f32 reorders them ([K/32][C/16][16][32], cached). The bias is the accumulators'
 * start; the built-in clamp (its residual in y's layout, possibly y itself) is applied before
 * the only store, any other epilogue in its flat form on each finished tile. Channels past K are stored as zeros. Tasks
 * are (image, position tile), each through all output channels (its input tile stays in L1).
 * ------------------------------------------------------------------------------------------- */
#define AFRT_1X1B_NP1 28 /* positions per register tile of one block (K <= 16) */
#define AFRT_1X1B_NP2 14 /* positions per register tile of two blocks */
#define AFRT_1X1B_NP4 7  /* positions per register tile of four blocks (64 whole channels) */

static inline int afrt_conv1x1nb_fits(const afrt_conv_params *p) {
    return p->R == 1 && p->S == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
           p->pad_left == 0 && p->pad_bottom == 0 && p->pad_right == 0 && p->OH == p->H &&
           p->OW == p->W && p->group <= 1 && p->dil_h == 1 && p->dil_w == 1;
}

#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
/* 1: four-block register tiles (4 x 7) where 64 whole channels remain; 0: pairs only, for
 * benchmarks and tests comparing the two. */
static int afrt_1x1b_four_ = 1;

/* GCC unrolls at most 16 iterations by itself: a 28-position tile kept its accumulators in
 * memory (2.8x the time) until told */
#if defined(__clang__)
#define AFRT_1X1B_UNROLL_ _Pragma("unroll")
#else
#define AFRT_1X1B_UNROLL_ _Pragma("GCC unroll 28")
#endif
/* One register tile: kt (1, 2) blocks of wk ([Cb][16][32], the pair's reordered weights; the
 * second half of each 32 for the second block) x np positions (the first nq stored), from xq
 * (the tile's first position of channel 0; channel c at (c / 16) * bstep + (c % 16) * cstep,
 * position j at j * ps), bias bb[32] as the start; block h of the tile stored at
 * yq + h * plane, kn[h] of its lanes kept. Always inlined: np, ps and kt are constants in the
 * full tiles' copies, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void afrt_1x1nb_tile_(
    const float *restrict xq, int64_t C, int64_t bstep, int64_t cstep, const int ps,
    const float *restrict wk, const float *bb, float *restrict yq, int64_t plane,
    const __mmask16 km0, const __mmask16 km1, const afrt_epi_clamp *cl, const float *zq,
    const int kt, const int np, int64_t nq, const int pf) {
    __m512 a0[AFRT_1X1B_NP1], a1[AFRT_1X1B_NP2], a2[AFRT_1X1B_NP4], a3[AFRT_1X1B_NP4];
    /* four blocks: the second pair's weights, one pair's reordered weights further on */
    const int64_t wp2 = afrt_cdiv_(C, AFRT_NC_L) * AFRT_NC_L * AFRT_NC_KT;
    AFRT_1X1B_UNROLL_
    for (int j = 0; j < np; ++j) a0[j] = _mm512_loadu_ps(bb);
    if (kt >= 2)
        for (int j = 0; j < np; ++j) a1[j] = _mm512_loadu_ps(bb + AFRT_NC_L);
    /* (zeros where kt < 4: never stored, dead in the constant-kt copies, and GCC cannot see
     * that in the short tiles' copy) */
    for (int j = 0; j < np && j < AFRT_1X1B_NP4; ++j) {
        a2[j] = kt == 4 ? _mm512_loadu_ps(bb + 2 * AFRT_NC_L) : _mm512_setzero_ps();
        a3[j] = kt == 4 ? _mm512_loadu_ps(bb + 3 * AFRT_NC_L) : _mm512_setzero_ps();
    }
    for (int64_t cb = 0; cb * AFRT_NC_L < C; ++cb) {
        const int64_t cn = afrt_min_(AFRT_NC_L, C - cb * AFRT_NC_L);
        for (int64_t c = 0; c < cn; ++c) {
            const float *xs = xq + cb * bstep + c * cstep;
            const float *ws = wk + (cb * AFRT_NC_L + c) * AFRT_NC_KT;
            if (pf) { /* the next tile's lines of this channel (NCHW) / of this block (NCHW16c) */
                if (ps == 1) {
                    _mm_prefetch((const char *)(xs + np), _MM_HINT_T0);
                    _mm_prefetch((const char *)(xs + np + 16), _MM_HINT_T0);
                } else {
                    _mm_prefetch((const char *)(xq + cb * bstep + (np + c) * ps), _MM_HINT_T0);
                    if (c + 16 < np)
                        _mm_prefetch((const char *)(xq + cb * bstep + (np + c + 16) * ps),
                                     _MM_HINT_T0);
                }
            }
            const __m512 w0 = _mm512_loadu_ps(ws);
            if (kt == 4) {
                const __m512 w1 = _mm512_loadu_ps(ws + AFRT_NC_L);
                const __m512 w2 = _mm512_loadu_ps(ws + wp2);
                const __m512 w3 = _mm512_loadu_ps(ws + wp2 + AFRT_NC_L);
                AFRT_1X1B_UNROLL_
                for (int j = 0; j < np; ++j) {
                    const __m512 xv = _mm512_set1_ps(xs[j * ps]);
                    a0[j] = _mm512_fmadd_ps(w0, xv, a0[j]);
                    a1[j] = _mm512_fmadd_ps(w1, xv, a1[j]);
                    a2[j] = _mm512_fmadd_ps(w2, xv, a2[j]);
                    a3[j] = _mm512_fmadd_ps(w3, xv, a3[j]);
                }
            } else if (kt == 2) {
                const __m512 w1 = _mm512_loadu_ps(ws + AFRT_NC_L);
                AFRT_1X1B_UNROLL_
                for (int j = 0; j < np; ++j) {
                    const __m512 xv = _mm512_set1_ps(xs[j * ps]);
                    a0[j] = _mm512_fmadd_ps(w0, xv, a0[j]);
                    a1[j] = _mm512_fmadd_ps(w1, xv, a1[j]);
                }
            } else {
                AFRT_1X1B_UNROLL_
                for (int j = 0; j < np; ++j)
                    a0[j] = _mm512_fmadd_ps(w0, _mm512_set1_ps(xs[j * ps]), a0[j]);
            }
        }
    }
    const __m512 lo = _mm512_set1_ps(cl ? cl->lo : 0.0f), hi = _mm512_set1_ps(cl ? cl->hi : 0.0f);
    const int up = cl && cl->hi != INFINITY; /* an infinite upper bound changes nothing */
    for (int h = 0; h < kt; ++h) {
        const __mmask16 km = h == 0 ? km0 : h == 1 ? km1 : (__mmask16)0xffff;
        for (int j = 0; j < np && j < nq; ++j) {
            __m512 o = h == 0 ? a0[j] : h == 1 ? a1[j] : h == 2 ? a2[j] : a3[j];
            if (cl) { /* afrt_epi_clamp1_ on (o + residual), NaN kept */
                if (zq) o = _mm512_add_ps(o, _mm512_loadu_ps(zq + h * plane + j * AFRT_NC_L));
                o = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(o, lo, _CMP_NLE_UQ), o);
                if (up) o = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(o, hi, _CMP_NGE_UQ), o);
            }
            _mm512_storeu_ps(yq + h * plane + j * AFRT_NC_L, _mm512_maskz_mov_ps(km, o));
        }
    }
}

/* Each tile shape compiled on its own (np, ps and kt constants; one function per shape keeps
 * GCC's register allocation to the one tile) */
#define AFRT_1X1B_SHAPE_(name, PS, KT, NP)                                                        \
    static void name(const float *restrict xq, int64_t C, int64_t bstep, int64_t cstep,          \
                     const float *restrict wk, const float *bb, float *restrict yq,              \
                     int64_t plane, __mmask16 km0, __mmask16 km1, const afrt_epi_clamp *cl,      \
                     const float *zq) {                                                          \
        afrt_1x1nb_tile_(xq, C, bstep, cstep, PS, wk, bb, yq, plane, km0, km1, cl, zq, KT, NP,   \
                         NP, 1);                                                                 \
    }
AFRT_1X1B_SHAPE_(afrt_1x1nb_n1_, 1, 1, AFRT_1X1B_NP1)
AFRT_1X1B_SHAPE_(afrt_1x1nb_n2_, 1, 2, AFRT_1X1B_NP2)
AFRT_1X1B_SHAPE_(afrt_1x1nb_n3_, 1, 1, AFRT_1X1B_NP2)
AFRT_1X1B_SHAPE_(afrt_1x1nb_b1_, AFRT_NC_L, 1, AFRT_1X1B_NP1)
AFRT_1X1B_SHAPE_(afrt_1x1nb_b2_, AFRT_NC_L, 2, AFRT_1X1B_NP2)
AFRT_1X1B_SHAPE_(afrt_1x1nb_b3_, AFRT_NC_L, 1, AFRT_1X1B_NP2)
AFRT_1X1B_SHAPE_(afrt_1x1nb_n4_, 1, 4, AFRT_1X1B_NP4)
AFRT_1X1B_SHAPE_(afrt_1x1nb_b4_, AFRT_NC_L, 4, AFRT_1X1B_NP4)
#undef AFRT_1X1B_SHAPE_

/* The tile for ps (1: NCHW x, 16: NCHW16c x): a full one of np positions (28 with kt 1 for
 * K <= 16, else 14) or the map's last, short tile (then np is the loop bound: slower, once
 * per map). */
static void afrt_1x1nb_tiles_(const float *restrict xq, int64_t C, int64_t bstep, int64_t cstep,
                              int ps, const float *restrict wk, const float *bb,
                              float *restrict yq, int64_t plane, __mmask16 km0, __mmask16 km1,
                              const afrt_epi_clamp *cl, const float *zq, int kt, int64_t np,
                              int64_t nq) {
    if (kt == 4) { /* 64 whole channels: the np positions as register tiles of NP4 */
        for (int64_t o = 0; o < nq; o += AFRT_1X1B_NP4) {
            const int64_t n = afrt_min_(AFRT_1X1B_NP4, nq - o);
            const float *xo = xq + o * ps;
            float *yo = yq + o * AFRT_NC_L;
            const float *zo = zq ? zq + o * AFRT_NC_L : NULL;
            if (n == AFRT_1X1B_NP4)
                (ps == 1 ? afrt_1x1nb_n4_ : afrt_1x1nb_b4_)(xo, C, bstep, cstep, wk, bb, yo, plane,
                                                           km0, km1, cl, zo);
            else if (ps == 1)
                afrt_1x1nb_tile_(xo, C, bstep, cstep, 1, wk, bb, yo, plane, km0, km1, cl, zo, 4,
                                 (int)n, n, 0);
            else
                afrt_1x1nb_tile_(xo, C, bstep, cstep, AFRT_NC_L, wk, bb, yo, plane, km0, km1, cl,
                                 zo, 4, (int)n, n, 0);
        }
        return;
    }
    if (nq == np) {
        const int shape = (kt == 2) + 2 * (kt == 1 && np != AFRT_1X1B_NP1);
        static void (*const fns[2][3])(const float *, int64_t, int64_t, int64_t, const float *,
                                       const float *, float *, int64_t, __mmask16, __mmask16,
                                       const afrt_epi_clamp *, const float *) = {
            {afrt_1x1nb_n1_, afrt_1x1nb_n2_, afrt_1x1nb_n3_},
            {afrt_1x1nb_b1_, afrt_1x1nb_b2_, afrt_1x1nb_b3_}};
        fns[ps != 1][shape](xq, C, bstep, cstep, wk, bb, yq, plane, km0, km1, cl, zq);
    } else if (ps == 1) {
        afrt_1x1nb_tile_(xq, C, bstep, cstep, 1, wk, bb, yq, plane, km0, km1, cl, zq, kt,
                         (int)nq, nq, 0);
    } else {
        afrt_1x1nb_tile_(xq, C, bstep, cstep, AFRT_NC_L, wk, bb, yq, plane, km0, km1, cl, zq,
                         kt, (int)nq, nq, 0);
    }
}
#endif

/* direct_1x1_b (above): x NCHW or (flags AFRT_NC_IN_BLOCKED) NCHW16c, y NCHW16c. Returns 0
 * when the conv does not fit (afrt_conv1x1nb_fits), the build has no AVX-512 or memory for
 * the reordered weights is short: then nothing is written and the caller runs
 * afrt_nchwc_naive_f32. */
static inline int afrt_conv1x1nb_f32(const float *x, const float *w, const float *bias, float *y,
                                     const afrt_conv_params *p, afrt_epilogue epi, int flags) {
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
    if (!afrt_conv1x1nb_fits(p)) return 0;
    if (p->N <= 0 || p->K <= 0 || p->OH * p->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t C = p->C, K = p->K, hw = p->OH * p->OW, plane = hw * AFRT_NC_L;
    const int64_t Cb = afrt_cdiv_(C, AFRT_NC_L), Kb = afrt_cdiv_(K, AFRT_NC_L);
    const float *wb = afrt_nc_weights_(w, K, C, 1);
    if (!wb) return 0;
    const int xblk = flags & AFRT_NC_IN_BLOCKED;
    const int64_t np = K <= AFRT_NC_L ? AFRT_1X1B_NP1 : AFRT_1X1B_NP2;
    const int64_t ntile = afrt_cdiv_(hw, np), tasks = p->N * ntile;
    const int64_t ximg = xblk ? Cb * plane : C * hw, yimg = Kb * plane;
    const int64_t bstep = xblk ? plane : AFRT_NC_L * hw, cstep = xblk ? 1 : hw;
    /* the built-in clamp with its residual at the same flat offset as y (same layout), read
     * just before each store: the residual may be y itself (plan-buffers' in-place residual) */
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    const int threads = afrt_worth_threads_((double)p->N * K * hw * C);
    (void)threads; /* without OpenMP */
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (threads && tasks > 1))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        const int64_t n = t / ntile, q0 = (t % ntile) * np, nq = afrt_min_(np, hw - q0);
        const float *xq = x + n * ximg + q0 * (xblk ? AFRT_NC_L : 1);
        float *yn = y + n * yimg;
        for (int64_t kb = 0; kb < Kb;) {
            const int64_t k0 = kb * AFRT_NC_L;
            /* four whole blocks at once where the map's tiles are two-block ones (K > 16) */
            const int kt = afrt_1x1b_four_ && np == AFRT_1X1B_NP2 && k0 + 4 * AFRT_NC_L <= K ? 4
                           : kb + 1 < Kb                                                   ? 2
                                                                                           : 1;
            const int64_t kn = afrt_min_(AFRT_NC_KT, K - k0);
            float bb[4 * AFRT_NC_L];
            for (int64_t k = 0; k < kt * AFRT_NC_L; ++k)
                bb[k] = bias && k0 + k < K ? bias[k0 + k] : 0.0f;
            const int64_t kn0 = afrt_min_(AFRT_NC_L, kn), kn1 = kn - kn0;
            const __mmask16 km0 = (__mmask16)((1u << kn0) - 1u);
            const __mmask16 km1 = (__mmask16)(kn1 > 0 ? (1u << kn1) - 1u : 0u);
            const float *wk = wb + (kb / 2) * Cb * AFRT_NC_L * AFRT_NC_KT;
            float *yq = yn + kb * plane + q0 * AFRT_NC_L;
            const float *zq = cl && cl->res ? cl->res + (yq - y) : NULL;
            afrt_1x1nb_tiles_(xq, C, bstep, cstep, xblk ? AFRT_NC_L : 1, wk, bb, yq, plane, km0,
                              km1, cl, zq, kt, np, nq);
            if (!cl && epi.fn)
                for (int h = 0; h < kt; ++h) {
                    const int64_t f0 = (yq - y) + h * plane;
                    afrt_nc_epilogue_blocked_(epi, y, f0, f0 + nq * AFRT_NC_L, hw);
                }
            kb += kt;
        }
    }
    return 1;
#else
    (void)x, (void)w, (void)bias, (void)y, (void)p, (void)epi, (void)flags;
    return 0;
#endif
}

/* ---------------------------------------------------------------------------------------------
 * direct_smallc_b (afrt_dconv_smallcb_f32): a stem conv -- at most AFRT_DC_MAX_C input
 * channels (the image), any R x S up to AFRT_DW_MAX_TAPS taps, stride 1 or 2 along rows, any
 * along columns, dilation 1, K a multiple of 16 -- from NCHW x into NCHW16c y: assign-layout's
 * stem in front of blocked pools and fire modules (SqueezeNet-1.1's 3 -> 64, 3x3/2 at 224x224,
 * docs/c-backend.md). afrt_dconv_smallc_f32 puts positions along the lanes and so needs phase
 * planes for strides; here the output channels go along the lanes, as onnxruntime's NCHWc
 * stem does: a register tile is 4 blocks (64 channels) x 6 consecutive positions of one output
 * row (24 accumulators); per tap (c, r, s) four weight vectors are loaded and each position's
 * input is broadcast straight from the image (stride_w floats apart: immediate offsets), so
 * nothing is copied unless the conv pads (then the image, zero-padded, into scratch slot 0).
 * Weights reordered to [K/64][C*R*S][64] (zeros past K; cached, side 5). The bias is the
 * accumulators' start; the built-in clamp (Relu; its residual in y's layout) is applied before
 * the only store, whole 64-byte lines; any other epilogue in its flat form on each finished
 * row of a block. Short tiles at a row's end are their own compiled shapes. Tasks are (image,
 * output row), static over OpenMP threads.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_SCB_NB 4 /* 16-channel blocks per register tile */
#define AFRT_SCB_NT 6 /* positions of one output row per register tile */

/* Whether afrt_dconv_smallcb_f32 runs this conv (clib.smallc_b_fits). */
static inline int afrt_dconv_smallcb_fits(const afrt_conv_params *p) {
    return p->group <= 1 && p->C >= 1 && p->C <= AFRT_DC_MAX_C && p->K >= AFRT_NC_L &&
           p->K % AFRT_NC_L == 0 && p->R * p->S > 1 && p->R * p->S <= AFRT_DW_MAX_TAPS &&
           (p->stride_w == 1 || p->stride_w == 2) && p->stride_h >= 1 && p->dil_h == 1 &&
           p->dil_w == 1 && p->pad_top >= 0 && p->pad_left >= 0 && p->pad_bottom >= 0 &&
           p->pad_right >= 0;
}

/* w [K][C*RS] reordered to [K/64][C*RS][64] (zeros past K) into dst. */
static inline void afrt_scb_pack_(const float *w, int64_t K, int64_t C, int64_t RS, float *dst) {
    const int64_t G = AFRT_SCB_NB * AFRT_NC_L, T = C * RS;
    for (int64_t g = 0; g < afrt_cdiv_(K, G); ++g)
        for (int64_t t = 0; t < T; ++t)
            for (int64_t k = 0; k < G; ++k) {
                const int64_t kk = g * G + k;
                dst[(g * T + t) * G + k] = kk < K ? w[kk * T + t] : 0.0f;
            }
}

#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
/* One register tile: 4 blocks x nt positions (a constant in every copy) of one output row,
 * from xq (the tile's first position's input at tap (0, 0, 0); channels cstep, rows rstep,
 * positions SW floats apart) and wk (the group's [C*R*S][64] weights), the biases bb[64] as
 * the start; block h stored at yq + h * plane for h < nb; *odd |= the stored lanes that are NaN
 * or -0.0 (odd NULL: not asked). */
static inline __attribute__((always_inline)) void afrt_scb_tile_(
    const float *restrict xq, int64_t C, int64_t cstep, int64_t R, int64_t S, int64_t rstep,
    const int SW, const float *restrict wk, const float *bb, float *restrict yq, int64_t plane,
    int64_t nb, const afrt_epi_clamp *cl, const float *zq, __mmask16 *odd, const int nt) {
    __m512 a[AFRT_SCB_NB][AFRT_SCB_NT];
    for (int h = 0; h < AFRT_SCB_NB; ++h) {
        const __m512 bv = _mm512_loadu_ps(bb + h * AFRT_NC_L);
        for (int j = 0; j < nt; ++j) a[h][j] = bv;
    }
    for (int64_t c = 0; c < C; ++c)
        for (int64_t r = 0; r < R; ++r) {
            const float *xr = xq + c * cstep + r * rstep;
            for (int64_t s = 0; s < S; ++s, wk += AFRT_SCB_NB * AFRT_NC_L) {
                __m512 wv[AFRT_SCB_NB];
                for (int h = 0; h < AFRT_SCB_NB; ++h) wv[h] = _mm512_loadu_ps(wk + h * AFRT_NC_L);
                for (int j = 0; j < nt; ++j) {
                    const __m512 xv = _mm512_set1_ps(xr[s + j * SW]);
                    for (int h = 0; h < AFRT_SCB_NB; ++h)
                        a[h][j] = _mm512_fmadd_ps(wv[h], xv, a[h][j]);
                }
            }
        }
    const __m512 lo = _mm512_set1_ps(cl ? cl->lo : 0.0f), hi = _mm512_set1_ps(cl ? cl->hi : 0.0f);
    const int up = cl && cl->hi != INFINITY; /* an infinite upper bound changes nothing */
    __mmask16 k = 0;
    for (int h = 0; h < AFRT_SCB_NB && h < nb; ++h)
        for (int j = 0; j < nt; ++j) {
            __m512 o = a[h][j];
            if (cl) { /* afrt_epi_clamp1_ on (o + residual), NaN kept */
                if (zq) o = _mm512_add_ps(o, _mm512_loadu_ps(zq + h * plane + j * AFRT_NC_L));
                o = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(o, lo, _CMP_NLE_UQ), o);
                if (up) o = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(o, hi, _CMP_NGE_UQ), o);
            }
            if (odd) k |= _mm512_fpclass_ps_mask(o, 0x85); /* NaN or -0.0 */
            _mm512_storeu_ps(yq + h * plane + j * AFRT_NC_L, o);
        }
    if (odd) *odd |= k;
}

/* Each tile width compiled on its own (SW and nt constants) */
#define AFRT_SCB_SHAPE_(name, SW, NT)                                                             \
    static void name(const float *restrict xq, int64_t C, int64_t cstep, int64_t R, int64_t S,   \
                     int64_t rstep, const float *restrict wk, const float *bb,                   \
                     float *restrict yq, int64_t plane, int64_t nb, const afrt_epi_clamp *cl,    \
                     const float *zq, __mmask16 *odd) {                                          \
        afrt_scb_tile_(xq, C, cstep, R, S, rstep, SW, wk, bb, yq, plane, nb, cl, zq, odd, NT);   \
    }
AFRT_SCB_SHAPE_(afrt_scb_s1n1_, 1, 1)
AFRT_SCB_SHAPE_(afrt_scb_s1n2_, 1, 2)
AFRT_SCB_SHAPE_(afrt_scb_s1n3_, 1, 3)
AFRT_SCB_SHAPE_(afrt_scb_s1n4_, 1, 4)
AFRT_SCB_SHAPE_(afrt_scb_s1n5_, 1, 5)
AFRT_SCB_SHAPE_(afrt_scb_s1n6_, 1, 6)
AFRT_SCB_SHAPE_(afrt_scb_s2n1_, 2, 1)
AFRT_SCB_SHAPE_(afrt_scb_s2n2_, 2, 2)
AFRT_SCB_SHAPE_(afrt_scb_s2n3_, 2, 3)
AFRT_SCB_SHAPE_(afrt_scb_s2n4_, 2, 4)
AFRT_SCB_SHAPE_(afrt_scb_s2n5_, 2, 5)
AFRT_SCB_SHAPE_(afrt_scb_s2n6_, 2, 6)
#undef AFRT_SCB_SHAPE_
typedef void (*afrt_scb_fn_)(const float *, int64_t, int64_t, int64_t, int64_t, int64_t,
                             const float *, const float *, float *, int64_t, int64_t,
                             const afrt_epi_clamp *, const float *, __mmask16 *);
static afrt_scb_fn_ const afrt_scb_fns_[2][AFRT_SCB_NT] = {
    {afrt_scb_s1n1_, afrt_scb_s1n2_, afrt_scb_s1n3_, afrt_scb_s1n4_, afrt_scb_s1n5_,
     afrt_scb_s1n6_},
    {afrt_scb_s2n1_, afrt_scb_s2n2_, afrt_scb_s2n3_, afrt_scb_s2n4_, afrt_scb_s2n5_,
     afrt_scb_s2n6_}};
#endif

#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
/* One output row of direct_smallc_b: xr its input rows (rstep, cstep apart), wb the packed
 * weights, yr the row's first position in block 0 and plane the floats between blocks; zr the
 * residual's row in y's layout (or NULL), pf the floats from a row to the next one to
 * prefetch for writing (0: none); odd (or NULL) gets the lanes of the stored outputs that are
 * NaN or -0.0 or-ed in (afrt_scb_maxpool_f32's exact / fast choice). Shared by afrt_dconv_smallcb_f32 (y the whole output) and
 * afrt_scb_maxpool_f32 (y a ring of rows, afrt_convchain.h). */
static inline __attribute__((always_inline)) void afrt_scb_row_(
    const float *restrict xr, const afrt_conv_params *p, int64_t rstep, int64_t cstep,
    const float *restrict wb, const float *bias, float *restrict yr, int64_t plane,
    const afrt_epi_clamp *cl, const float *zr, int64_t pf, __mmask16 *odd) {
    const int64_t C = p->C, K = p->K, R = p->R, S = p->S, OW = p->OW, T = C * R * S;
    const int64_t G = AFRT_SCB_NB * AFRT_NC_L, Kb = K / AFRT_NC_L, ng = afrt_cdiv_(K, G);
    for (int64_t g = 0; g < ng; ++g) {
        float gb[AFRT_SCB_NB * AFRT_NC_L];
        for (int64_t k = 0; k < G; ++k) gb[k] = bias && g * G + k < K ? bias[g * G + k] : 0.0f;
        const int64_t nb = afrt_min_(AFRT_SCB_NB, Kb - g * AFRT_SCB_NB);
        const float *wg = wb + g * T * G;
        float *yg = yr + g * AFRT_SCB_NB * plane;
        for (int64_t ow = 0; ow < OW; ow += AFRT_SCB_NT) {
            const int64_t nq = afrt_min_(AFRT_SCB_NT, OW - ow);
            float *yq = yg + ow * AFRT_NC_L;
            const float *zq = zr ? zr + (yq - yr) : NULL;
            if (pf)
                for (int64_t h = 0; h < nb; ++h)
                    for (int64_t j = 0; j < nq; ++j)
                        _mm_prefetch((const char *)(yq + h * plane + pf + j * AFRT_NC_L), _MM_HINT_ET0);
            afrt_scb_fns_[p->stride_w == 2][nq - 1](xr + ow * p->stride_w, C, cstep, R, S, rstep,
                                                   wg, gb, yq, plane, nb, cl, zq, odd);
        }
    }
}

/* The image direct_smallc_b reads: x itself when the conv does not pad, else (*xp) the
 * zero-padded image of one batch item in the calling thread's scratch slot 0 (*xp NULL when
 * memory is short). Its row and channel steps in *rstep, *cstep. */
static inline int afrt_scb_image_(const afrt_conv_params *p, float **xp, int64_t *rstep,
                                  int64_t *cstep) {
    const int64_t Hp = (p->OH - 1) * p->stride_h + p->R, Wp = (p->OW - 1) * p->stride_w + p->S;
    const int inplace = p->pad_top == 0 && p->pad_left == 0 && Hp <= p->H && Wp <= p->W;
    *xp = NULL;
    if (!inplace) {
        *xp = (float *)afrt_thread_scratch(0, (size_t)(p->C * Hp * Wp) * sizeof(float));
        if (!*xp) return 0;
    }
    *rstep = inplace ? p->W : Wp, *cstep = inplace ? p->H * p->W : Hp * Wp;
    return 1;
}

/* Image n of x as afrt_scb_image_ chose: x's own or padded into xp. */
static inline const float *afrt_scb_image_n_(const float *x, const afrt_conv_params *p,
                                             int64_t n, float *xp) {
    const float *xn = x + n * p->C * p->H * p->W;
    if (!xp) return xn;
    const int64_t Hp = (p->OH - 1) * p->stride_h + p->R, Wp = (p->OW - 1) * p->stride_w + p->S;
    for (int64_t c = 0; c < p->C; ++c)
        for (int64_t i = 0; i < Hp; ++i)
            for (int64_t j = 0; j < Wp; ++j) {
                const int64_t ih = i - p->pad_top, iw = j - p->pad_left;
                xp[(c * Hp + i) * Wp + j] = ih >= 0 && ih < p->H && iw >= 0 && iw < p->W
                                                ? xn[(c * p->H + ih) * p->W + iw]
                                                : 0.0f;
            }
    return xp;
}

/* The packed weights of direct_smallc_b (cached, side 5), or NULL when memory is short. */
static inline const float *afrt_scb_weights_(const float *w, const afrt_conv_params *p) {
    const int64_t G = AFRT_SCB_NB * AFRT_NC_L, T = p->C * p->R * p->S;
    return afrt_nc_cached_(w, p->K, p->C, p->R * p->S, 5, (size_t)(afrt_round_up_(p->K, G) * T),
                           afrt_scb_pack_);
}
#endif

/* direct_smallc_b (above): x NCHW, y NCHW16c. Returns 0 when the conv does not fit
 * (afrt_dconv_smallcb_fits), the build has no AVX-512 or memory is short: then nothing is
 * written and the caller runs afrt_nchwc_naive_f32. */
static inline int afrt_dconv_smallcb_f32(const float *x, const float *w, const float *bias,
                                         float *y, const afrt_conv_params *p, afrt_epilogue epi) {
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
    if (!afrt_dconv_smallcb_fits(p)) return 0;
    if (p->N <= 0 || p->OH <= 0 || p->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t K = p->K, OH = p->OH, OW = p->OW, Kb = K / AFRT_NC_L, ohw = OH * OW;
    const int64_t plane = ohw * AFRT_NC_L, T = p->C * p->R * p->S;
    const float *wb = afrt_scb_weights_(w, p);
    if (!wb) return 0;
    float *xp;
    int64_t rstep, cstep;
    if (!afrt_scb_image_(p, &xp, &rstep, &cstep)) return 0;
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    const int par = afrt_num_threads_ > 1 && OH > 1 && afrt_worth_threads_((double)p->N * K * ohw * T);
    (void)par; /* unused without OpenMP */
    for (int64_t n = 0; n < p->N; ++n) {
        const float *xn = afrt_scb_image_n_(x, p, n, xp);
        float *yn = y + n * Kb * plane;
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par))
        for (int64_t oh = 0; oh < OH; ++oh) {
            afrt_arrive_();
            float *yr = yn + oh * OW * AFRT_NC_L;
            const float *zr = cl && cl->res ? cl->res + (yr - y) : NULL;
            afrt_scb_row_(xn + oh * p->stride_h * rstep, p, rstep, cstep, wb, bias, yr, plane, cl,
                          zr, oh + 1 < OH ? OW * AFRT_NC_L : 0, NULL);
            if (!cl && epi.fn)
                for (int64_t h = 0; h < Kb; ++h) {
                    const int64_t f0 = (yr - y) + h * plane;
                    afrt_nc_epilogue_blocked_(epi, y, f0, f0 + OW * AFRT_NC_L, ohw);
                }
        }
    }
    return 1;
#else
    (void)x, (void)w, (void)bias, (void)y, (void)p, (void)epi;
    return 0;
#endif
}

#endif /* AFRT_NCHWC_H */
