/* The built-in clamp epilogue (afrt_epi_clamp_fn) against the same epilogue called as an
 * ordinary function, through every GEMM-core caller: conv 1x1 and im2col (groups, batch 2),
 * afrt_matmul_f32 (batch, alpha, beta, broadcast residual). The GEMM core applies the built-in
 * one in the micro-kernel's registers (AVX-512) or per micro-tile; the results must be
 * bit-identical, NaN, inf and -0.0 included (the inputs hold some).
 *
 *   afrt_epi_clamp_driver THREADS   -> prints "ok N" (N cases) or the first mismatch, exit 1
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "afrt.h"

/* The same computation as afrt_epi_clamp_fn, by a function the GEMM core does not know. */
static void plain_clamp(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                        int64_t c1, int64_t ld) {
    afrt_epi_clamp_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

static uint32_t rng_ = 12345u;
static float frand_(void) {
    rng_ = rng_ * 1664525u + 1013904223u;
    return (float)((rng_ >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static void fill_(float *p, size_t n, int specials) {
    for (size_t i = 0; i < n; ++i) p[i] = frand_();
    if (specials && n > 40) {
        p[3] = NAN;
        p[17] = INFINITY;
        p[29] = -INFINITY;
        p[n - 2] = -0.0f;
    }
}

static int same_(const float *a, const float *b, size_t n, const char *what) {
    if (memcmp(a, b, n * sizeof(float)) == 0) return 1;
    for (size_t i = 0; i < n; ++i) {
        uint32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x != y) {
            printf("%s: element %zu differs: %a vs %a\n", what, i, (double)a[i], (double)b[i]);
            return 0;
        }
    }
    return 1;
}

static const float BOUNDS_[][2] = {{0.0f, INFINITY}, {0.0f, 6.0f}, {-INFINITY, INFINITY},
                                   {-0.25f, 0.25f}};

int main(int argc, char **argv) {
    afrt_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    int cases = 0;
    /* N, C, H, W, K, R, S, OH, OW, sh, sw, pt, pl, pb, pr, dh, dw, group */
    const afrt_conv_params convs[] = {
        {2, 24, 9, 11, 40, 1, 1, 9, 11, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* 1x1, edge tiles */
        {1, 64, 20, 20, 96, 1, 1, 20, 20, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* 1x1, full tiles */
        {2, 8, 13, 13, 36, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 2},    /* im2col, groups */
        {1, 300, 6, 6, 20, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 2, 2, 1},    /* K > AFRT_KC */
    };
    for (size_t ci = 0; ci < sizeof convs / sizeof convs[0]; ++ci) {
        const afrt_conv_params *p = &convs[ci];
        const size_t nx = (size_t)(p->N * p->C * p->H * p->W);
        const size_t nw = (size_t)(p->K * (p->C / p->group) * p->R * p->S);
        const size_t ny = (size_t)(p->N * p->K * p->OH * p->OW);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)p->K * 4);
        float *res = malloc(ny * 4), *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
        fill_(x, nx, 1);
        fill_(w, nw, 0);
        fill_(b, (size_t)p->K, 0);
        fill_(res, ny, 1);
        for (size_t bi = 0; bi < sizeof BOUNDS_ / sizeof BOUNDS_[0]; ++bi)
            for (int with_res = 0; with_res < 2; ++with_res)
                for (int with_bias = 0; with_bias < 2; ++with_bias) {
                    const afrt_epi_clamp d = {with_res ? res : NULL, p->K * p->OH * p->OW,
                                              p->OH * p->OW, BOUNDS_[bi][0], BOUNDS_[bi][1]};
                    const afrt_epilogue fast = {afrt_epi_clamp_fn, (void *)&d};
                    const afrt_epilogue slow = {plain_clamp, (void *)&d};
                    afrt_conv2d_f32(x, w, with_bias ? b : NULL, y0, p, NULL, slow);
                    afrt_conv2d_f32(x, w, with_bias ? b : NULL, y1, p, NULL, fast);
                    if (!same_(y0, y1, ny, "conv")) {
                        printf("conv case %zu bounds %zu res %d bias %d\n", ci, bi, with_res,
                               with_bias);
                        return 1;
                    }
                    ++cases;
                }
        free(x), free(w), free(b), free(res), free(y0), free(y1);
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
            if (!same_(c0, c1, nc, "matmul")) {
                printf("matmul case %zu bounds %zu\n", mi, bi);
                return 1;
            }
            ++cases;
        }
        free(a), free(bm), free(res), free(c0), free(c1), free(cinit);
    }
    printf("ok %d\n", cases);
    return 0;
}
