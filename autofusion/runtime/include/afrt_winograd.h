/*
 * afrt_winograd.h -- Winograd F(4x4, 3x3) convolution for afrt.h (included by afrt.h, which
 * defines afrt_conv_params, afrt_epilogue, the GEMM core and the packed-operand cache used
 * here; this file does not stand alone). Copied beside afrt.h into every build and package
 * folder.
 *
 *   afrt_winograd_f32(x, w, bias, y, &p, epi)
 *
 * 3x3, stride 1, dilation 1, group 1, any non-negative padding (afrt_winograd_fits). Each
 * 4x4 block of outputs ("tile") is computed from a 6x6 block of the input:
 *
 *   Y = A^T [ sum_c (G g_kc G^T) (.) (B^T d_c B) ] A          (.) elementwise, 6x6
 *
 * with the matrices of the points 0, +-1, +-2, inf (Lavin & Gray). The 36 elements of the
 * 6x6 product are 36 independent GEMMs, xi = 0..35: M_xi[K x T] = U_xi[K x C] @ V_xi[C x T]
 * over the tiles T; 4 times fewer multiplies than the 9 per output of direct or im2col.
 *
 * - Weights: U_xi = (G g G^T)_xi is computed in double, rounded once to fp32 and packed into
 *   the GEMM core's A panels (36 packed matrices). A constant w (inside a registered
 *   region: the weights blob) is transformed once, on the first call, and kept in the
 *   packed-operand cache (side 2); any other w is transformed per call into scratch slot 1.
 * - Tasks (image, block of nt consecutive tiles, block of output channels) run under OpenMP,
 *   dealt to the threads round-robin. A task transforms its tiles' inputs straight into
 *   packed B panels (V_xi, 16 tiles per vector, zeros outside the input: the padding and the
 *   edge tiles), runs the 36 GEMMs with afrt_gemm_tile_ (the same micro-kernels as
 *   im2col_gemm), then the output transform adds the bias, writes the outputs inside
 *   OH x OW (edge tiles are cut) and runs the epilogue on each finished row segment; the
 *   built-in clamp epilogue (afrt_epi_clamp_fn: residual add, Relu / Clip) is instead
 *   applied in the output transform, before each output's only store.
 *   nt is chosen so V and M of one task stay in L2 (AFRT_WG_BYTES). Where the tile blocks
 *   do not share out evenly (afrt_wg_split_k_), the output channels are split as well, and
 *   the V that those tasks share is transformed once, before them, by all threads.
 *
 * Error: the transforms' constants (1/4, 1/6, 1/24; 8, 5) grow fp32 rounding error by about
 * an order of magnitude over the direct sum; test_c_winograd.py checks it against
 * onnxruntime at the project's fp32 bar (autofusion.testing).
 *
 * Where it wins (afrt_winograd_applies, the lowering's `winograd` choice): measured against
 * im2col_gemm on the same conv (benchmarks/winograd_conv.py, docs/runtime.md).
 */
#ifndef AFRT_WINOGRAD_H
#define AFRT_WINOGRAD_H

#define AFRT_WG_X 36 /* elements of a 6x6 transformed tile */
#define AFRT_WG_L 16 /* tiles per vector group */
/* Bytes of V and M of one task (they should stay in L2 between the transforms and GEMMs). */
#ifndef AFRT_WG_BYTES
#define AFRT_WG_BYTES (768 * 1024)
#endif
/* The measured rule (benchmarks/winograd_conv.py --cold, docs/runtime.md): Winograd beats
 * im2col_gemm on maps of at least AFRT_WG_MIN_TILES 4x4 tiles per image (25 win; the GEMMs of
 * fewer tiles have half-empty column panels and the 4x larger transformed weights come from
 * memory for few tiles) when AFRT_WG_CK / C - AFRT_WG_CK / K <= 1: per tile, Winograd pays
 * the input transform per input channel and a round trip of the 36 GEMM outputs through L2
 * plus the output transform per output channel, and saves im2col's 144 multiplies per
 * channel pair, so it loses when C is small against K (8 -> 16, 16 -> 32) and gains most
 * when K is small (im2col's GEMM then has few rows). Since the output transform runs in
 * registers (session 18), 16 tiles (14x14, 16x16 maps) win too against im2col_gemm
 * (256 -> 256 at 14x14: 0.88-0.94) but lose to the blocked direct conv, which takes those
 * convs on AVX-512 (nchwc / winograd 0.62 at 32 -> 64, 0.89 at 128 -> 128), except the
 * wide ones (K >= AFRT_NC_WIDE_K, afrt_nchwc.h, where im2col_gemm is the alternative): so
 * from AFRT_WG_MIN_TILES_WIDE tiles when K >= AFRT_WG_WIDE_K and C >= AFRT_WG_WIDE_C (with
 * fewer input channels the 4x larger transformed weights, cold, cost more than the GEMM
 * saves: SqueezeNet's 48 -> 192 and 64 -> 256 at 13x13 1.12-1.44, GoogLeNet's 96 -> 208
 * and 128 -> 256 at 14x14 0.80-0.93). */
#ifndef AFRT_WG_MIN_TILES
#define AFRT_WG_MIN_TILES 25
#endif
#ifndef AFRT_WG_MIN_TILES_WIDE
#define AFRT_WG_MIN_TILES_WIDE 16
#endif
#ifndef AFRT_WG_WIDE_K
#define AFRT_WG_WIDE_K 192
#endif
#ifndef AFRT_WG_WIDE_C
#define AFRT_WG_WIDE_C 96
#endif
#ifndef AFRT_WG_CK
#define AFRT_WG_CK 64
#endif

/* Whether afrt_winograd_f32 can run this conv at all. */
static inline int afrt_winograd_fits(const afrt_conv_params *p) {
    return (p->group <= 1) && p->R == 3 && p->S == 3 && p->stride_h == 1 && p->stride_w == 1 &&
           p->dil_h == 1 && p->dil_w == 1 && p->pad_top >= 0 && p->pad_left >= 0 && p->C >= 1 &&
           p->K >= 1 && p->OH >= 1 && p->OW >= 1;
}

