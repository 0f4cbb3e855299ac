/*
 * afrt_convchain.h -- conv-chain fusion in spatial tiles for afrt.h (included by afrt.h after
 * afrt_dwconv.h; uses afrt_conv_params, afrt_epilogue, the depthwise phase-plane helpers and
 * the GEMM core's afrt_pack_a_all_ / afrt_gemm_tile_; it does not stand alone). Copied beside
 * afrt.h into every build and package folder.
 *
 *   afrt_dwpw_f32(x, wd, bd, lo, hi, wp, bp, y, &pd, &pp, epi)
 *
 * A depthwise convolution (pd: any kernel, stride, padding, dilation and channel multiplier
 * that afrt_dwconv2d_f32 takes) whose output, clamped to [lo, hi] (Relu: [0, inf], Relu6:
 * [0, 6], none: [-inf, inf]; NaN passes through as in ONNX), is the input of a 1x1 stride-1
 * unpadded group-1 convolution (pp) -- MobileNet-V2's and EfficientNet's depthwise ->
 * pointwise pair. The depthwise output (C x OH x OW; 4.8 MB at 96 x 112 x 112) never goes to
 * memory: per task (image, band of output rows) the band's depthwise rows of all channels are
 * computed into a per-thread tile T [C, band * OW] sized to stay in L2
 * (AFRT_CC_TILE_BYTES), and the pointwise GEMM Y[:, band] = Wp . T runs on it at once
 * through the GEMM core (packed Wp, cached for constant weights), then the pointwise bias and
 * the epilogue (afrt_epilogue's conv contract: rows = output channels, cols = positions of
 * the whole image, ld = OH * OW) on the finished block [0, K) x band.
 *
 * No halo: a 1x1 pointwise conv needs exactly its own rows of the depthwise output; the
 * depthwise band reads its input rows (with the kernel's overlap) straight from x through
 * the phase-plane fill, whose pad_top is shifted by the band's first row (it may go
 * negative: rows outside [0, H) read as zero either way).
 *
 * Returns 0 (nothing written) if the pair does not qualify (afrt_dwpw_applies). Without
 * scratch memory for the tiles it runs the two convolutions apart through a whole
 * intermediate (returns 0 if even that cannot be had).
 */
#ifndef AFRT_CONVCHAIN_H
#define AFRT_CONVCHAIN_H

/* Columns (band rows x OW) a band aims at: one GEMM column block (AFRT_NC). */
#ifndef AFRT_CC_COLS
#define AFRT_CC_COLS 512
#endif
/* Bytes of the depthwise tile T at most (with the packed B block it stays in a 2 MiB L2). */
#ifndef AFRT_CC_TILE_BYTES
#define AFRT_CC_TILE_BYTES (256 * 1024)
#endif

/* Whether afrt_dwpw_f32 takes the pair (pd depthwise, pp its 1x1 reader). */
static inline int afrt_dwpw_applies(const afrt_conv_params *pd, const afrt_conv_params *pp) {
    return afrt_dwconv_applies(pd) && pp->N == pd->N && pp->C == pd->K && pp->H == pd->OH &&
           pp->W == pd->OW && pp->R == 1 && pp->S == 1 && pp->stride_h == 1 &&
           pp->stride_w == 1 && pp->pad_top == 0 && pp->pad_left == 0 && pp->pad_bottom == 0 &&
           pp->pad_right == 0 && pp->OH == pp->H && pp->OW == pp->W && (pp->group <= 1);
}

/* Output rows per band: about AFRT_CC_COLS columns, T within AFRT_CC_TILE_BYTES, and at
 * least two tasks per thread when there are threads. */
static inline int64_t afrt_cc_band_rows_(const afrt_conv_params *pd, int nth) {
    const int64_t ow = afrt_max_(1, pd->OW), oh = afrt_max_(1, pd->OH);
    int64_t th = afrt_max_(1, afrt_cdiv_(AFRT_CC_COLS, ow));
    const int64_t cap = AFRT_CC_TILE_BYTES / (int64_t)sizeof(float) / afrt_max_(1, pd->K * ow);
    th = afrt_min_(oh, afrt_max_(1, afrt_min_(th, cap)));
    while (nth > 1 && th > 1 && pd->N * afrt_cdiv_(oh, th) < 2 * (int64_t)nth) th = afrt_cdiv_(th, 2);
    return th;
}

/* Depthwise rows [oh0, oh1) of image n, all channels, clamped, into t [K, (oh1-oh0) * OW];
 * xp: scratch of afrt_cc_dw_floats_(pd, th) floats (bands of at most th rows). Channels in
 * vector lanes where afrt_dwl_applies (afrt_dwconv.h), else the phase planes. */
static inline void afrt_cc_dw_band_(const float *x, const float *w, const float *bias, float lo,
                                    float hi, const afrt_conv_params *pd, int64_t th, int64_t n,
                                    int64_t oh0, int64_t oh1, float *xp, float *t) {
    const int64_t cols = (oh1 - oh0) * pd->OW;
    if (afrt_dwl_applies(pd)) {
        const afrt_dwl_geom_ g = afrt_dwl_geom_init_(pd, th);
        for (int64_t k0 = 0; k0 < pd->K; k0 += AFRT_DWL_L)
            afrt_dwl_task_(x, w, bias, pd, &g, n, k0, afrt_min_(AFRT_DWL_L, pd->K - k0), oh0, oh1,
                           1, lo, hi, xp, t + k0 * cols, cols);
        return;
    }
    afrt_conv_params pb = *pd;
    pb.N = 1;
    pb.OH = oh1 - oh0;
    pb.pad_top = pd->pad_top - oh0 * pd->stride_h;
    afrt_dw_geom_ g;
    afrt_dw_geom_init_(&pb, &g);
    const int64_t hw = pd->H * pd->W, kg = pd->K / pd->C;
    float *wide = xp + g.total + 16;
    for (int64_t k = 0; k < pd->K; ++k) {
        if (k == 0 || k % kg == 0) afrt_dw_fill_(x + (n * pd->C + k / kg) * hw, &pb, &g, xp);
        afrt_dw_correlate_(xp, &g, w + k * g.taps, wide);
        float *tk = t + k * cols;
        afrt_dw_compact_(wide, &pb, g.lp, bias ? bias[k] : 0.0f, tk);
        for (int64_t i = 0; i < cols; ++i) {
            const float v = tk[i];
            tk[i] = v < lo ? lo : (v > hi ? hi : v);
        }
    }
}

/* Floats of the depthwise scratch for bands of at most th rows: the lanes tiles, or the phase
 * planes + wide rows of the largest band (the first band's geometry is the largest: the
 * shifted pad only moves rows). */
static inline int64_t afrt_cc_dw_floats_(const afrt_conv_params *pd, int64_t th) {
    if (afrt_dwl_applies(pd)) return afrt_dwl_geom_init_(pd, afrt_min_(th, pd->OH)).floats;
    afrt_conv_params pb = *pd;
    pb.N = 1;
    pb.OH = afrt_min_(th, pd->OH);
    afrt_dw_geom_ g;
    afrt_dw_geom_init_(&pb, &g);
    return g.total + 16 + g.nqv;
}

