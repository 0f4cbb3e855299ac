/* The built-in clamp epilogue (afrt_epi_clamp_fn) against the same epilogue called as an
 * ordinary function, through every kernel that recognises it: the GEMM core's callers, conv 1x1
 * and im2col (groups, batch 2) and afrt_matmul_f32 (batch, alpha, beta, broadcast residual);
 * Winograd (afrt_winograd_f32: cut edge tiles, several tile blocks), the blocked direct conv
 * (afrt_nchwc_f32: tile widths 14, 13, 7 and dropped columns, row pairs, stride 2, 1x1, channel
 * counts off the 16/32 blocks; afrt_nchwc_ex_f32 with a blocked output). Each applies the
 * built-in one to its values before their only store; the results must be bit-identical to the callback's, NaN,
 * inf and -0.0 included (the inputs, residuals and some biases hold some), with residuals per
 * image and broadcast over the batch. In place (check_inplace_conv_ / check_inplace_matmul_):
 * the output buffer holds the residual, bit for bit against a separate residual.
 *
 *   afrt_epi_clamp_driver THREADS   -> prints "ok N" (N cases) or the first mismatch, exit 1
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "afrt.h"
#include "driver_util.h"

/* The same computation as afrt_epi_clamp_fn, by a function the GEMM core does not know. */
static void plain_clamp(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                        int64_t c1, int64_t ld) {
    afrt_epi_clamp_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

/* Does nothing: with it a kernel adds the bias as a pass over its stored values (the way a
 * bias with no epilogue was finished before the GEMM core applied it in its registers). */
static void noop_epilogue(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1,
                          int64_t c0, int64_t c1, int64_t ld) {
    (void)ctx, (void)out, (void)batch, (void)r0, (void)r1, (void)c0, (void)c1, (void)ld;
}

static void fill_(float *p, size_t n, int specials) {
    drv_fill(p, n, 1.0f);
    if (specials && n > 40) {
        p[3] = NAN;
        p[17] = INFINITY;
        p[29] = -INFINITY;
        p[n - 2] = -0.0f;
    }
}

static const float BOUNDS_[][2] = {{0.0f, INFINITY}, {0.0f, 6.0f}, {-INFINITY, INFINITY},
                                   {-0.25f, 0.25f}};

/* Every bound and residual (none, per image, broadcast over the batch) of one conv on one
 * kernel with the plain bias, and with the Relu6 bounds also no bias and a bias holding NaN,
 * -inf and -0.0; both epilogues. Returns the cases checked, or -1 after printing the first
 * mismatch. */
static int check_conv_(int kind, const afrt_conv_params *p) {
    const int64_t ohw = p->OH * p->OW;
    /* a blocked output (and its residual, in the same layout) is [N][K/16][OH][OW][16] */
    const int64_t Ky = kind == DRV_NCHWC_BLOCKED_OUT ? afrt_round_up_(p->K, AFRT_NC_L) : p->K;
    const size_t nx = (size_t)(p->N * p->C * p->H * p->W);
    const size_t nw = (size_t)(p->K * (p->C / p->group) * p->R * p->S);
    const size_t ny = (size_t)(p->N * Ky * ohw);
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)p->K * 4);
    float *bs = malloc((size_t)p->K * 4);
    float *res = malloc(ny * 4), *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
    fill_(x, nx, kind != DRV_WINOGRAD); /* Winograd declines non-finite inputs */
    fill_(w, nw, 0);
    fill_(b, (size_t)p->K, 0);
    memcpy(bs, b, (size_t)p->K * 4);
    bs[0] = NAN;
    bs[p->K > 2 ? 2 : 0] = -INFINITY;
    bs[p->K - 1] = -0.0f;
    fill_(res, ny, 1);
    int cases = 0;
    for (size_t bi = 0; bi < sizeof BOUNDS_ / sizeof BOUNDS_[0]; ++bi)
        for (int with_res = 0; with_res < 3; ++with_res)
            for (int with_bias = 0; with_bias < 3; ++with_bias) {
                if (with_res == 2 && (p->N < 2 || kind == DRV_NCHWC_BLOCKED_OUT)) continue;
                if (with_bias != 1 && bi != 1) continue;
                const float *bias = with_bias == 0 ? NULL : with_bias == 1 ? b : bs;
                const afrt_epi_clamp d = {with_res ? res : NULL, with_res == 2 ? 0 : Ky * ohw,
                                          ohw, BOUNDS_[bi][0], BOUNDS_[bi][1]};
                const afrt_epilogue fast = {afrt_epi_clamp_fn, (void *)&d};
                const afrt_epilogue slow = {plain_clamp, (void *)&d};
                memset(y0, 0, ny * 4);
                memset(y1, 0, ny * 4);
                const int ran0 = drv_run_conv(kind, x, w, bias, y0, p, slow);
                const int ran1 = drv_run_conv(kind, x, w, bias, y1, p, fast);
                if (!ran0 || !ran1 || !drv_same(y0, y1, ny, DRV_CONV_NAMES[kind])) {
                    printf("%s: ran %d %d, bounds %zu res %d bias %d\n", DRV_CONV_NAMES[kind], ran0,
                           ran1, bi, with_res, with_bias);
                    cases = -1;
                    goto done;
                }
                ++cases;
            }
    /* the bias alone (no epilogue: a conv with its BatchNorm folded and nothing else fused)
     * against the same bias added as a pass, plain and with NaN, -inf and -0.0 */
    for (int with_bias = 1; with_bias < 3; ++with_bias) {
        const float *bias = with_bias == 1 ? b : bs;
        memset(y0, 0, ny * 4);
        memset(y1, 0, ny * 4);
        const int ran0 = drv_run_conv(kind, x, w, bias, y0, p, (afrt_epilogue){noop_epilogue, NULL});
        const int ran1 = drv_run_conv(kind, x, w, bias, y1, p, afrt_no_epilogue());
        if (!ran0 || !ran1 || !drv_same(y0, y1, ny, DRV_CONV_NAMES[kind])) {
            printf("%s: ran %d %d, bias %d, no epilogue\n", DRV_CONV_NAMES[kind], ran0, ran1,
                   with_bias);
            cases = -1;
            goto done;
        }
        ++cases;
    }