/* Whether afrt_conv2d_f32 takes it (and the lowering records algo "winograd"). */
static inline int afrt_winograd_applies(const afrt_conv_params *p) {
    return afrt_winograd_fits(p) && AFRT_WG_CK * (p->K - p->C) <= p->C * p->K &&
           (afrt_cdiv_(p->OH, 4) * afrt_cdiv_(p->OW, 4) >= AFRT_WG_MIN_TILES ||
            (afrt_cdiv_(p->OH, 4) * afrt_cdiv_(p->OW, 4) >= AFRT_WG_MIN_TILES_WIDE &&
             p->K >= AFRT_WG_WIDE_K && p->C >= AFRT_WG_WIDE_C));
}

/* U = G g G^T for one 3x3 kernel g, in double, into u[36]. */
static inline void afrt_wg_kernel_(const float *g, double *u) {
    static const double G[6][3] = {{0.25, 0.0, 0.0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0.0, 0.0, 1.0}};
    double t[6][3];
    for (int a = 0; a < 6; ++a)
        for (int j = 0; j < 3; ++j)
            t[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b)
            u[a * 6 + b] = t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2];
}

/* The 36 transformed weight matrices U_xi [K x C], packed as GEMM A operands, one after the
 * other (afrt_round_up_(K, mr) * C floats each), into dst. */
AFRT_NOIPA_ static int afrt_wg_pack_weights_(const float *w, int64_t K, int64_t C, float *dst) {
    float *u = (float *)afrt_malloc_((size_t)(AFRT_WG_X * K * C) * sizeof(float));
    if (!u) return 0;
    for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c) {
            double v[AFRT_WG_X];
            afrt_wg_kernel_(w + (k * C + c) * 9, v);
            for (int xi = 0; xi < AFRT_WG_X; ++xi) u[(xi * K + k) * C + c] = (float)v[xi];
        }
    const int64_t Mp = afrt_round_up_(K, afrt_choose_mr_(K));
    for (int xi = 0; xi < AFRT_WG_X; ++xi)
        afrt_pack_a_(u + xi * K * C, C, 0, K, C, dst + xi * Mp * C);
    free(u);
    return 1;
}

/* The packed U of w: cached when w is constant, else transformed now into scratch slot 1 of
 * the calling thread. NULL if memory is short. */
static inline const float *afrt_wg_weights_(const float *w, int64_t K, int64_t C) {
    const size_t n = (size_t)(AFRT_WG_X * afrt_round_up_(K, afrt_choose_mr_(K)) * C);
    const float *found = NULL;
    int constant = 0;
    AFRT_OMP(critical(afrt_cache))
    {
        constant = afrt_in_region_(w, (size_t)(K * C * 9) * sizeof(float));
        if (constant) {
            for (int e = 0; e < afrt_n_packed_ && !found; ++e) {
                const afrt_packed_entry_ *q = &afrt_packed_[e];
                if (q->src == w && q->rows == K && q->cols == C && q->side == 2 && q->lp == 0)
                    found = (const float *)q->packed;
            }
            if (!found && afrt_n_packed_ < AFRT_MAX_PACKED) {
                float *buf = (float *)afrt_alloc_pack_(n * sizeof(float));
                if (buf && afrt_wg_pack_weights_(w, K, C, buf)) {
                    afrt_packed_entry_ e = {w, K, C, 9, 0, 2, 0, buf, NULL};
                    afrt_packed_[afrt_n_packed_++] = e;
                    found = buf;
                } else {
                    free(buf);
                }
            }
        }
    }
    if (found) return found;
    float *buf = (float *)afrt_thread_scratch(1, n * sizeof(float));
    return buf && afrt_wg_pack_weights_(w, K, C, buf) ? buf : NULL;
}

/* Offset of element (c, t) in packed B panels of a C x np matrix (np a multiple of NR). */
static inline int64_t afrt_wg_boff_(int64_t C, int64_t np, int64_t c, int64_t t) {
    const int64_t pc = c / AFRT_KC * AFRT_KC, kc = afrt_min_(AFRT_KC, C - pc);
    return pc * np + (t / AFRT_NR) * AFRT_NR * kc + (c - pc) * AFRT_NR + t % AFRT_NR;
}

/* v = B^T d B for 16 tiles (the last index is the tile), all in local arrays so the lane
 * loops vectorise. */
static inline void afrt_wg_bt_(const float d[6][6][AFRT_WG_L], float v[6][6][AFRT_WG_L]) {
    float e[6][6][AFRT_WG_L];
    for (int j = 0; j < 6; ++j)
        for (int l = 0; l < AFRT_WG_L; ++l) {
            const float d0 = d[0][j][l], d1 = d[1][j][l], d2 = d[2][j][l];
            const float d3 = d[3][j][l], d4 = d[4][j][l], d5 = d[5][j][l];
            e[0][j][l] = 4.0f * d0 - 5.0f * d2 + d4;
            e[1][j][l] = -4.0f * (d1 + d2) + d3 + d4;
            e[2][j][l] = 4.0f * (d1 - d2) - d3 + d4;
            e[3][j][l] = 2.0f * (d3 - d1) - d2 + d4;
            e[4][j][l] = 2.0f * (d1 - d3) - d2 + d4;
            e[5][j][l] = 4.0f * d1 - 5.0f * d3 + d5;
        }
    for (int a = 0; a < 6; ++a)
        for (int l = 0; l < AFRT_WG_L; ++l) {
            const float e0 = e[a][0][l], e1 = e[a][1][l], e2 = e[a][2][l];
            const float e3 = e[a][3][l], e4 = e[a][4][l], e5 = e[a][5][l];
            v[a][0][l] = 4.0f * e0 - 5.0f * e2 + e4;
            v[a][1][l] = -4.0f * (e1 + e2) + e3 + e4;
            v[a][2][l] = 4.0f * (e1 - e2) - e3 + e4;
            v[a][3][l] = 2.0f * (e3 - e1) - e2 + e4;
            v[a][4][l] = 2.0f * (e1 - e3) - e2 + e4;
            v[a][5][l] = 4.0f * e1 - 5.0f * e3 + e5;
        }
}