/* The two convolutions apart, through a whole intermediate: the fallback. Out of memory for
 * the intermediate, it records the fault (y is incomplete) and returns 0. */
static inline int afrt_dwpw_apart_(const float *x, const float *wd, const float *bd, float lo,
                                   float hi, const float *wp, const float *bp, float *y,
                                   const afrt_conv_params *pd, const afrt_conv_params *pp,
                                   afrt_epilogue epi) {
    const size_t n = (size_t)(pd->N * pd->K * pd->OH * pd->OW);
    float *mid = (float *)afrt_malloc_(n * sizeof(float));
    if (!mid) {
        afrt_nomem_("afrt_dwpw_f32");
        return 0;
    }
    afrt_conv2d_f32(x, wd, bd, mid, pd, NULL, afrt_no_epilogue());
    for (size_t i = 0; i < n; ++i) {
        const float v = mid[i];
        mid[i] = v < lo ? lo : (v > hi ? hi : v);
    }
    afrt_conv2d_f32(mid, wp, bp, y, pp, NULL, epi);
    free(mid);
    return 1;
}

/* Pointwise output channels the blocked band needs at least (clib.CC_BLOCKED_MIN_K). */
#define AFRT_CC_BLOCKED_MIN_K 16
/* Whether afrt_dwpw_f32 takes the blocked band (below; clib.dwpw_algo mirrors it): an
 * AVX-512 build, channel lanes for the depthwise conv (afrt_dwl_applies) and at least 16
 * pointwise output channels. K = 16 runs the 16-wide tile (afrt_cc_uk16_); fewer would leave
 * lanes of it empty, as 16 left half of the 32-wide tile (MobileNet-V2's 32 -> 16 at 112x112
 * measured 1.05-1.16x the NCHW band on that tile, session 18). */
static inline int afrt_cc_blocked_applies(const afrt_conv_params *pd, const afrt_conv_params *pp) {
#if defined(__AVX512F__)
    return afrt_dwl_applies(pd) && pp->K >= AFRT_CC_BLOCKED_MIN_K;
#else
    (void)pd, (void)pp;
    return 0;
#endif
}

#if defined(__AVX512F__)
/* ---------------------------------------------------------------------------------------------
 * The blocked band (AVX-512, afrt_dwl_applies): the depthwise output is never transposed.
 * Per band the channel-lane kernel's output tiles O[n][16] (16 channels in the lanes, one
 * tile per block of 16 channels, ldo floats apart) are kept as they are, and the pointwise
 * conv is computed transposed, Y^T[positions x K] = D^T[positions x C] . Wp^T[C x K]: the
 * rows of D^T are read straight from the tiles (row i of block b at o + b * ldo + i * 16,
 * a broadcast per row and k step), Wp^T is the packed-operand cache's B panels. Only the
 * pointwise output (K channels, 6x fewer than C in MobileNet-V2's blocks) is transposed, on
 * its way into y, where the bias and the epilogue are applied as in gemm_1x1_t.
 * ------------------------------------------------------------------------------------------- */
/* The k loop of a 12 x 32 tile with A in 16-channel blocks: a(i, k) at
 * a + (k / 16) * lda + i * 16 + k % 16 (lda: floats between blocks; a at a block's first
 * channel, so AFRT_KC must be a multiple of 16). */
#if AFRT_KC % 16
#error "the blocked band starts k blocks at 16-channel block boundaries: AFRT_KC % 16 == 0"
#endif
#define AFRT_UK_ZMM_KLOOP_BA_(MRV)                                                             \
    for (int64_t k = 0; k < kc; ++k) {                                                         \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), AFRT_PF_HINT);                      \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K + 16), AFRT_PF_HINT);                 \
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);                    \
        const float *ak = a + (k >> 4) * lda + (k & 15);                                       \
        AFRT_UK_ZMM_RANK1_ROWS_(MRV, ak, b0, b1);                                              \
        b += AFRT_NR;                                                                          \
    }                                                                                          \
    (void)0
#define AFRT_UK_ZMM_RANK1_ROWS_(MRV, AK, B0, B1)                                               \
    for (int i = 0; i < MRV; ++i) {                                                            \
        const __m512 ai = _mm512_set1_ps((AK)[i * AFRT_DWL_L]);                                \
        c0[i] = _mm512_fmadd_ps(ai, B0, c0[i]);                                                \
        c1[i] = _mm512_fmadd_ps(ai, B1, c1[i]);                                                \
    }                                                                                          \
    (void)0
AFRT_DEFINE_UKERNEL_(afrt_ukernel12_ba_, 12, AFRT_UK_A_ROWS_, AFRT_UK_ZMM_KLOOP_BA_)
AFRT_DEFINE_UKERNEL_(afrt_ukernel8_ba_, 8, AFRT_UK_A_ROWS_, AFRT_UK_ZMM_KLOOP_BA_)
AFRT_DEFINE_UKERNEL_(afrt_ukernel7_ba_, 7, AFRT_UK_A_ROWS_, AFRT_UK_ZMM_KLOOP_BA_)

/* The 16-wide tile for K <= 16 pointwise output channels (MobileNet-V2's and MnasNet's
 * first block, 32 -> 16 at 112x112): MRV rows x the first 16 columns of each B panel row
 * (the panel is still AFRT_NR wide, its columns past K zeros), one accumulator a row, run
 * on two row tiles at a time (2 x 12, 2 x 8, 2 x 7: one B load per 24, 16 or 14 FMAs; one
 * row tile at a time measured even, docs/runtime.md "The first block in blocks"); the
 * 32-wide tile would compute 16 zero columns. Each element's sum is one fmadd per k from
 * zero, in k order, as in the 32-wide tile. */
#define AFRT_CC_UK16_(NAME, MRV)                                                               \
    static inline void NAME(int64_t kc, const float *restrict a, int64_t lda,                  \
                            const float *restrict b, float *restrict c, int64_t ldc, int acc) { \
        __m512 c0[MRV];                                                                        \
        _Pragma("GCC unroll 24") for (int i = 0; i < MRV; ++i) c0[i] = _mm512_setzero_ps();    \
        for (int64_t k = 0; k < kc; ++k) {                                                     \
            const __m512 b0 = _mm512_loadu_ps(b);                                              \
            const float *ak = a + (k >> 4) * lda + (k & 15);                                   \
            _Pragma("GCC unroll 24") for (int i = 0; i < MRV; ++i) c0[i] =                     \
                _mm512_fmadd_ps(_mm512_set1_ps(ak[i * AFRT_DWL_L]), b0, c0[i]);                \
            b += AFRT_NR;                                                                      \
        }                                                                                      \
        _Pragma("GCC unroll 24") for (int i = 0; i < MRV; ++i) {                               \
            if (acc) c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(c + i * ldc));               \
            _mm512_storeu_ps(c + i * ldc, c0[i]);                                              \
        }                                                                                      \
    }
AFRT_CC_UK16_(afrt_cc_uk16x24_, 24)
AFRT_CC_UK16_(afrt_cc_uk16x16_, 16)
AFRT_CC_UK16_(afrt_cc_uk16x14_, 14)
AFRT_CC_UK16_(afrt_cc_uk16x12_, 12)
AFRT_CC_UK16_(afrt_cc_uk16x8_, 8)
AFRT_CC_UK16_(afrt_cc_uk16x7_, 7)