done:
    free(x), free(w), free(b), free(bs), free(res), free(y0), free(y1);
    return cases;
}

/* In place (plan-buffers' memory.residual_inplace): afrt_conv2d_f32 with the output buffer
 * holding the residual the built-in clamp adds must store exactly what it stores with a
 * separate residual and the callback. The GEMM core computes it in place (partial sums of
 * several k blocks, edge, half and full tiles, every ISA); other paths (Winograd, depthwise,
 * gemm_1x1_t, ...) take a copy of the residual. Returns the cases checked or -1. */
static int check_inplace_conv_(const afrt_conv_params *p) {
    const int64_t ohw = p->OH * p->OW;
    const size_t nx = (size_t)(p->N * p->C * p->H * p->W);
    const size_t nw = (size_t)(p->K * (p->C / p->group) * p->R * p->S);
    const size_t ny = (size_t)(p->N * p->K * ohw);
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)p->K * 4);
    float *res = malloc(ny * 4), *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
    fill_(x, nx, 0);
    fill_(w, nw, 0);
    fill_(b, (size_t)p->K, 0);
    fill_(res, ny, 1);
    int cases = 0;
    for (size_t bi = 0; bi < sizeof BOUNDS_ / sizeof BOUNDS_[0]; ++bi)
        for (int with_bias = 0; with_bias < 2; ++with_bias) {
            const float *bias = with_bias ? b : NULL;
            const afrt_epi_clamp d0 = {res, p->K * ohw, ohw, BOUNDS_[bi][0], BOUNDS_[bi][1]};
            const afrt_epi_clamp d1 = {y1, p->K * ohw, ohw, BOUNDS_[bi][0], BOUNDS_[bi][1]};
            const afrt_epilogue slow = {plain_clamp, (void *)&d0};
            const afrt_epilogue fast = {afrt_epi_clamp_fn, (void *)&d1};
            memset(y0, 0, ny * 4);
            memcpy(y1, res, ny * 4);
            afrt_conv2d_f32(x, w, bias, y0, p, NULL, slow);
            afrt_conv2d_f32(x, w, bias, y1, p, NULL, fast);
            if (!drv_same(y0, y1, ny, "conv2d in place")) {
                printf("conv2d in place: bounds %zu bias %d\n", bi, with_bias);
                cases = -1;
                goto done;
            }
            ++cases;
        }
