/* Direct blocked convolution (afrt_nchwc_f32, afrt_nchwc.h) against the path afrt_conv2d_f32
 * takes without it (Winograd where afrt_winograd_applies, else afrt_conv_own_: gemm_1x1 or
 * im2col_gemm) on the same conv, rounds interleaved; driven by nchwc_conv.py, which prints
 * the table. Arguments: threads reps cold C K H R stride [C K H R stride ...] (square maps,
 * pad R/2 on every side). cold != 0 streams through 64 MiB before every call (untimed).
 * Per case it prints "C K H R stride median_nchwc_us median_base_us median_ratio max_diff".
 * One thread: process CPU time; more: wall time. */
#include "afrt.h"
#include <stdio.h>
#include <time.h>

static double now_(int cpu) {
    struct timespec ts;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The conv as afrt_conv2d_f32 computed it before afrt_nchwc.h. */
static void base_(const float *x, const float *w, const float *b, float *y,
                  const afrt_conv_params *p, const afrt_conv_plan_ *q) {
    if (afrt_winograd_applies(p) && afrt_winograd_f32(x, w, b, y, p, afrt_no_epilogue())) return;
    afrt_conv_own_(x, w, b, y, p, q, afrt_no_epilogue());
}

int main(int argc, char **argv) {
    if (argc < 10) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]), cold = atoi(argv[3]);
    const int flags = atoi(argv[4]); /* afrt_nchwc_ex_f32's: x and/or y already NCHW16c */
    const int cpu = threads == 1;
    const size_t nflush = (size_t)16 << 20;
    float *flush = cold ? calloc(nflush, sizeof(float)) : NULL;
    afrt_set_num_threads(threads);
    for (int a = 5; a + 4 < argc; a += 5) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        const int64_t R = atoi(argv[a + 3]), st = atoi(argv[a + 4]), pd = R / 2;
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        const afrt_conv_params p = {1, C, H, H, K, R, R, OH, OH, st, st, pd, pd, pd, pd, 1, 1, 1};
        const size_t nx = (size_t)(C * H * H), nw = (size_t)(K * C * R * R);
        const size_t ny = (size_t)((K + 15) / 16 * 16 * OH * OH); /* room for NCHW16c y */
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)K * 4);
        float *y = malloc(ny * 4), *y2 = malloc(ny * 4);
        for (size_t i = 0; i < nx; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t i = 0; i < nw; ++i) w[i] = (float)((i * 40503u) % 1000) / 50000.0f - 0.01f;
        for (int64_t i = 0; i < K; ++i) b[i] = 0.1f;
        afrt_register_constant_region(w, nw * 4); /* weights are constants, as in a model */
        const afrt_conv_plan_ q = afrt_conv_plan(&p);
        double *tn = malloc((size_t)reps * sizeof(double) * 3), *tb = tn + reps, *r = tb + reps;
        int inner = 1;
        for (double t0 = now_(cpu); !cold && now_(cpu) - t0 < 2e-3; ++inner) base_(x, w, b, y, &p, &q);
        base_(x, w, b, y, &p, &q);
        if (!afrt_nchwc_ex_f32(x, w, b, y2, &p, afrt_no_epilogue(), flags)) return 3;
        float diff = 0.0f; /* with a blocked x or y the outputs differ by layout: not compared */
        for (size_t i = 0; !flags && i < (size_t)(K * OH * OH); ++i)
            diff = fmaxf(diff, fabsf(y[i] - y2[i]));
        float sink = 0.0f;
        for (int i = 0; i < reps; ++i) {
            double t[2];
            for (int algo = 0; algo < 2; ++algo) {
                if (cold)
                    for (size_t f = 0; f < nflush; f += 16) sink += flush[f] += 1.0f;
                const double t0 = now_(cpu);
                for (int j = 0; j < inner; ++j) {
                    if (algo == 0) (void)afrt_nchwc_ex_f32(x, w, b, y, &p, afrt_no_epilogue(), flags);
                    else base_(x, w, b, y, &p, &q);
                }
                t[algo] = (now_(cpu) - t0) / inner * 1e6;
            }
            tn[i] = t[0];
            tb[i] = t[1];
            r[i] = tn[i] / tb[i];
        }
        if (sink == 1.0f) printf("#\n"); /* keeps the flush */
        printf("%lld %lld %lld %lld %lld %.1f %.1f %.3f %.2e\n", (long long)C, (long long)K,
               (long long)H, (long long)R, (long long)st, median_(tn, reps), median_(tb, reps),
               median_(r, reps), (double)diff);
        fflush(stdout);
        afrt_unregister_constant_region(w);
        free(tn);
        free(x);
        free(w);
        free(b);
        free(y);
        free(y2);
    }
    free(flush);
    return 0;
}