/* Rows [ic, ic + n) of the band's Y^T through the 16-wide tile: n = mr (12, 8 or 7) or 2 mr. */
static inline void afrt_cc_uk16_(int64_t n, int64_t kc, const float *a, int64_t lda,
                                 const float *b, float *c, int64_t ldc, int acc) {
    switch (n) {
    case 24: afrt_cc_uk16x24_(kc, a, lda, b, c, ldc, acc); break;
    case 16: afrt_cc_uk16x16_(kc, a, lda, b, c, ldc, acc); break;
    case 14: afrt_cc_uk16x14_(kc, a, lda, b, c, ldc, acc); break;
    case 12: afrt_cc_uk16x12_(kc, a, lda, b, c, ldc, acc); break;
    case 8: afrt_cc_uk16x8_(kc, a, lda, b, c, ldc, acc); break;
    default: afrt_cc_uk16x7_(kc, a, lda, b, c, ldc, acc); break;
    }
}

/* Row-tile height for a band of `cols` positions: 12 unless 8- or 7-row tiles (whichever pads
 * less, 8 on a tie) would compute more than 8% fewer rows: a 7x7 map's 49 positions in 7
 * tiles of 7, not 60 rows of which 11 are zeros; a 4x4 map's 16 in 2 of 8, not 24; bands of 7
 * rows of 14 in 7-row tiles. A smaller tile does fewer FMAs per load and store of its
 * accumulators: 7 rows measured 4-6% slower on MobileNet-V2's 56x56 bands of 448 positions,
 * which they pad 2% less than 12. */
static inline int64_t afrt_cc_mr_(int64_t cols) {
    const int64_t r7 = afrt_round_up_(cols, 7), r8 = afrt_round_up_(cols, 8);
    const int64_t mr = r7 < r8 ? 7 : 8;
    return 25 * afrt_round_up_(cols, 12) > 27 * afrt_min_(r7, r8) ? mr : 12;
}

/* Positions of a band's tiles: the band's rows x OW rounded up to whole row tiles of either
 * height (a band of fewer rows may take the other one, afrt_cc_mr_). */
static inline int64_t afrt_cc_rows_pad_(const afrt_conv_params *pd, int64_t th) {
    const int64_t n = th * pd->OW;
    return afrt_max_(afrt_round_up_(n, 12), afrt_max_(afrt_round_up_(n, 8), afrt_round_up_(n, 7)));
}

/* Scratch floats of the blocked band: the lane kernel's tile T, its weights and bias, the
 * depthwise output blocks O (ceil(C/16) x npad x 16) and the pointwise output tile
 * (npad x K rounded up to 32). */
static inline int64_t afrt_cc_blocked_floats_(const afrt_conv_params *pd,
                                              const afrt_conv_params *pp, int64_t th) {
    const afrt_dwl_geom_ g = afrt_dwl_geom_init_(pd, th);
    const int64_t npad = afrt_cc_rows_pad_(pd, th), nblk = afrt_cdiv_(pd->K, AFRT_DWL_L);
    const int64_t tw = (g.tile_rows * g.pitch + AFRT_DWL_L * (pd->R * pd->S + 1) + 15) / 16 * 16;
    return tw + nblk * npad * AFRT_DWL_L + npad * afrt_round_up_(pp->K, AFRT_NR);
}

/* The expand 1x1 conv in front of a chain (afrt_edwpw_f32): p a 1x1 stride-1 unpadded
 * group-1 conv from NCHW x (p->C channels) into the depthwise conv's input, bias b (or NULL),
 * its output clamped to [lo, hi]. */
typedef struct {
    const float *w, *b;
    float lo, hi;
    const afrt_conv_params *p;
} afrt_cc_expand_;

/* NB consecutive positions of one input row (xr: channel 0 at xr, channel c at xr + c * hw)
 * through one 16-channel block of the expand (wpk[ci][16], bias b) into d[NB][16]: per input
 * channel one weight vector and NB broadcast FMAs (ci is small: 16-32). */
static inline __attribute__((always_inline)) void afrt_cc_expand_run_(
    const float *restrict xr, int64_t hw, int64_t ci, const float *restrict wpk, __m512 b,
    __m512 lov, __m512 hiv, float *restrict d, const int NB) {
    __m512 a[16];
    AFRT_DWL_UNROLL_(GCC unroll 16)
    for (int j = 0; j < NB; ++j) a[j] = b;
    for (int64_t c = 0; c < ci; ++c) {
        const __m512 w = _mm512_loadu_ps(wpk + c * AFRT_DWL_L);
        const float *xc = xr + c * hw;
        AFRT_DWL_UNROLL_(GCC unroll 16)
        for (int j = 0; j < NB; ++j) a[j] = _mm512_fmadd_ps(_mm512_set1_ps(xc[j]), w, a[j]);
    }
    AFRT_DWL_UNROLL_(GCC unroll 16)
    for (int j = 0; j < NB; ++j) {
        __m512 v = a[j]; /* NaN passes through, as in afrt_dwl_block_ */
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lov, _CMP_NLE_UQ), lov, v);
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hiv, _CMP_NGE_UQ), hiv, v);
        _mm512_storeu_ps(d + j * AFRT_DWL_L, v);
    }
}

/* afrt_dwl_fill_'s tile of one 16-channel block, computed by the expand instead of read: xn
 * the expand's input image (ci channels of p->H x p->W), wpk[ci][16] and bpk[16] the block's
 * weights and bias (zero past the channel count). Pad rows and columns stay zero (the
 * depthwise conv pads the clamped expand output). */
static inline void afrt_cc_fill_expand_(const float *restrict xn, int64_t ci,
                                        const float *restrict wpk, const float *restrict bpk,
                                        float lo, float hi, const afrt_conv_params *p,
                                        const afrt_dwl_geom_ *g, int64_t r0, int64_t rows,
                                        float *restrict t) {
    const int64_t W = p->W, hw = p->H * W, pl = p->pad_left, L = AFRT_DWL_L;
    const __m512 b = _mm512_loadu_ps(bpk), lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
    for (int64_t u = 0; u < rows; ++u) {
        float *tr = t + u * g->pitch;
        const int64_t ih = r0 + u - p->pad_top;
        if (!afrt_dwl_pad_row_(tr, ih, p, g)) continue;
        const float *xr = xn + ih * W;
        float *d = tr + pl * L;
        int64_t iw = 0;
        for (; iw + 16 <= W; iw += 16)
            afrt_cc_expand_run_(xr + iw, hw, ci, wpk, b, lov, hiv, d + iw * L, 16);
        if (iw + 8 <= W) {
            afrt_cc_expand_run_(xr + iw, hw, ci, wpk, b, lov, hiv, d + iw * L, 8);
            iw += 8;
        }
        if (iw + 4 <= W) {
            afrt_cc_expand_run_(xr + iw, hw, ci, wpk, b, lov, hiv, d + iw * L, 4);
            iw += 4;
        }
        for (; iw < W; ++iw) afrt_cc_expand_run_(xr + iw, hw, ci, wpk, b, lov, hiv, d + iw * L, 1);
    }
}