#if defined(__AVX512F__)
/* o = B^T d of one column of 16 tiles' 6x6 input blocks (d[i]: element i of each), the
 * arithmetic of afrt_wg_bt_ in zmm registers. */
static inline void afrt_wg_bt6_(const __m512 d[6], __m512 o[6]) {
    const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f);
    const __m512 five = _mm512_set1_ps(5.0f);
    const __m512 d42 = _mm512_sub_ps(d[4], d[2]);
    o[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
    o[1] = _mm512_fnmadd_ps(four, _mm512_add_ps(d[1], d[2]), _mm512_add_ps(d[3], d[4]));
    o[2] = _mm512_fmadd_ps(four, _mm512_sub_ps(d[1], d[2]), _mm512_sub_ps(d[4], d[3]));
    o[3] = _mm512_fmadd_ps(two, _mm512_sub_ps(d[3], d[1]), d42);
    o[4] = _mm512_fmadd_ps(two, _mm512_sub_ps(d[1], d[3]), d42);
    o[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
}
#endif

/* Input transform of channels [c0, c1) of tiles [t0, t0 + np) of image xn (tiles past t0 + nt
 * are zero) into the packed B panels of V (36 matrices C x np, vstride floats apart). Each
 * channel's values depend on that channel alone, so a channel range gives the same bits. */
static inline void afrt_wg_input_(const float *restrict xn, const afrt_conv_params *p,
                                  int64_t TW, int64_t t0, int64_t nt, int64_t np,
                                  float *restrict V, int64_t vstride, int64_t c0, int64_t c1) {
    const int64_t H = p->H, W = p->W, C = p->C, hw = H * W;
    for (int64_t g0 = 0; g0 < np; g0 += AFRT_WG_L) {
        if (g0 >= nt) { /* a group past the tiles (16 of a 14x14 map's 32): the zeros its
                         * transform gives, without the gathers and arithmetic */
            for (int64_t c = c0; c < c1; ++c) {
                float *restrict o = V + afrt_wg_boff_(C, np, c, g0);
                for (int xi = 0; xi < AFRT_WG_X; ++xi)
                    memset(o + xi * vstride, 0, AFRT_WG_L * sizeof(float));
            }
            continue;
        }
        int64_t ih0[AFRT_WG_L], iw0[AFRT_WG_L];
        int kind[AFRT_WG_L]; /* 0: past the tiles, 1: inside the input, 2: at an edge */
        for (int l = 0; l < AFRT_WG_L; ++l) {
            const int64_t t = t0 + g0 + l;
            ih0[l] = (t / TW) * 4 - p->pad_top;
            iw0[l] = (t % TW) * 4 - p->pad_left;
            kind[l] = g0 + l >= nt ? 0
                      : ih0[l] >= 0 && ih0[l] + 6 <= H && iw0[l] >= 0 && iw0[l] + 6 <= W ? 1 : 2;
        }
#if defined(__AVX512F__)
        /* lanes' element (i, j) is valid when rmask[i] and cmask[j] have its bit */
        const int gather = hw + 6 * W < INT32_MAX;
        int32_t base[AFRT_WG_L];
        uint32_t rmask[6] = {0}, cmask[6] = {0};
        for (int l = 0; l < AFRT_WG_L; ++l) {
            base[l] = gather ? (int32_t)(ih0[l] * W + iw0[l]) : 0;
            for (int i = 0; i < 6; ++i) {
                if (kind[l] != 0 && ih0[l] + i >= 0 && ih0[l] + i < H) rmask[i] |= 1u << l;
                if (iw0[l] + i >= 0 && iw0[l] + i < W) cmask[i] |= 1u << l;
            }
        }
        const __m512i vbase = _mm512_loadu_si512(base);
#endif
        for (int64_t c = c0; c < c1; ++c) {
            const float *restrict xc = xn + c * hw;
            float d[6][6][AFRT_WG_L], v[6][6][AFRT_WG_L];
#if defined(__AVX512F__)
            if (gather) { /* one masked gather per tile element: lanes outside are zero */
                /* B^T d down each column j of the 6x6 blocks, then along each row a of that,
                 * in registers, each result stored once into its packed panel */
                float *restrict o = V + afrt_wg_boff_(C, np, c, g0);
                __m512 e[6][6];
                for (int j = 0; j < 6; ++j) {
                    __m512 dc[6], ec[6];
                    for (int i = 0; i < 6; ++i) {
                        const __m512i at = _mm512_set1_epi32((int)(i * W + j));
                        const __mmask16 in = (__mmask16)(rmask[i] & cmask[j]);
                        dc[i] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), in,
                                                         _mm512_add_epi32(vbase, at), xc, 4);
                    }
                    afrt_wg_bt6_(dc, ec);
                    for (int a = 0; a < 6; ++a) e[a][j] = ec[a];
                }
                for (int a = 0; a < 6; ++a) {
                    __m512 va[6];
                    afrt_wg_bt6_(e[a], va);
                    for (int b = 0; b < 6; ++b) _mm512_storeu_ps(o + (a * 6 + b) * vstride, va[b]);
                }
                continue;
            }
#endif
            for (int l = 0; l < AFRT_WG_L; ++l) {
                if (kind[l] == 1) {
                    const float *restrict s = xc + ih0[l] * W + iw0[l];
                    for (int i = 0; i < 6; ++i)
                        for (int j = 0; j < 6; ++j) d[i][j][l] = s[i * W + j];
                } else {
                    for (int i = 0; i < 6; ++i) {
                        const int64_t ih = ih0[l] + i;
                        const int rok = kind[l] == 2 && ih >= 0 && ih < H;
                        for (int j = 0; j < 6; ++j) {
                            const int64_t iw = iw0[l] + j;
                            d[i][j][l] = rok && iw >= 0 && iw < W ? xc[ih * W + iw] : 0.0f;
                        }
                    }
                }
            }
            afrt_wg_bt_((const float(*)[6][AFRT_WG_L])d, v);
            float *restrict o = V + afrt_wg_boff_(C, np, c, g0);
            for (int xi = 0; xi < AFRT_WG_X; ++xi)
                memcpy(o + xi * vstride, v[xi / 6][xi % 6], sizeof v[0][0]);
        }
    }
}

