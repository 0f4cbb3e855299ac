/* The built-in SiLU epilogue (afrt_epi_silu_fn, afrt_silu16_ / afrt_silu8_ / afrt_silu1_).
 *
 *   afrt_silu_driver sweep    -> "sweep silu ABS REL gate ABS REL", the largest absolute and
 *                                relative errors against float64 over a dense sweep of
 *                                [-100, 100] plus special values (relative where |exact| >=
 *                                1e-30), or the first special value that is wrong, exit 1
 *   afrt_silu_driver THREADS  -> "ok N": conv (1x1, im2col, depthwise, NCHWc, Winograd) and
 *                                matmul with the built-in epilogue bit for bit against the same
 *                                kernel calling the same function as an epilogue it does not
 *                                know (the GEMM core applies the built-in one in registers),
 *                                or the first mismatch, exit 1
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "afrt.h"
#include "driver_util.h"

static double exact_(double v, int gate) {
    const double s = 1.0 / (1.0 + exp(-v));
    return gate ? s : v * s;
}

/* Rows of odd lengths at odd offsets: the vector loop, its masked or scalar tail. */
static void run_(float *y, int64_t n, int gate) {
    const afrt_epi_silu d = {gate};
    const int64_t ld = 37;
    for (int64_t r0 = 0; r0 < n; r0 += ld)
        afrt_epi_silu_fn((void *)&d, y + r0 - 3, 0, 0, 1, 3, 3 + afrt_min_(ld, n - r0), ld);
}

static int sweep_(void) {
    const int64_t n = 2000001;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) x[i] = (float)(-100.0 + 200.0 * (double)i / (double)(n - 1));
    printf("sweep");
    for (int gate = 0; gate < 2; ++gate) {
        memcpy(y, x, (size_t)n * 4);
        run_(y, n, gate);
        double abs_err = 0.0, rel_err = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            const double e = exact_((double)x[i], gate), d = fabs((double)y[i] - e);
            if (d > abs_err) abs_err = d;
            if (fabs(e) >= 1e-30 && d / fabs(e) > rel_err) rel_err = d / fabs(e);
        }
        printf(" %s %.3g %.3g", gate ? "gate" : "silu", abs_err, rel_err);
        /* special values: exact limits (NaN, +-inf, -0.0, FLT_MAX, FLT_TRUE_MIN) */
        const float sx[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, FLT_MAX, -FLT_MAX,
                            FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e30f, -1e30f, 88.5f, -88.5f, -87.0f};
        const int ns = (int)(sizeof sx / sizeof sx[0]);
        float sy[sizeof sx / sizeof sx[0]];
        memcpy(sy, sx, sizeof sx);
        run_(sy, ns, gate);
        for (int i = 0; i < ns; ++i) {
            const float v = sx[i], g = sy[i];
            int ok;
            if (v != v) ok = g != g;
            else if (v == INFINITY) ok = g == (gate ? 1.0f : INFINITY);
            else if (v == -INFINITY) ok = gate ? g == 0.0f : g != g; /* -inf * 0, as the graph */
            else if (v <= -88.0f) ok = g == 0.0f;
            else if (v > 88.0f) ok = g == (gate ? 1.0f : v);
            else ok = fabs((double)g - exact_((double)v, gate)) <= 1e-6 * fabs(exact_((double)v, gate)) + 1e-37;
            if (!ok) {
                printf("\n%s(%a) gave %a\n", gate ? "gate" : "silu", (double)v, (double)g);
                return 1;
            }
        }
    }
    printf("\n");
    free(x), free(y);
    return 0;
}