/* One band [oh0, oh1) of image n through the blocked path (pb: Wp^T's packed B panels), over
 * the depthwise channel blocks [b0, b1) (all: nblk blocks; fewer: the small-map split,
 * afrt_cc_ksplit_). With store the band's Y^T goes into y with the bias and the epilogue;
 * without, it stays in the returned tile (positions x Np, Np = K rounded up to AFRT_NR), the
 * sum over the blocks' channels only. */
static inline float *afrt_cc_blocked_band_(const float *x, const float *wd, const float *bd,
                                           float lo, float hi, const float *pb, const float *bp,
                                           float *y, const afrt_conv_params *pd,
                                           const afrt_conv_params *pp, int64_t th, int64_t n,
                                           int64_t oh0, int64_t oh1, float *s, afrt_epilogue epi,
                                           int xblk, const afrt_cc_expand_ *ex, int64_t b0,
                                           int64_t b1, int store) {
    const afrt_dwl_geom_ g = afrt_dwl_geom_init_(pd, th);
    const int64_t C = pd->K, K = pp->K, L = AFRT_DWL_L, taps = pd->R * pd->S;
    const int64_t nrow = oh1 - oh0, cols = nrow * pd->OW, ohw = pd->OH * pd->OW;
    const int64_t mr = afrt_cc_mr_(cols), mt = afrt_round_up_(cols, mr);
    const int64_t npad = afrt_cc_rows_pad_(pd, th), ldo = npad * L;
    const int64_t Np = afrt_round_up_(K, AFRT_NR), nblk = afrt_cdiv_(C, L);
    float *t = s, *wv = t + g.tile_rows * g.pitch, *bv = wv + L * taps;
    float *o = s + (g.tile_rows * g.pitch + L * (taps + 1) + 15) / 16 * 16;
    float *tmp = o + nblk * ldo;
    const int64_t rows = (nrow - 1) * pd->stride_h + pd->R;
    const int64_t ci = ex ? ex->p->C : 0;
    float *ew = tmp + npad * Np, *eb = ew + ci * L; /* the expand's block weights W^T, bias */
    for (int64_t b = b0; b < b1; ++b) {
        const int64_t k0 = b * L, nc = afrt_min_(L, C - k0);
        for (int64_t i = 0; i < taps; ++i)
            for (int64_t l = 0; l < L; ++l) wv[i * L + l] = l < nc ? wd[(k0 + l) * taps + i] : 0.0f;
        for (int64_t l = 0; l < L; ++l) bv[l] = bd && l < nc ? bd[k0 + l] : 0.0f;
        if (ex) { /* the expand's channels [k0, k0 + nc) of the band's input rows, computed */
            for (int64_t c = 0; c < ci; ++c)
                for (int64_t l = 0; l < L; ++l) ew[c * L + l] = l < nc ? ex->w[(k0 + l) * ci + c] : 0.0f;
            for (int64_t l = 0; l < L; ++l) eb[l] = ex->b && l < nc ? ex->b[k0 + l] : 0.0f;
            afrt_cc_fill_expand_(x + n * ci * pd->H * pd->W, ci, ew, eb, ex->lo, ex->hi, pd, &g,
                                 oh0 * pd->stride_h, rows, t);
        } else if (xblk) /* x in NCHW16c: block b of image n is one [H][W][16] plane */
            afrt_dwl_fill_blocked_(x + (n * nblk + b) * pd->H * pd->W * L, pd, &g,
                                   oh0 * pd->stride_h, rows, t);
        else
            afrt_dwl_fill_(x + (n * pd->C + k0) * pd->H * pd->W, nc, pd, &g, oh0 * pd->stride_h,
                           rows, t);
        float *ob = o + (b - b0) * ldo;
        afrt_dwl_rows_(t, pd, &g, nrow, wv, bv, 1, lo, hi, ob);
        /* the last row tile's rows past the band: zeros (their outputs are dropped) */
        for (int64_t i = cols * L; i < mt * L; ++i) ob[i] = 0.0f;
    }
    /* Y^T (mt x Np) = D^T (mt x C) . Wp^T, k blocks of AFRT_KC as the B panels are packed
     * (the lanes of channels past C are never read: k stops at C). Each row tile reads a
     * whole k block of its B panel: splitting it into 32-step segments, as gemm_1x1_t does
     * for cold weights, measured 5% slower here (the accumulators reload per segment). */
    const int64_t c0 = b0 * L, c1 = afrt_min_(C, b1 * L);
    for (int64_t pc = c0 / AFRT_KC * AFRT_KC; pc < c1; pc += AFRT_KC) {
        /* the channels [ka, kb) of this k block that the blocks hold: rows ka - pc on of
         * each of its B panels (kc x AFRT_NR, row-major) */
        const int64_t kc = afrt_min_(AFRT_KC, C - pc);
        const int64_t ka = afrt_max_(pc, c0), kn = afrt_min_(pc + kc, c1) - ka;
        const float *ak = o + ((ka - c0) / L) * ldo;
        if (K <= 16) { /* one 16-wide column tile (afrt_cc_uk16_), two row tiles at a time */
            const float *bj = pb + pc * Np + (ka - pc) * AFRT_NR;
            for (int64_t ic = 0; ic < mt;) {
                const int64_t nr = ic + 2 * mr <= mt ? 2 * mr : mr;
                afrt_cc_uk16_(nr, kn, ak + ic * L, ldo, bj, tmp + ic * Np, Np, ka > c0);
                ic += nr;
            }
            continue;
        }
        for (int64_t jr = 0; jr < Np; jr += AFRT_NR)
            for (int64_t ic = 0; ic < mt; ic += mr) {
                const float *bj = pb + pc * Np + jr * kc + (ka - pc) * AFRT_NR;
                float *cj = tmp + ic * Np + jr;
                if (mr == 7)
                    afrt_ukernel7_ba_(kn, ak + ic * L, ldo, bj, cj, Np, ka > c0);
                else if (mr == 8)
                    afrt_ukernel8_ba_(kn, ak + ic * L, ldo, bj, cj, Np, ka > c0);
                else
                    afrt_ukernel12_ba_(kn, ak + ic * L, ldo, bj, cj, Np, ka > c0);
            }
    }
    if (!store) return tmp;
    float *yn = y + n * K * ohw;
    const int64_t q0 = oh0 * pd->OW;
    /* the band's Y^T tile into the NCHW rows (afrt.h's transposing store) */
    afrt_store_transposed_(tmp, Np, cols, mt, K, bp, yn + q0, ohw);
    afrt_finish_block_(yn, NULL, n, 0, K, q0, q0 + cols, ohw, epi);
    return tmp;
}

/* Bands of the blocked run: as many as one thread's tile budget needs (afrt_cc_band_rows_),
 * then with nth threads the fewest at or above that whose tasks (images x bands) deal evenly
 * over the threads (at most one band per output row; if none does, afrt_cc_band_rows_' two
 * tasks a thread). Every band reads all of Wp^T, so more bands than the threads need read it
 * again for fewer rows: the two-tasks-a-thread rule cut a 7x7 map into 4 bands (1 + 2 rows
 * against 2 + 2) and a 14x14 one into 4, and left 7 bands of a 56x56 map as 4 + 3 per thread
 * (docs/runtime.md, "MobileNet-V2 at two threads (session 21)"). */