done:
    free(x), free(w), free(b), free(res), free(y0), free(y1);
    return cases;
}

/* afrt_matmul_f32 in place (beta 0, one residual per batch item), as check_inplace_conv_. */
static int check_inplace_matmul_(int64_t B, int64_t M, int64_t N, int64_t K, float alpha) {
    const size_t na = (size_t)(B * M * K), nb = (size_t)(B * K * N), nc = (size_t)(B * M * N);
    float *a = malloc(na * 4), *bm = malloc(nb * 4), *res = malloc(nc * 4);
    float *c0 = malloc(nc * 4), *c1 = malloc(nc * 4);
    fill_(a, na, 1);
    fill_(bm, nb, 0);
    fill_(res, nc, 1);
    int cases = 0;
    for (size_t bi = 0; bi < sizeof BOUNDS_ / sizeof BOUNDS_[0]; ++bi) {
        const afrt_epi_clamp d0 = {res, M * N, N, BOUNDS_[bi][0], BOUNDS_[bi][1]};
        const afrt_epi_clamp d1 = {c1, M * N, N, BOUNDS_[bi][0], BOUNDS_[bi][1]};
        const afrt_epilogue slow = {plain_clamp, (void *)&d0};
        const afrt_epilogue fast = {afrt_epi_clamp_fn, (void *)&d1};
        memset(c0, 0, nc * 4);
        memcpy(c1, res, nc * 4);
        afrt_matmul_f32(B, M, N, K, alpha, a, K, M * K, 0, bm, N, K * N, 0, 0.0f, c0, N, M * N, slow);
        afrt_matmul_f32(B, M, N, K, alpha, a, K, M * K, 0, bm, N, K * N, 0, 0.0f, c1, N, M * N, fast);
        if (!drv_same(c0, c1, nc, "matmul in place")) {
            printf("matmul in place: %lld x %lld x %lld, bounds %zu\n", (long long)M, (long long)N,
                   (long long)K, bi);
            cases = -1;
            break;
        }
        ++cases;
    }
    free(a), free(bm), free(res), free(c0), free(c1);
    return cases;
}