#if defined(__AVX512F__)
/* Row i of 16 tiles' 4 x 4 outputs (o0..o3: columns 0-3, lane l: tile l) as 64 floats in tile
 * order, tile l's 4 columns at 4l..4l+3: a 4-way interleave in 16 shuffles (GCC made 48 of
 * 128-bit ones from the scalar transposition). */
static inline void afrt_wg_interleave4_(__m512 o0, __m512 o1, __m512 o2, __m512 o3, float *r) {
    const __m512 t0 = _mm512_unpacklo_ps(o0, o1), t1 = _mm512_unpackhi_ps(o0, o1);
    const __m512 t2 = _mm512_unpacklo_ps(o2, o3), t3 = _mm512_unpackhi_ps(o2, o3);
    /* in each 128-bit lane q: tiles 4q, 4q + 1, 4q + 2, 4q + 3 */
    const __m512 u0 = _mm512_shuffle_ps(t0, t2, 0x44), u1 = _mm512_shuffle_ps(t0, t2, 0xEE);
    const __m512 u2 = _mm512_shuffle_ps(t1, t3, 0x44), u3 = _mm512_shuffle_ps(t1, t3, 0xEE);
    const __m512 v0 = _mm512_shuffle_f32x4(u0, u1, 0x44), v1 = _mm512_shuffle_f32x4(u2, u3, 0x44);
    const __m512 v2 = _mm512_shuffle_f32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_f32x4(u2, u3, 0xEE);
    _mm512_storeu_ps(r, _mm512_shuffle_f32x4(v0, v1, 0x88));      /* tiles 0-3 */
    _mm512_storeu_ps(r + 16, _mm512_shuffle_f32x4(v0, v1, 0xDD)); /* tiles 4-7 */
    _mm512_storeu_ps(r + 32, _mm512_shuffle_f32x4(v2, v3, 0x88)); /* tiles 8-11 */
    _mm512_storeu_ps(r + 48, _mm512_shuffle_f32x4(v2, v3, 0xDD)); /* tiles 12-15 */
}

/* dst[0..n) = src[0..n), n <= 64: whole vectors, then one masked one. */
static inline void afrt_wg_copy_(float *dst, const float *src, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(dst + j, _mm512_loadu_ps(src + j));
    if (j < n) {
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(dst + j, m, _mm512_maskz_loadu_ps(m, src + j));
    }
}

/* Output transform of rows [k0, k1) of M (row k of matrix xi at M + (k * 36 + xi) * np) for
 * tiles [t0, t0 + nt) of image n: bias added, outputs inside OH x OW written to yn. With cl
 * (the built-in clamp epilogue, afrt_epi_builtin_clamp_), each output is finished before its
 * store: + its residual element (zn: image n's residual, or NULL), then clamped.
 *
 * AVX-512: the transform on 16 tiles at once in registers (the arithmetic of the portable
 * form below, operation for operation: the same values), each output row of the 16 tiles
 * interleaved into tile order (afrt_wg_interleave4_), and stored per run of tiles in one
 * tile row (up to 64 contiguous floats) instead of 4 floats per tile. The portable form,
 * compiled by GCC, spent ~30% of a 56x56 64 -> 64 conv here (perf), mostly in 128-bit
 * shuffles and 16-byte copies. */