static inline int64_t afrt_cc_blocked_bands_(const afrt_conv_params *pd, int nth) {
    const int64_t oh = afrt_max_(1, pd->OH), n = afrt_max_(1, pd->N);
    const int64_t nb = afrt_cdiv_(oh, afrt_cc_band_rows_(pd, 1));
    if (nth <= 1) return nb;
    for (int64_t e = nb; e <= oh; ++e)
        if ((n * e) % nth == 0) return e;
    return afrt_cdiv_(oh, afrt_cc_band_rows_(pd, nth));
}

/* A small map in one band (one image, at most AFRT_CC_KSPLIT_POS positions: MobileNet-V2's
 * 7x7 maps) with more than one k block of channels (AFRT_KC) is split by its depthwise
 * channels, not its rows: part 0 takes the whole k blocks nearest half the channels, part 1
 * the rest, each its blocks' depthwise output and its share of the pointwise sums (and of
 * Wp^T); the output is part 0 + part 1, then the bias, the transposing store and the
 * epilogue, 16 output channels a task. Rows split a 7x7 map 3 + 4 at two threads, each thread
 * reading all of Wp^T (960 x 160: 614 KB): the busiest of two threads took 0.100-0.116 ms of
 * 0.150 on one; halves not on a k block boundary (480 + 480) cost a short k segment and
 * were ~10% slower on one thread (docs/runtime.md, "MobileNet-V2 at two threads (session
 * 21)"). The parts are the same at any thread count (one thread runs both), so the bits are. */
#ifndef AFRT_CC_KSPLIT_POS
#define AFRT_CC_KSPLIT_POS 64
#endif
static inline int afrt_cc_ksplit_(const afrt_conv_params *pd, const afrt_cc_expand_ *ex) {
    return !ex && pd->N == 1 && pd->OH * pd->OW <= AFRT_CC_KSPLIT_POS &&
           afrt_cc_blocked_bands_(pd, 1) == 1 && pd->K > AFRT_KC;
}

static inline int afrt_cc_ksplit_run_(const float *x, const float *wd, const float *bd, float lo,
                                      float hi, const float *pb, const float *bp, float *y,
                                      const afrt_conv_params *pd, const afrt_conv_params *pp,
                                      afrt_epilogue epi, int xblk, double work) {
    const int64_t C = pd->K, K = pp->K, ohw = pd->OH * pd->OW, nblk = afrt_cdiv_(C, AFRT_DWL_L);
    const int64_t Np = afrt_round_up_(K, AFRT_NR), mt = afrt_round_up_(ohw, afrt_cc_mr_(ohw));
    const int par = afrt_num_threads_ > 1 && afrt_worth_threads_(work);
    (void)par; /* unused without OpenMP */
    const size_t need = (size_t)afrt_cc_blocked_floats_(pd, pp, pd->OH) * sizeof(float);
    const int64_t kb = AFRT_KC / AFRT_DWL_L, mid = afrt_max_(1, (nblk / 2 + kb / 2) / kb) * kb;
    float *part[2] = {NULL, NULL};
    int failed = 0;
    AFRT_OMP(parallel num_threads(afrt_threads_now()) if (par))
    {
        AFRT_OMP(for schedule(static))
        for (int64_t q = 0; q < 2; ++q) {
            afrt_arrive_();
            /* part 1 in its own slot: on one thread part 0's sums must outlive it */
            float *s = (float *)afrt_thread_scratch(q == 0 ? 0 : 14, need);
            if (!s) {
                afrt_flag_set_(&failed);
                continue;
            }
            part[q] = afrt_cc_blocked_band_(x, wd, bd, lo, hi, pb, bp, y, pd, pp, pd->OH, 0, 0,
                                            pd->OH, s, epi, xblk, NULL, q ? mid : 0,
                                            q ? nblk : mid, 0);
        }
        if (!failed) {
            AFRT_OMP(for schedule(static))
            for (int64_t k0 = 0; k0 < K; k0 += 16) {
                afrt_arrive_();
                const int64_t k1 = afrt_min_(K, k0 + 16);
                float *t0 = part[0] + k0;
                const float *t1 = part[1] + k0;
                for (int64_t i = 0; i < ohw; ++i)
                    _mm512_storeu_ps(t0 + i * Np, _mm512_add_ps(_mm512_loadu_ps(t0 + i * Np),
                                                               _mm512_loadu_ps(t1 + i * Np)));
                afrt_store_transposed_(t0, Np, ohw, mt, k1 - k0, bp ? bp + k0 : NULL,
                                       y + k0 * ohw, ohw);
                afrt_finish_block_(y, NULL, 0, k0, k1, 0, ohw, ohw, epi);
            }
        }
    }
    return !failed;
}

/* Runs the blocked band (afrt_cc_blocked_band_) over every image and band of rows: bands of
 * (nearly) equal height, band b rows [b*OH/nb, (b+1)*OH/nb), since a short last band would
 * read every B panel (pb, Wp^T packed) for few rows, and the threads get even shares. With
 * ex the expand 1x1 runs inside each band (its work counts toward threading, its input rows
 * take per-thread scratch). Returns 1 when done, 0 when a thread's scratch ran out (the caller
 * then takes another path, which rewrites all of y). */
static inline int afrt_cc_blocked_run_(const float *x, const float *wd, const float *bd,
                                       float lo, float hi, const float *pb, const float *bp,
                                       float *y, const afrt_conv_params *pd,
                                       const afrt_conv_params *pp, afrt_epilogue epi, int xblk,
                                       const afrt_cc_expand_ *ex) {
    const int64_t C = pd->K, K = pp->K, ohw = pd->OH * pd->OW;
    double work = (double)pd->N * (double)ohw *
                  ((double)C * (double)K + AFRT_SLOW_WORK * (double)C * pd->R * pd->S);
    size_t extra = 0;
    if (ex) {
        const afrt_conv_params *pe = ex->p;
        work += (double)pe->N * (double)pe->OH * pe->OW * (double)pe->C * (double)pe->K;
        extra = (size_t)((pe->C + 1) * AFRT_DWL_L);
    }
    if (afrt_cc_ksplit_(pd, ex))
        return afrt_cc_ksplit_run_(x, wd, bd, lo, hi, pb, bp, y, pd, pp, epi, xblk, work);
    const int par = afrt_num_threads_ > 1 && afrt_worth_threads_(work);
    const int64_t nbands = afrt_cc_blocked_bands_(pd, par ? afrt_num_threads_ : 1);
    const int64_t th = afrt_cdiv_(pd->OH, nbands), tasks = pd->N * nbands;
    const size_t need = ((size_t)afrt_cc_blocked_floats_(pd, pp, th) + extra) * sizeof(float);
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t task = 0; task < tasks; ++task) {
        afrt_arrive_();
        float *s = (float *)afrt_thread_scratch(0, need);
        if (!s) {
            afrt_flag_set_(&failed);
            continue;
        }
        const int64_t n = task / nbands, b = task % nbands;
        afrt_cc_blocked_band_(x, wd, bd, lo, hi, pb, bp, y, pd, pp, th, n, b * pd->OH / nbands,
                              (b + 1) * pd->OH / nbands, s, epi, xblk, ex, 0,
                              afrt_cdiv_(pd->K, AFRT_DWL_L), 1);
    }
    return !failed;
}
#endif