int main(int argc, char **argv) {
    drv_seed(12345u);
    afrt_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    int cases = 0;
    /* N, C, H, W, K, R, S, OH, OW, sh, sw, pt, pl, pb, pr, dh, dw, group */
    const afrt_conv_params convs[] = {
        {2, 24, 9, 11, 40, 1, 1, 9, 11, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* 1x1, edge tiles */
        {1, 64, 20, 20, 96, 1, 1, 20, 20, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* 1x1, full tiles */
        {2, 8, 13, 13, 36, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 2},    /* im2col, groups */
        {1, 300, 6, 6, 20, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 2, 2, 1},    /* K > AFRT_KC */
    };
    /* kernel, then N, C, H, W, K, R, S, OH, OW, sh, sw, pt, pl, pb, pr, dh, dw, group */
    const struct {
        int kind;
        afrt_conv_params p;
    } kconvs[] = {
        /* cut edge tiles (10 x 11 outputs), K off the micro-tile rows */
        {DRV_WINOGRAD, {1, 16, 10, 11, 20, 3, 3, 10, 11, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        /* batch 2, no padding, 25 tiles per image */
        {DRV_WINOGRAD, {2, 24, 21, 19, 40, 3, 3, 19, 17, 1, 1, 0, 0, 0, 0, 1, 1, 1}},
        /* 144 tiles: two tile blocks of one image, the second not a multiple of 16 */
        {DRV_WINOGRAD, {1, 8, 48, 46, 12, 3, 3, 48, 46, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {DRV_NCHWC, {1, 16, 14, 14, 32, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1}},  /* width 14 */
        {DRV_NCHWC, {2, 20, 13, 13, 40, 3, 3, 13, 13, 1, 1, 1, 1, 1, 1, 1, 1, 1}},  /* 13, C, K off */
        {DRV_NCHWC, {1, 32, 7, 7, 48, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1}},      /* row pairs */
        {DRV_NCHWC, {1, 16, 20, 10, 32, 3, 3, 10, 5, 2, 2, 1, 1, 1, 1, 1, 1, 1}},   /* stride 2 */
        {DRV_NCHWC, {2, 16, 9, 30, 36, 1, 1, 9, 30, 1, 1, 0, 0, 0, 0, 1, 1, 1}},    /* 1x1, 14+14+2 */
        {DRV_NCHWC_BLOCKED_OUT, {1, 16, 13, 13, 40, 3, 3, 13, 13, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {DRV_NCHWC_BLOCKED_OUT, {2, 32, 7, 7, 32, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
    };
    for (size_t ci = 0; ci < sizeof convs / sizeof convs[0]; ++ci) {
        const int got = check_conv_(DRV_CONV2D, &convs[ci]);
        if (got < 0) {
            printf("conv case %zu\n", ci);
            return 1;
        }
        cases += got;
    }
    for (size_t ci = 0; ci < sizeof kconvs / sizeof kconvs[0]; ++ci) {
        const int got = check_conv_(kconvs[ci].kind, &kconvs[ci].p);
        if (got < 0) {
            printf("kernel case %zu\n", ci);
            return 1;
        }
        cases += got;
    }
    /* batch, M, N, K, alpha, beta, trans_a, trans_b, residual broadcast over the batch */
    const struct {
        int64_t batch, M, N, K;
        float alpha, beta;
        int ta, tb, bcast;
    } mms[] = {
        {2, 30, 70, 33, 1.0f, 0.0f, 0, 0, 0},
        {3, 24, 64, 300, 0.5f, 0.0f, 0, 1, 1},
        {1, 13, 45, 17, 1.0f, 1.0f, 1, 0, 0},
        {2, 16, 32, 8, 2.0f, 0.75f, 0, 0, 1},
    };
    for (size_t mi = 0; mi < sizeof mms / sizeof mms[0]; ++mi) {
        const int64_t B = mms[mi].batch, M = mms[mi].M, N = mms[mi].N, K = mms[mi].K;
        const size_t na = (size_t)(B * M * K), nb = (size_t)(B * K * N), nc = (size_t)(B * M * N);
        float *a = malloc(na * 4), *bm = malloc(nb * 4), *res = malloc(nc * 4);
        float *c0 = malloc(nc * 4), *c1 = malloc(nc * 4), *cinit = malloc(nc * 4);
        fill_(a, na, 1);
        fill_(bm, nb, 0);
        fill_(res, nc, 1);
        fill_(cinit, nc, 0);
        const int64_t lda = mms[mi].ta ? M : K, ldb = mms[mi].tb ? K : N;
        for (size_t bi = 0; bi < sizeof BOUNDS_ / sizeof BOUNDS_[0]; ++bi) {
            const afrt_epi_clamp d = {res, mms[mi].bcast ? 0 : M * N, N, BOUNDS_[bi][0],
                                      BOUNDS_[bi][1]};
            const afrt_epilogue fast = {afrt_epi_clamp_fn, (void *)&d};
            const afrt_epilogue slow = {plain_clamp, (void *)&d};
            memcpy(c0, cinit, nc * 4);
            memcpy(c1, cinit, nc * 4);
            afrt_matmul_f32(B, M, N, K, mms[mi].alpha, a, lda, M * K, mms[mi].ta, bm, ldb, K * N,
                            mms[mi].tb, mms[mi].beta, c0, N, M * N, slow);
            afrt_matmul_f32(B, M, N, K, mms[mi].alpha, a, lda, M * K, mms[mi].ta, bm, ldb, K * N,
                            mms[mi].tb, mms[mi].beta, c1, N, M * N, fast);
            if (!drv_same(c0, c1, nc, "matmul")) {
                printf("matmul case %zu bounds %zu\n", mi, bi);
                return 1;
            }
            ++cases;
        }
        free(a), free(bm), free(res), free(c0), free(c1), free(cinit);
    }
    /* in place: N, C, H, W, K, R, S, OH, OW, sh, sw, pt, pl, pb, pr, dh, dw, group */
    const afrt_conv_params iconvs[] = {
        {2, 24, 9, 11, 40, 1, 1, 9, 11, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* 1x1, edge tiles */
        {1, 64, 24, 24, 96, 1, 1, 24, 24, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* 1x1, full + half tiles */
        {1, 600, 7, 7, 40, 1, 1, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1},    /* 1x1, 3 k blocks, edges */
        {2, 520, 8, 8, 48, 1, 1, 8, 8, 1, 1, 0, 0, 0, 0, 1, 1, 1},    /* 1x1, 3 k blocks, full */
        {2, 8, 13, 13, 36, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 2},    /* im2col, groups */
        {1, 300, 6, 6, 20, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 2, 2, 1},    /* im2col, K > AFRT_KC */
        /* K > AFRT_KC, more rows than K, all of K's B at once (afrt_gemm_tile_kall_), odd
         * M: two k blocks and a 17-column edge (layer4's residual conv, narrower), im2col */
        {1, 300, 7, 7, 333, 1, 1, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {1, 30, 9, 9, 301, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        /* partial sums in scratch: two k blocks exactly with fewer rows than K; a B too wide
         * for all of K at once (512 + 17 columns) */
        {1, 512, 7, 7, 37, 1, 1, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {1, 300, 23, 23, 329, 1, 1, 23, 23, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {1, 16, 10, 11, 20, 3, 3, 10, 11, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* Winograd: a copy */
        {2, 12, 9, 9, 12, 3, 3, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, 12},    /* depthwise: a copy */
        {1, 512, 4, 4, 64, 1, 1, 4, 4, 1, 1, 0, 0, 0, 0, 1, 1, 1},    /* gemm_1x1_t: a copy */
    };
    for (size_t ci = 0; ci < sizeof iconvs / sizeof iconvs[0]; ++ci) {
        const int got = check_inplace_conv_(&iconvs[ci]);
        if (got < 0) {
            printf("in-place conv case %zu\n", ci);
            return 1;
        }
        cases += got;
    }
    /* in place: batch, M, N, K, alpha (K 600: three k blocks; N 70 and 45: edge and half; K 512:
     * two k blocks exactly, with fewer and with more rows than K; N 530: too wide for all of
     * K's B at once) */
    const struct {
        int64_t batch, M, N, K;
        float alpha;
    } imms[] = {{2, 30, 70, 33, 1.0f},  {1, 24, 45, 600, 0.5f},  {3, 13, 64, 260, 2.0f},
                {2, 27, 33, 512, 1.0f}, {1, 519, 33, 512, 1.0f}, {1, 309, 530, 300, 1.0f}};
    for (size_t mi = 0; mi < sizeof imms / sizeof imms[0]; ++mi) {
        const int got = check_inplace_matmul_(imms[mi].batch, imms[mi].M, imms[mi].N, imms[mi].K,
                                              imms[mi].alpha);
        if (got < 0) return 1;
        cases += got;
    }
    printf("ok %d\n", cases);
    return 0;
}