/* afrt_epi_silu_fn by a function no kernel recognises. */
static void plain_silu(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                       int64_t c1, int64_t ld) {
    afrt_epi_silu_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

/* Both gates of one conv; returns the cases checked or -1. Inputs of scale 8 reach the
 * exponential's whole useful range; one input holds NaN, one +inf (conv outputs NaN / inf). */
static int check_conv_(int kind, const afrt_conv_params *p) {
    const int64_t ohw = p->OH * p->OW;
    const size_t nx = (size_t)(p->N * p->C * p->H * p->W);
    const size_t nw = (size_t)(p->K * (p->C / p->group) * p->R * p->S);
    const size_t ny = (size_t)(p->N * p->K * ohw);
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)p->K * 4);
    float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
    drv_fill(x, nx, 8.0f);
    drv_fill(w, nw, 2.0f);
    drv_fill(b, (size_t)p->K, 4.0f);
    if (kind != DRV_WINOGRAD) x[nx / 3] = NAN, x[nx / 2] = INFINITY; /* Winograd declines them */
    int cases = 0;
    for (int gate = 0; gate < 2; ++gate) {
        const afrt_epi_silu d = {gate};
        const afrt_epilogue fast = {afrt_epi_silu_fn, (void *)&d};
        memset(y0, 0, ny * 4);
        memset(y1, 0, ny * 4);
        const afrt_epilogue slow = {plain_silu, (void *)&d};
        const int ran0 = drv_run_conv(kind, x, w, b, y0, p, slow);
        const int ran1 = drv_run_conv(kind, x, w, b, y1, p, fast);
        if (!ran0 || !ran1 || !drv_same(y0, y1, ny, DRV_CONV_NAMES[kind])) {
            printf("%s: ran %d %d gate %d\n", DRV_CONV_NAMES[kind], ran0, ran1, gate);
            cases = -1;
            break;
        }
        ++cases;
    }
    free(x), free(w), free(b), free(y0), free(y1);
    return cases;
}

int main(int argc, char **argv) {
    drv_seed(12345u);
    if (argc > 1 && strcmp(argv[1], "sweep") == 0) return sweep_();
    afrt_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    int cases = 0;
    /* kernel, then N, C, H, W, K, R, S, OH, OW, sh, sw, pt, pl, pb, pr, dh, dw, group */
    const struct {
        int kind;
        afrt_conv_params p;
    } convs[] = {
        {DRV_CONV2D, {2, 24, 9, 11, 40, 1, 1, 9, 11, 1, 1, 0, 0, 0, 0, 1, 1, 1}},   /* 1x1, edges */
        {DRV_CONV2D, {1, 64, 20, 20, 96, 1, 1, 20, 20, 1, 1, 0, 0, 0, 0, 1, 1, 1}}, /* full tiles */
        {DRV_CONV2D, {1, 300, 6, 6, 20, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 2, 2, 1}},    /* K > KC */
        {DRV_CONV2D, {2, 8, 13, 13, 36, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 2}},    /* groups */
        {DRV_DW, {1, 40, 17, 19, 40, 3, 3, 17, 19, 1, 1, 1, 1, 1, 1, 1, 1, 40}},
        {DRV_DW, {2, 24, 16, 16, 24, 5, 5, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1, 24}},
        {DRV_WINOGRAD, {1, 16, 10, 11, 20, 3, 3, 10, 11, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {DRV_NCHWC, {1, 16, 14, 14, 32, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
    };
    for (size_t ci = 0; ci < sizeof convs / sizeof convs[0]; ++ci) {
        const int got = check_conv_(convs[ci].kind, &convs[ci].p);
        if (got < 0) {
            printf("conv case %zu\n", ci);
            return 1;
        }
        cases += got;
    }
    /* batch, M, N, K: edge and full tiles, K over one k block */
    const int64_t mms[][4] = {{2, 30, 70, 33}, {1, 24, 64, 300}, {3, 13, 45, 17}};
    for (size_t mi = 0; mi < sizeof mms / sizeof mms[0]; ++mi) {
        const int64_t B = mms[mi][0], M = mms[mi][1], N = mms[mi][2], K = mms[mi][3];
        const size_t na = (size_t)(B * M * K), nb = (size_t)(B * K * N), nc = (size_t)(B * M * N);
        float *a = malloc(na * 4), *bm = malloc(nb * 4), *c0 = malloc(nc * 4), *c1 = malloc(nc * 4);
        drv_fill(a, na, 4.0f);
        drv_fill(bm, nb, 2.0f);
        a[5] = NAN;
        for (int gate = 0; gate < 2; ++gate) {
            const afrt_epi_silu d = {gate};
            const afrt_epilogue fast = {afrt_epi_silu_fn, (void *)&d};
            const afrt_epilogue slow = {plain_silu, (void *)&d};
            afrt_matmul_f32(B, M, N, K, 1.0f, a, K, M * K, 0, bm, N, K * N, 0, 0.0f, c0, N, M * N,
                            slow);
            afrt_matmul_f32(B, M, N, K, 1.0f, a, K, M * K, 0, bm, N, K * N, 0, 0.0f, c1, N, M * N,
                            fast);
            if (!drv_same(c0, c1, nc, "matmul")) {
                printf("matmul case %zu gate %d\n", mi, gate);
                return 1;
            }
            ++cases;
        }
        free(a), free(bm), free(c0), free(c1);
    }
    printf("ok %d\n", cases);
    return 0;
}