static inline int afrt_dwpw_ex_f32(const float *x, const float *wd, const float *bd, float lo,
                                   float hi, const float *wp, const float *bp, float *y,
                                   const afrt_conv_params *pd, const afrt_conv_params *pp,
                                   afrt_epilogue epi, int flags);

/* x in NCHW16c (pd->C channels) reordered into a malloc'd NCHW copy, then the NCHW paths:
 * the fallback of a blocked input where the blocked band does not run (no AVX-512, weights
 * fed at run time, out of scratch). Returns 0 if even the copy cannot be had. */
static inline int afrt_dwpw_unblocked_(const float *x, const float *wd, const float *bd, float lo,
                                       float hi, const float *wp, const float *bp, float *y,
                                       const afrt_conv_params *pd, const afrt_conv_params *pp,
                                       afrt_epilogue epi) {
    const int64_t C = pd->C, hw = pd->H * pd->W, L = AFRT_NC_L, Cb = afrt_cdiv_(C, L);
    float *xn = (float *)afrt_malloc_((size_t)(pd->N * C * hw) * sizeof(float));
    if (!xn) {
        afrt_nomem_("afrt_dwpw_ex_f32");
        return 0;
    }
    for (int64_t n = 0; n < pd->N; ++n)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t q = 0; q < hw; ++q)
                xn[(n * C + c) * hw + q] = x[((n * Cb + c / L) * hw + q) * L + c % L];
    const int ok = afrt_dwpw_ex_f32(xn, wd, bd, lo, hi, wp, bp, y, pd, pp, epi, 0);
    free(xn);
    return ok;
}

/* afrt_dwpw_f32 with flags: AFRT_NC_IN_BLOCKED -- x is NCHW16c (afrt_nchwc.h's layout, as
 * gemm_1x1_b writes it): the blocked band copies each input row of a block into its lane
 * tile instead of transposing 16 channel rows (afrt_dwl_fill_blocked_); elsewhere x is
 * reordered to NCHW first (afrt_dwpw_unblocked_). */
static inline int afrt_dwpw_ex_f32(const float *x, const float *wd, const float *bd, float lo,
                                   float hi, const float *wp, const float *bp, float *y,
                                   const afrt_conv_params *pd, const afrt_conv_params *pp,
                                   afrt_epilogue epi, int flags) {
    if (!afrt_dwpw_applies(pd, pp)) return 0;
    if (pd->N <= 0 || pp->K <= 0 || pd->OH <= 0 || pd->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t C = pd->K, K = pp->K, ohw = pd->OH * pd->OW;
    const int xblk = (flags & AFRT_NC_IN_BLOCKED) != 0;
#if defined(__AVX512F__)
    /* Wp^T (C x K; element (c, k) = wp[k * C + c]) as cached B panels: constant weights only */
    const float *pbt = afrt_cc_blocked_applies(pd, pp) ? afrt_packed_const_(wp, C, K, C, 1, 1) : NULL;
    if (pbt && afrt_cc_blocked_run_(x, wd, bd, lo, hi, pbt, bp, y, pd, pp, epi, xblk, NULL))
        return 1;
#endif
    if (xblk) return afrt_dwpw_unblocked_(x, wd, bd, lo, hi, wp, bp, y, pd, pp, epi);
    const float *pa = NULL;
    if (!afrt_pack_a_all_(wp, 0, 1, K, C, C, 0, &pa))
        return afrt_dwpw_apart_(x, wd, bd, lo, hi, wp, bp, y, pd, pp, epi);
    const int nth = afrt_num_threads_;
    const double work = (double)pd->N * (double)ohw *
                        ((double)C * (double)K + AFRT_SLOW_WORK * (double)C * pd->R * pd->S);
    const int par = nth > 1 && afrt_worth_threads_(work);
    const int64_t th = afrt_cc_band_rows_(pd, par ? nth : 1);
    const int64_t nbands = afrt_cdiv_(pd->OH, th), tasks = pd->N * nbands;
    const int64_t dwf = (afrt_cc_dw_floats_(pd, th) + 15) / 16 * 16;
    const int64_t tf = (C * th * pd->OW + 15) / 16 * 16;
    const size_t need = (size_t)(dwf + tf + (int64_t)AFRT_KC * AFRT_NC) * sizeof(float);
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t task = 0; task < tasks; ++task) {
        afrt_arrive_();
        float *xp = (float *)afrt_thread_scratch(0, need);
        if (!xp) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *t = xp + dwf, *kbuf = t + tf;
        const int64_t n = task / nbands, oh0 = (task % nbands) * th;
        const int64_t oh1 = afrt_min_(pd->OH, oh0 + th), cols = (oh1 - oh0) * pd->OW;
        afrt_cc_dw_band_(x, wd, bd, lo, hi, pd, th, n, oh0, oh1, xp, t);
        const afrt_bsrc_ bs = {NULL, t, cols, 0, NULL, NULL, 0, NULL, 0, NULL};
        float *yn = y + n * K * ohw;
        const int64_t c0 = oh0 * pd->OW;
        const afrt_tile_finish_ fin = {yn, bp, 1.0f, n, 0, c0, epi};
        afrt_gemm_tile_(pa, K, cols, C, &bs, yn + c0, ohw, 0, K, 0, cols, kbuf, 0, &fin);
    }
    return failed ? afrt_dwpw_apart_(x, wd, bd, lo, hi, wp, bp, y, pd, pp, epi) : 1;
}

static inline int afrt_dwpw_f32(const float *x, const float *wd, const float *bd, float lo,
                                float hi, const float *wp, const float *bp, float *y,
                                const afrt_conv_params *pd, const afrt_conv_params *pp,
                                afrt_epilogue epi) {
    return afrt_dwpw_ex_f32(x, wd, bd, lo, hi, wp, bp, y, pd, pp, epi, 0);
}

/* Input channels of the expand afrt_edwpw_f32 computes in the band at most
 * (clib.EDWPW_MAX_C): each 16-channel block of the expand re-reads the band's input rows of
 * all of them. */
#define AFRT_EDWPW_MAX_C 32

/* Whether afrt_edwpw_f32 takes the triple: pe a 1x1 stride-1 unpadded group-1 conv producing
 * exactly the depthwise conv pd's input, pd and pp a pair afrt_dwpw_f32 takes. */
static inline int afrt_edwpw_applies(const afrt_conv_params *pe, const afrt_conv_params *pd,
                                     const afrt_conv_params *pp) {
    return afrt_dwpw_applies(pd, pp) && pe->N == pd->N && pe->K == pd->C && pe->OH == pd->H &&
           pe->OW == pd->W && pe->H == pe->OH && pe->W == pe->OW && pe->R == 1 && pe->S == 1 &&
           pe->stride_h == 1 && pe->stride_w == 1 && pe->pad_top == 0 && pe->pad_left == 0 &&
           pe->pad_bottom == 0 && pe->pad_right == 0 && pe->group <= 1 && pe->C >= 1;
}