static inline void afrt_wg_output_(const float *restrict M, const float *bias,
                                   const afrt_conv_params *p, int64_t TW, int64_t t0, int64_t nt,
                                   int64_t np, int64_t k0, int64_t k1, float *restrict yn,
                                   const afrt_epi_clamp *cl, const float *zn) {
    const int64_t OH = p->OH, OW = p->OW, ohw = OH * OW;
    const float lo = cl ? cl->lo : 0.0f, hi = cl ? cl->hi : 0.0f;
    const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f);
    const __m512 eight = _mm512_set1_ps(8.0f);
    for (int64_t g0 = 0; g0 < nt; g0 += AFRT_WG_L) {
        const int64_t gl = afrt_min_(AFRT_WG_L, nt - g0);
        /* runs of consecutive tiles in one tile row: first lane, output offset, rows, width */
        int nrun = 0, rl[AFRT_WG_L], rh[AFRT_WG_L];
        int64_t roff[AFRT_WG_L], rw[AFRT_WG_L];
        for (int64_t l = 0; l < gl; ++l) {
            const int64_t t = t0 + g0 + l, oh0 = (t / TW) * 4, ow0 = (t % TW) * 4;
            if (l == 0 || ow0 == 0) {
                rl[nrun] = (int)l;
                rh[nrun] = (int)afrt_min_(4, OH - oh0);
                roff[nrun] = oh0 * OW + ow0;
                rw[nrun] = 0;
                ++nrun;
            }
            rw[nrun - 1] = ow0 + afrt_min_(4, OW - ow0) - roff[nrun - 1] % OW;
        }
        for (int64_t k = k0; k < k1; ++k) {
            const float *restrict m = M + k * AFRT_WG_X * np + g0;
            const __m512 bv = _mm512_set1_ps(bias ? bias[k] : 0.0f);
            __m512 f[4][6];
            for (int b = 0; b < 6; ++b) {
                const __m512 m0 = _mm512_loadu_ps(m + b * np);
                const __m512 m1 = _mm512_loadu_ps(m + (6 + b) * np);
                const __m512 m2 = _mm512_loadu_ps(m + (12 + b) * np);
                const __m512 m3 = _mm512_loadu_ps(m + (18 + b) * np);
                const __m512 m4 = _mm512_loadu_ps(m + (24 + b) * np);
                const __m512 m5 = _mm512_loadu_ps(m + (30 + b) * np);
                const __m512 s12 = _mm512_add_ps(m1, m2), d12 = _mm512_sub_ps(m1, m2);
                const __m512 s34 = _mm512_add_ps(m3, m4), d34 = _mm512_sub_ps(m3, m4);
                f[0][b] = _mm512_add_ps(_mm512_add_ps(m0, s12), s34);
                f[1][b] = _mm512_fmadd_ps(two, d34, d12);
                f[2][b] = _mm512_fmadd_ps(four, s34, s12);
                f[3][b] = _mm512_add_ps(_mm512_fmadd_ps(eight, d34, d12), m5);
            }
            float ob[4][4 * AFRT_WG_L];
            for (int i = 0; i < 4; ++i) {
                const __m512 s12 = _mm512_add_ps(f[i][1], f[i][2]);
                const __m512 d12 = _mm512_sub_ps(f[i][1], f[i][2]);
                const __m512 s34 = _mm512_add_ps(f[i][3], f[i][4]);
                const __m512 d34 = _mm512_sub_ps(f[i][3], f[i][4]);
                __m512 o[4];
                o[0] = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(f[i][0], s12), s34), bv);
                o[1] = _mm512_add_ps(_mm512_fmadd_ps(two, d34, d12), bv);
                o[2] = _mm512_add_ps(_mm512_fmadd_ps(four, s34, s12), bv);
                o[3] = _mm512_add_ps(_mm512_add_ps(_mm512_fmadd_ps(eight, d34, d12), f[i][5]), bv);
                if (cl && !zn) { /* no residual: clamp here (NaN kept, as afrt_epi_clamp1_) */
                    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
                    for (int j = 0; j < 4; ++j) {
                        const __mmask16 keep = _mm512_cmp_ps_mask(o[j], vlo, _CMP_NLE_UQ);
                        o[j] = _mm512_mask_mov_ps(vlo, keep, o[j]);
                        if (hi != INFINITY) /* an infinite upper bound changes nothing */
                            o[j] = _mm512_mask_mov_ps(
                                vhi, _mm512_cmp_ps_mask(o[j], vhi, _CMP_NGE_UQ), o[j]);
                    }
                }
                afrt_wg_interleave4_(o[0], o[1], o[2], o[3], ob[i]);
            }
            float *restrict yk = yn + k * ohw;
            const float *zk = zn ? zn + k * cl->res_ld : NULL;
            for (int r = 0; r < nrun; ++r) {
                for (int i = 0; i < rh[r]; ++i) {
                    const int64_t at = roff[r] + i * OW;
                    const float *src = &ob[i][4 * rl[r]];
                    if (zk) afrt_epi_clamp_store_(yk + at, src, zk + at, rw[r], lo, hi);
                    else afrt_wg_copy_(yk + at, src, rw[r]);
                }
            }
        }
    }
}
#else
/* afrt_epi_clamp1_ on the 16 lanes of every output of a tile group. AVX2: the same compares
 * (!(v <= lo), !(v >= hi): NaN kept) as blends of 8 lanes; as the scalar loop GCC vectorised it
 * 2 lanes at a time, and a Relu cost ResNet-50's Winograd convs ~10% in an x86-64-v3 build
 * (benchmarks/fusion_efficiency.py --cpu x86-64-v3: +0.4 ms over the three on 56 x 56). */
static inline void afrt_wg_clamp_(float o[4][4][AFRT_WG_L], float lo, float hi) {
#if defined(__AVX2__)
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    float *v = &o[0][0][0];
    for (int q = 0; q < 16 * AFRT_WG_L; q += 8) {
        __m256 r = _mm256_loadu_ps(v + q);
        r = _mm256_blendv_ps(vlo, r, _mm256_cmp_ps(r, vlo, _CMP_NLE_UQ));
        r = _mm256_blendv_ps(vhi, r, _mm256_cmp_ps(r, vhi, _CMP_NGE_UQ));
        _mm256_storeu_ps(v + q, r);
    }
#else
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < AFRT_WG_L; ++l) o[i][j][l] = afrt_epi_clamp1_(o[i][j][l], lo, hi);
#endif
}

/* Output transform of rows [k0, k1) of M (row k of matrix xi at M + (k * 36 + xi) * np) for
 * tiles [t0, t0 + nt) of image n: bias added, outputs inside OH x OW written to yn. With cl
 * (the built-in clamp epilogue, afrt_epi_builtin_clamp_), each output is finished before its
 * store: + its residual element (zn: image n's residual, or NULL), then clamped. */
static inline void afrt_wg_output_(const float *restrict M, const float *bias,
                                   const afrt_conv_params *p, int64_t TW, int64_t t0, int64_t nt,
                                   int64_t np, int64_t k0, int64_t k1, float *restrict yn,
                                   const afrt_epi_clamp *cl, const float *zn) {
    const int64_t OH = p->OH, OW = p->OW, ohw = OH * OW;
    const float lo = cl ? cl->lo : 0.0f, hi = cl ? cl->hi : 0.0f;
    for (int64_t g0 = 0; g0 < nt; g0 += AFRT_WG_L) {
        const int64_t gl = afrt_min_(AFRT_WG_L, nt - g0);
        for (int64_t k = k0; k < k1; ++k) {
            const float *restrict m = M + k * AFRT_WG_X * np + g0;
            const float bv = bias ? bias[k] : 0.0f;
            float mm[AFRT_WG_X][AFRT_WG_L], f[4][6][AFRT_WG_L], o[4][4][AFRT_WG_L];
            for (int xi = 0; xi < AFRT_WG_X; ++xi) memcpy(mm[xi], m + xi * np, sizeof mm[0]);
            for (int b = 0; b < 6; ++b)
                for (int l = 0; l < AFRT_WG_L; ++l) {
                    const float m0 = mm[b][l], m1 = mm[6 + b][l], m2 = mm[12 + b][l];
                    const float m3 = mm[18 + b][l], m4 = mm[24 + b][l], m5 = mm[30 + b][l];
                    f[0][b][l] = m0 + (m1 + m2) + (m3 + m4);
                    f[1][b][l] = (m1 - m2) + 2.0f * (m3 - m4);
                    f[2][b][l] = (m1 + m2) + 4.0f * (m3 + m4);
                    f[3][b][l] = (m1 - m2) + 8.0f * (m3 - m4) + m5;
                }
            for (int i = 0; i < 4; ++i)
                for (int l = 0; l < AFRT_WG_L; ++l) {
                    const float f0 = f[i][0][l], f1 = f[i][1][l], f2 = f[i][2][l];
                    const float f3 = f[i][3][l], f4 = f[i][4][l], f5 = f[i][5][l];
                    o[i][0][l] = f0 + (f1 + f2) + (f3 + f4) + bv;
                    o[i][1][l] = (f1 - f2) + 2.0f * (f3 - f4) + bv;
                    o[i][2][l] = (f1 + f2) + 4.0f * (f3 + f4) + bv;
                    o[i][3][l] = (f1 - f2) + 8.0f * (f3 - f4) + f5 + bv;
                }
            if (cl && !zn) afrt_wg_clamp_(o, lo, hi); /* no residual: 16 tiles at once */
            /* tile-major rows (ob[i][4l + j]), then each tile's 4 rows of 4 (cut at edges) */
            float ob[4][4 * AFRT_WG_L];
            for (int i = 0; i < 4; ++i)
                for (int l = 0; l < AFRT_WG_L; ++l)
                    for (int j = 0; j < 4; ++j) ob[i][4 * l + j] = o[i][j][l];
            float *restrict yk = yn + k * ohw;
            const float *zk = zn ? zn + k * cl->res_ld : NULL;
            for (int64_t l = 0; l < gl; ++l) {
                const int64_t t = t0 + g0 + l, oh0 = (t / TW) * 4, ow0 = (t % TW) * 4;
                const int64_t nh = afrt_min_(4, OH - oh0), nw = afrt_min_(4, OW - ow0);
                for (int64_t i = 0; i < nh; ++i) {
                    float *restrict r = yk + (oh0 + i) * OW + ow0;
                    if (zk)
                        afrt_epi_clamp_store_(r, &ob[i][4 * l], zk + (oh0 + i) * OW + ow0, nw,
                                              lo, hi);
                    else if (nw == 4) memcpy(r, &ob[i][4 * l], 4 * sizeof(float));
                    else memcpy(r, &ob[i][4 * l], (size_t)nw * sizeof(float));
                }
            }
        }
    }
}
#endif /* __AVX512F__ */

/* The epilogue on rows [k0, k1) of the outputs of tiles [t0, t0 + nt) of image n: one call
 * per output row segment (each output is passed exactly once). */
static inline void afrt_wg_epilogue_(const afrt_conv_params *p, int64_t TW, int64_t t0,
                                     int64_t nt, int64_t n, int64_t k0, int64_t k1, float *yn,
                                     afrt_epilogue epi) {
    const int64_t OH = p->OH, OW = p->OW;
    for (int64_t t = t0; t < t0 + nt;) {
        const int64_t th = t / TW, tw = t % TW, tw1 = afrt_min_(TW, tw + (t0 + nt - t));
        const int64_t c0 = tw * 4, c1 = afrt_min_(OW, tw1 * 4);
        for (int64_t oh = th * 4; oh < afrt_min_(OH, th * 4 + 4); ++oh)
            epi.fn(epi.ctx, yn, n, k0, k1, oh * OW + c0, oh * OW + c1, OH * OW);
        t += tw1 - tw;
    }
}

/* Whether x[0..n) holds no NaN or inf: an exponent test over the bits, which GCC vectorises
 * (one read of the input, small against the conv's 9*K multiplies per input element). */