/* Whether afrt_edwpw_f32 runs the expand inside the blocked band (clib.edwpw_algo mirrors
 * it): the pair on the blocked band (afrt_cc_blocked_applies) and at most AFRT_EDWPW_MAX_C
 * expand input channels. Elsewhere the expand runs apart into a whole intermediate. */
static inline int afrt_edwpw_banded(const afrt_conv_params *pe, const afrt_conv_params *pd,
                                    const afrt_conv_params *pp) {
    return afrt_cc_blocked_applies(pd, pp) && pe->C <= AFRT_EDWPW_MAX_C;
}

/*   afrt_edwpw_f32(x, we, be, elo, ehi, wd, bd, lo, hi, wp, bp, y, &pe, &pd, &pp, epi)
 *
 * MobileNet-V2's whole inverted-residual block: an expand 1x1 conv (pe; weights we [K][C],
 * bias be or NULL) clamped to [elo, ehi], the depthwise conv (pd) clamped to [lo, hi], the
 * projecting 1x1 conv (pp) and its epilogue, as afrt_dwpw_f32 with x the expand's input.
 * Where afrt_edwpw_banded holds the expand's output (96 x 112 x 112 = 4.8 MB, the largest
 * tensor of MobileNet-V2) never exists whole: the blocked band computes each 16-channel
 * block of the rows its depthwise conv reads straight into its lane tile (the rows two
 * bands share, (R - stride) per band, computed by both). Elsewhere the expand runs apart
 * through afrt_conv2d_f32 into a malloc'd intermediate. Returns 0 (nothing written) if the
 * triple does not qualify or memory runs out. */
static inline int afrt_edwpw_f32(const float *x, const float *we, const float *be, float elo,
                                 float ehi, const float *wd, const float *bd, float lo, float hi,
                                 const float *wp, const float *bp, float *y,
                                 const afrt_conv_params *pe, const afrt_conv_params *pd,
                                 const afrt_conv_params *pp, afrt_epilogue epi) {
    if (!afrt_edwpw_applies(pe, pd, pp)) return 0;
    if (pd->N <= 0 || pp->K <= 0 || pd->OH <= 0 || pd->OW <= 0) return 1;
    afrt_init_once_();
#if defined(__AVX512F__)
    const int64_t C = pd->K, K = pp->K;
    const float *pbt =
        afrt_edwpw_banded(pe, pd, pp) ? afrt_packed_const_(wp, C, K, C, 1, 1) : NULL;
    if (pbt) {
        const afrt_cc_expand_ ex = {we, be, elo, ehi, pe};
        if (afrt_cc_blocked_run_(x, wd, bd, lo, hi, pbt, bp, y, pd, pp, epi, 0, &ex)) return 1;
    }
#endif
    const size_t n = (size_t)(pe->N * pe->K * pe->OH * pe->OW);
    float *mid = (float *)afrt_malloc_(n * sizeof(float));
    if (!mid) {
        afrt_nomem_("afrt_edwpw_f32");
        return 0;
    }
    afrt_conv2d_f32(x, we, be, mid, pe, NULL, afrt_no_epilogue());
    for (size_t i = 0; i < n; ++i) {
        const float v = mid[i];
        mid[i] = v < elo ? elo : (v > ehi ? ehi : v);
    }
    const int ok = afrt_dwpw_f32(mid, wd, bd, lo, hi, wp, bp, y, pd, pp, epi);
    free(mid);
    return ok;
}

/* ---------------------------------------------------------------------------------------------
 * The stem and its max pool as one call (fuse-conv-pool, docs/runtime.md "The stem and its
 * pool as one kernel"):
 *
 *   afrt_convpool_nc_f32(x, w, bias, y, &p, &q, epi)
 *
 * a direct_smallc_b conv p (x NCHW; its output NCHW16c, + bias, + epi: none or the built-in
 * clamp without a residual) read only by a max pool q (NCHW16c; any window, stride, pads,
 * dilation, ceil-mode output size: afrt_maxpool2d_nc_f32's), y the pool's output. The conv's
 * output never exists whole: each task (image, range of pool output rows) computes the conv
 * rows its windows read, in order, into a per-thread ring of (R - 1) * dil_h + 1 rows of all
 * channel blocks (85 KB for SqueezeNet-1.1's 64 x 111 stem), and pools each pool row as soon
 * as its last row is done, by the blocked pool's rule (afrt_nc_maxrow_: the same taps in the
 * same order, so the same bits, NaN and -0.0 included) -- or, for 3-wide windows of at most
 * three rows none of which holds a NaN or a -0.0 (the conv's tile checks its outputs in
 * registers; after a Relu there is no -0.0), by vmaxps in any order, which then gives the
 * same bits (afrt_cp_max3x3_, several times faster on rows already in cache). Tasks split the pool rows, one range
 * per thread and image: the conv row two neighbouring ranges share (a 3x3/2 window's overlap)
 * is computed by both -- one row per thread boundary, no barrier, nothing shared.
 * afrt_scb_maxpool_f32 returns 0 (nothing written) when the pair does not fit
 * (afrt_convpool_fits), the build has no AVX-512 or memory is short; afrt_convpool_nc_f32
 * then runs the two apart through a whole intermediate.
 * ------------------------------------------------------------------------------------------- */
/* Rows of the ring at most (clib.CONVPOOL_MAX_ROWS): the pool window's height with dilation. */
#define AFRT_CP_MAX_ROWS 8

/* Whether afrt_scb_maxpool_f32 takes conv p and max pool q (clib.convpool_fits). */
static inline int afrt_convpool_fits(const afrt_conv_params *p, const afrt_pool_params *q) {
    return afrt_dconv_smallcb_fits(p) && q->N == p->N && q->C == p->K && q->H == p->OH &&
           q->W == p->OW && q->R >= 1 && q->S >= 1 && q->stride_h >= 1 && q->stride_w >= 1 &&
           q->dil_h >= 1 && q->dil_w >= 1 && q->pad_top >= 0 && q->pad_left >= 0 &&
           (q->R - 1) * q->dil_h + 1 <= AFRT_CP_MAX_ROWS;
}

#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
/* Outputs [o0, o1) of a 3x3 dilation-1 max pool row whose windows lie inside rows a, b, c
 * (column j of a row at j * 16; output o's first column o * sw - pl), by vmaxps: only for rows
 * without NaN or -0.0: then every tie of a max is between equal bits and vmaxps gives the
 * bits of afrt_nanmax16_'s fold in any order. A row twice stands for a window of fewer rows. */