static inline int afrt_wg_all_finite_(const float *x, int64_t n) {
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        bad |= (b & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

/* Bytes of the shared V (all tile blocks of all images) above which each task transforms
 * its own tiles' V, as before the sharing. */
#ifndef AFRT_WG_SHARED_V_BYTES
#define AFRT_WG_SHARED_V_BYTES AFRT_TILE_BYTES
#endif
/* Percent of an even share of tiles that the busiest thread may get from the tile blocks
 * dealt round-robin before the conv is split by output channels instead (afrt_wg_split_k_). */
#ifndef AFRT_WG_UNEVEN_PCT
#define AFRT_WG_UNEVEN_PCT 125
#endif
/* Output channels per thread below which an uneven tile split is kept (the split reads all
 * of V once per channel block: DenseNet-121's 128 -> 32 at 28x28, 16 rows a thread, did
 * more work split, thread_balance.py work 1.17-1.21 -> 1.24-1.27, and was no faster). */
#ifndef AFRT_WG_SPLIT_MIN_ROWS
#define AFRT_WG_SPLIT_MIN_ROWS 48
#endif
/* afrt_wg_shared_v_dis_: 1 makes every task transform its own V (the old way), for A/B runs
 * from C drivers (the bits are the same). */
static int afrt_wg_shared_v_dis_ = 0;

/* Whether nth threads split the conv's output channels into nth blocks (of MR rows; each
 * thread one block of every tile block) rather than deal out whole tile blocks (N images of
 * T tiles in blocks of np): when there are fewer tile blocks than threads, or when dealt
 * round-robin they give the busiest thread more than AFRT_WG_UNEVEN_PCT percent of an even
 * share of the tiles (ResNet-50's 28x28 map: 49 tiles in blocks of 32 and 17, so one thread
 * had 32 where 24.5 is even) and each thread gets AFRT_WG_SPLIT_MIN_ROWS channels or more.
 * A run-time choice (the thread count is af_create's). */
static inline int afrt_wg_split_k_(int64_t N, int64_t T, int64_t np, int64_t nth, int64_t K,
                                   int64_t MR) {
    if (nth <= 1 || K < 2 * MR || N <= 0 || T <= 0) return 0;
    const int64_t ntb = afrt_nblocks_(T, np), tt = N * ntb;
    if (tt < nth) return 1; /* a thread would have nothing */
    if (K < nth * AFRT_WG_SPLIT_MIN_ROWS) return 0;
    int64_t busiest = 0;
    for (int64_t j = 0; j < nth; ++j) { /* thread j: blocks j, j + nth, ... */
        int64_t tiles = 0;
        for (int64_t b = j; b < tt; b += nth) tiles += afrt_min_(np, T - (b % ntb) * np);
        busiest = afrt_max_(busiest, tiles);
    }
    return 100 * busiest * nth > AFRT_WG_UNEVEN_PCT * N * T;
}

/* Blocks of output channels for nth threads: min(nth, K / MR) blocks of MR rows, evened out
 * as afrt_gemm_split_even_ does (128 rows: 60 + 68, not 72 + 56; the last takes the rest).
 * Their count; the block size in *kb. */
static inline int64_t afrt_wg_kblocks_(int64_t K, int64_t MR, int64_t nth, int64_t *kb) {
    const int64_t blk = afrt_round_up_(afrt_cdiv_(K, afrt_min_(nth, K / MR)), MR);
    const int64_t nkb = afrt_nblocks_(K, blk);
    *kb = afrt_split_even_(K, MR, 2, nkb, blk);
    return nkb;
}

/* afrt_wg_runs_dis_: 1 deals the whole tile blocks of one image round-robin (as before the
 * runs), for A/B runs from C drivers (the bits are the same). */
static int afrt_wg_runs_dis_ = 0;

/* The task of loop index it when the head's nblk whole tile blocks of one image go out as one
 * contiguous run per thread (afrt_winograd_f32): the index space is padded to nth runs of
 * cdiv(nblk, nth), index it goes to thread it % nth (schedule(static, 1)) as its
 * (it / nth)-th block; the last nblk % nth threads take one block more, so the short last
 * block goes to a thread with more blocks, as when dealt round-robin. -1: a padding index. */
static inline int64_t afrt_wg_run_task_(int64_t it, int64_t nblk, int64_t nth) {
    const int64_t r = it % nth, q = it / nth, base = nblk / nth, lo = nth - nblk % nth;
    const int64_t count = base + (r >= lo), start = r * base + afrt_max_(0, r - lo);
    return q < count ? start + q : -1;
}

/* Winograd F(4x4, 3x3) convolution (see the top of this file). Returns 0 if the conv does not
 * fit (afrt_winograd_fits), memory cannot be had, or the input holds a NaN or an inf; then
 * some outputs may be written and the caller computes them all again (afrt_conv2d_f32).
 * The transforms mix each 6x6 input block into all 16 outputs of its tile, so a non-finite
 * input would make NaN of outputs whose 3x3 window does not hold it (and inf - inf a NaN
 * where ONNX gives inf): such inputs take the im2col path, whose NaN and inf are ONNX's. */
static inline int afrt_winograd_f32(const float *x, const float *w, const float *bias, float *y,
                                    const afrt_conv_params *p, afrt_epilogue epi) {
    if (!afrt_winograd_fits(p)) return 0;
    if (p->N <= 0) return 1;
    if (!afrt_wg_all_finite_(x, p->N * p->C * p->H * p->W)) return 0;
    afrt_init_once_();
    const int64_t C = p->C, K = p->K, ohw = p->OH * p->OW, hw = p->H * p->W;
    const int64_t TW = afrt_cdiv_(p->OW, 4), T = afrt_cdiv_(p->OH, 4) * TW;
    const int64_t MR = afrt_choose_mr_(K), Mp = afrt_round_up_(K, MR);
    const float *U = afrt_wg_weights_(w, K, C);
    if (!U) return 0;
    /* tiles per task: V (36 x C x np) and M (36 x K x np) within AFRT_WG_BYTES */
    int64_t np = AFRT_WG_BYTES / (int64_t)(AFRT_WG_X * sizeof(float) * (C + K));
    np = afrt_max_(AFRT_NR, afrt_min_(4 * AFRT_NR, np / AFRT_NR * AFRT_NR));
    np = afrt_min_(np, afrt_round_up_(T, AFRT_NR));
    const int64_t ntb = afrt_nblocks_(T, np);
    /* Output-channel blocks (afrt_wg_split_k_): each thread then takes one block of every
     * tile block; and the tile blocks' V, which every channel block reads, is transformed
     * once into the calling thread's scratch (slot 13), its (tile block, input-channel
     * chunk) pieces split over the threads in the same parallel region before the tasks,
     * where each task transformed its own V, so every thread transformed all of it. */
    const int64_t nth = afrt_num_threads_, tt = p->N * ntb;
    int64_t kb = K, nkb = 1;
    if (afrt_wg_split_k_(p->N, T, np, nth, K, MR)) nkb = afrt_wg_kblocks_(K, MR, nth, &kb);
    /* Tasks were dealt round-robin (schedule(static, 1); one image's whole blocks now as runs
     * with the same counts, below): the last tile block is usually short
     * (144 tiles = 4 x 32 + 16), and contiguous runs gave one thread 3 whole blocks and the
     * other 2 blocks, one of them that short one (two threads at most 1.6x one); dealt in
     * turn, the short block goes to the thread with more blocks. Same tasks, same sums.
     * Not split by channels, the last round's tt % nth blocks (the short one among them)
     * are (tail tasks after the head's whole blocks) where each thread gets
     * AFRT_WG_SPLIT_MIN_ROWS channels or more: one channel block of each per thread, each
     * task transforming its block's V (GoogLeNet's 64 -> 192 at 56x56: 196 tiles = 6 x 32
     * + 4, and the thread with the 4-tile block had 3.5 blocks' work against 3; with fewer
     * channels the transform done twice cost more than the balance gained). */
    int64_t tail = 0, kbt = K, nkt = 1;
    if (nkb == 1 && nth > 1 && tt % nth && K >= nth * AFRT_WG_SPLIT_MIN_ROWS) {
        tail = tt % nth;
        nkt = afrt_wg_kblocks_(K, MR, nth, &kbt);
    }
    const int64_t head = (tt - tail) * nkb, ntasks = head + tail * nkt;
    /* One image's whole tile blocks (not split by channels) go out as one contiguous run per
     * thread rather than round-robin: adjacent blocks share input rows and output cache lines,
     * and a thread's run of the map is the one its previous and next convs' runs mostly touch
     * (Inception-v3's 32 -> 32 and 32 -> 64 at 147x147, 22 and 43 blocks: busiest of two
     * threads 1.18-1.19 -> 1.10-1.13 and 1.97-2.02 -> 1.81-1.85 ms in the model, docs/runtime.md
     * "Two threads on Inception-v3"). The same blocks a thread as
     * round-robin (afrt_wg_run_task_), the same tasks, the same bits. */
    const int runs = nkb == 1 && p->N == 1 && nth > 1 && head > nth && !afrt_wg_runs_dis_;
    const int64_t hpad = runs ? nth * afrt_cdiv_(head, nth) : head, nit = hpad + (ntasks - head);
    /* the built-in clamp epilogue: in the output transform, before each output's store */
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    const size_t vfl = (size_t)(AFRT_WG_X * C * np), mfl = (size_t)(AFRT_WG_X * K * np);
    float *vsh = nkb > 1 && !afrt_wg_shared_v_dis_ &&
                         (double)tt * (double)vfl * sizeof(float) <= (double)AFRT_WG_SHARED_V_BYTES
                     ? (float *)afrt_thread_scratch(13, (size_t)tt * vfl * sizeof(float))
                     : NULL;
    const int64_t nch = vsh ? afrt_min_(nth, C) : 0, cch = vsh ? afrt_cdiv_(C, nch) : 0;
    int failed = 0;
    AFRT_OMP(parallel num_threads(afrt_threads_now()) if (ntasks > 1 && afrt_worth_threads_((double)p->N * K * ohw * C * 4)))
    {
    if (vsh) { /* chunk q of every tile block to thread q: the same channels per thread */
        AFRT_OMP(for schedule(static, 1))
        for (int64_t u = 0; u < tt * nch; ++u) {
            afrt_arrive_();
            const int64_t b = u / nch, c0 = (u % nch) * cch, c1 = afrt_min_(C, c0 + cch);
            const int64_t t0 = (b % ntb) * np, nt = afrt_min_(np, T - t0);
            const int64_t npb = afrt_round_up_(nt, AFRT_NR);
            afrt_wg_input_(x + (b / ntb) * C * hw, p, TW, t0, nt, npb, vsh + b * vfl, C * npb,
                           c0, c1);
        }
    }
    AFRT_OMP(for schedule(static, 1))
    for (int64_t it = 0; it < nit; ++it) {
        afrt_arrive_();
        const int64_t task = it >= hpad ? head + (it - hpad)
                             : runs   ? afrt_wg_run_task_(it, head, nth)
                                      : it;
        if (task < 0) continue; /* padding of the runs */
        /* tile block b (of image b / ntb), channel block j of nk blocks of bk */
        const int in_head = task < head;
        const int64_t nk = in_head ? nkb : nkt, bk = in_head ? kb : kbt;
        const int64_t b = in_head ? task / nkb : tt - tail + (task - head) / nkt;
        const int64_t j = in_head ? task % nkb : (task - head) % nkt;
        const int64_t n = b / ntb, t0 = (b % ntb) * np, k0 = j * bk;
        const int64_t nt = afrt_min_(np, T - t0), k1 = afrt_split_end_(j, nk, bk, K);
        const int64_t npb = afrt_round_up_(nt, AFRT_NR);
        float *V = (float *)afrt_thread_scratch(0, ((vsh ? 0 : vfl) + mfl) * sizeof(float));
        if (!V) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *M = vsh ? V : V + vfl;
        const float *xn = x + n * C * hw;
        float *yn = y + n * K * ohw;
        if (vsh) V = vsh + b * vfl;
        else afrt_wg_input_(xn, p, TW, t0, nt, npb, V, C * npb, 0, C);
        const afrt_bsrc_ none = {NULL, NULL, 0, 0, NULL, NULL, 0, NULL, 0, NULL};
        for (int xi = 0; xi < AFRT_WG_X; ++xi) {
            afrt_bsrc_ bs = none;
            bs.packed = V + xi * C * npb;
            afrt_gemm_tile_(U + xi * Mp * C, K, nt, C, &bs, M + xi * npb, AFRT_WG_X * npb, k0, k1,
                            0, nt, NULL, 0, NULL);
        }
        afrt_wg_output_(M, bias, p, TW, t0, nt, npb, k0, k1, yn, cl,
                        cl ? afrt_epi_clamp_res_(cl, n, 0) : NULL);
        if (epi.fn && !cl) afrt_wg_epilogue_(p, TW, t0, nt, n, k0, k1, yn, epi);
    }
    } /* the parallel region */
    return !failed;
}

#endif /* AFRT_WINOGRAD_H */