static void afrt_cp_max3x3_(const float *restrict a, const float *restrict b,
                            const float *restrict c, float *restrict y, int64_t o0, int64_t o1,
                            int64_t sw, int64_t pl) {
    for (int64_t o = o0; o < o1; ++o) {
        const int64_t j = (o * sw - pl) * 16;
        const __m512 ma = _mm512_max_ps(_mm512_max_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(a + j + 16)),
                                        _mm512_loadu_ps(a + j + 32));
        const __m512 mb = _mm512_max_ps(_mm512_max_ps(_mm512_loadu_ps(b + j), _mm512_loadu_ps(b + j + 16)),
                                        _mm512_loadu_ps(b + j + 32));
        const __m512 mc = _mm512_max_ps(_mm512_max_ps(_mm512_loadu_ps(c + j), _mm512_loadu_ps(c + j + 16)),
                                        _mm512_loadu_ps(c + j + 32));
        _mm512_storeu_ps(y + o * 16, _mm512_max_ps(_mm512_max_ps(ma, mb), mc));
    }
}
#endif

static inline int afrt_scb_maxpool_f32(const float *x, const float *w, const float *bias,
                                       float *y, const afrt_conv_params *p,
                                       const afrt_pool_params *q, afrt_epilogue epi) {
#if defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
    if (!afrt_convpool_fits(p, q)) return 0;
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    if ((epi.fn && !cl) || (cl && cl->res)) return 0; /* only an epilogue in registers */
    if (p->N <= 0 || q->OH <= 0 || q->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t OW = p->OW, OH = p->OH, Kb = p->K / AFRT_NC_L, L = AFRT_NC_L;
    const int64_t POH = q->OH, POW = q->OW, dh = q->dil_h;
    const int64_t span = (q->R - 1) * dh + 1, ring_plane = span * OW * L;
    const float *wb = afrt_scb_weights_(w, p);
    if (!wb) return 0;
    float *xp;
    int64_t rstep, cstep;
    if (!afrt_scb_image_(p, &xp, &rstep, &cstep)) return 0;
    const double work = (double)p->N * p->K * OH * OW * p->C * p->R * p->S;
    const int nth = afrt_num_threads_ > 1 && POH > 1 && afrt_worth_threads_(work)
                        ? (int)afrt_min_(afrt_threads_now(), POH)
                        : 1;
    int failed = 0;
    for (int64_t n = 0; n < p->N; ++n) {
        const float *xn = afrt_scb_image_n_(x, p, n, xp);
        float *yn = y + n * Kb * POH * POW * L;
        /* nth ranges of pool rows (the team may get fewer threads: then some take two) */
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (nth > 1))
        for (int t = 0; t < nth; ++t) {
            afrt_arrive_();
            float *ring = (float *)afrt_thread_scratch(15, (size_t)(Kb * ring_plane) * sizeof(float));
            if (!ring) {
                afrt_flag_set_(&failed);
                continue;
            }
            const int64_t ph0 = POH * t / nth, ph1 = POH * (t + 1) / nth;
            int64_t next = 0; /* the next conv row to compute */
            unsigned char odd_row[AFRT_CP_MAX_ROWS]; /* per ring slot: NaN or -0.0 in it */
            /* the outputs whose 3-wide windows lie inside the row (afrt_cp_max3x3_) */
            const int64_t pl = q->pad_left, sw = q->stride_w;
            const int64_t o0 = afrt_min_(POW, afrt_cdiv_(pl, sw));
            const int64_t o1 = OW + pl >= 3 ? afrt_max_(o0, afrt_min_(POW, (OW + pl - 3) / sw + 1)) : o0;
            const int s3 = q->S == 3 && q->dil_w == 1;
            for (int64_t ph = ph0; ph < ph1; ++ph) {
                int64_t r0, r1;
                afrt_tap_range_(ph, q->stride_h, q->pad_top, dh, q->R, OH, &r0, &r1);
                const int64_t ih0 = ph * q->stride_h - q->pad_top;
                if (r1 > r0) {
                    if (next < ih0 + r0 * dh) next = ih0 + r0 * dh;
                    for (; next <= ih0 + (r1 - 1) * dh; ++next) {
                        float *yr = ring + (next % span) * OW * L;
                        __mmask16 k = 0;
                        afrt_scb_row_(xn + next * p->stride_h * rstep, p, rstep, cstep, wb, bias,
                                      yr, ring_plane, cl, NULL, 0, &k);
                        odd_row[next % span] = k != 0;
                    }
                }
                int64_t off[AFRT_CP_MAX_ROWS]; /* the window rows' ring offsets */
                int odd = 0;
                for (int64_t r = r0; r < r1; ++r) {
                    const int64_t slot = (ih0 + r * dh) % span;
                    off[r - r0] = slot * OW * L;
                    odd |= odd_row[slot];
                }
                const int64_t nr = r1 - r0;
                const int fast = !odd && s3 && nr >= 1 && nr <= 3;
                for (int64_t b = 0; b < Kb; ++b) {
                    const float *rb = ring + b * ring_plane;
                    float *yr = yn + (b * POH + ph) * POW * L;
                    if (fast)
                        afrt_cp_max3x3_(rb + off[0], rb + off[nr > 1], rb + off[nr > 2 ? 2 : 0], yr,
                                        o0, o1, sw, pl);
                    for (int64_t ow = 0; ow < POW; ++ow) { /* afrt_maxpool2d_nc_f32's loop */
                        if (fast && ow >= o0 && ow < o1) continue;
                        const int64_t iw0 = ow * sw - pl;
                        int64_t s0 = 0, s1 = q->S;
                        if (iw0 < 0 || iw0 + (q->S - 1) * q->dil_w >= OW)
                            afrt_tap_range_(ow, sw, pl, q->dil_w, q->S, OW, &s0, &s1);
                        __m512 m = _mm512_set1_ps(-INFINITY);
                        for (int64_t r = 0; r < nr; ++r)
                            m = afrt_nc_maxrow_(m, rb + off[r] + iw0 * L, s0, s1, q->dil_w * L);
                        _mm512_storeu_ps(yr + ow * L, m);
                    }
                }
            }
        }
        if (failed) return 0;
    }
    return 1;
#else
    (void)x, (void)w, (void)bias, (void)y, (void)p, (void)q, (void)epi;
    return 0;
#endif
}

/* afrt_scb_maxpool_f32, or when it cannot run the conv and the pool apart through a whole
 * intermediate (the fallback of a build without AVX-512 or short of memory). */
static inline void afrt_convpool_nc_f32(const float *x, const float *w, const float *bias,
                                        float *y, const afrt_conv_params *p,
                                        const afrt_pool_params *q, afrt_epilogue epi) {
    if (afrt_scb_maxpool_f32(x, w, bias, y, p, q, epi)) return;
    const int64_t n = p->N * afrt_cdiv_(p->K, AFRT_NC_L) * p->OH * p->OW * AFRT_NC_L;
    float *mid = (float *)afrt_malloc_((size_t)afrt_max_(n, 1) * sizeof(float));
    if (!mid) {
        afrt_pool_failed_(y, q->N * afrt_cdiv_(q->C, AFRT_NC_L) * q->OH * q->OW * AFRT_NC_L,
                          "afrt_convpool_nc_f32");
        return;
    }
    if (!afrt_dconv_smallcb_f32(x, w, bias, mid, p, epi))
        afrt_nchwc_naive_f32(x, w, bias, mid, p, epi, AFRT_NC_OUT_BLOCKED);
    afrt_maxpool2d_nc_f32(mid, y, q);
    free(mid);
}

#endif /* AFRT_CONVCHAIN_H */
