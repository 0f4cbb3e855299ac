/* gemm_1x1_t (afrt_conv1x1t_f32: output channels along the 32-wide panels) against gemm_1x1
 * (afrt_conv_own_: output positions along them) on the same 1x1 stride-1 conv, rounds
 * interleaved; driven by conv1x1_small.py, which prints the table. Arguments: threads reps
 * cold C K H [C K H ...] (an H x H map); cold != 0 streams through 64 MiB before every call
 * (untimed), so weights and activations come from memory as in a whole model. Per case it
 * prints "C K H median_t_us median_direct_us median_ratio". One thread: process CPU time
 * (robust to other work on the machine); more: wall time. */
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

int main(int argc, char **argv) {
    if (argc < 7) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]), cold = atoi(argv[3]);
    const int cpu = threads == 1;
    const size_t nflush = (size_t)16 << 20;
    float *flush = cold ? calloc(nflush, sizeof(float)) : NULL;
    afrt_set_num_threads(threads);
    for (int a = 4; a + 2 < argc; a += 3) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        const afrt_conv_params p = {1, C, H, H, K, 1, 1, H, H, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        const size_t nx = (size_t)(C * H * H), nw = (size_t)(K * C), ny = (size_t)(K * H * H);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)K * 4);
        float *y = malloc(ny * 4);
        for (size_t i = 0; i < nx; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t i = 0; i < nw; ++i) w[i] = (float)((i * 40503u) % 1000) / 50000.0f - 0.01f;
        for (int64_t i = 0; i < K; ++i) b[i] = 0.1f;
        afrt_register_constant_region(w, nw * 4); /* weights are constants, as in a model */
        const afrt_conv_plan_ q = afrt_conv_plan(&p);
        double *tt = malloc((size_t)reps * sizeof(double) * 3), *td = tt + reps, *r = td + reps;
        /* warm: calls per sample for ~2 ms; cold: one call per sample, after a flush */
        int inner = 1;
        for (double t0 = now_(cpu); !cold && now_(cpu) - t0 < 2e-3; ++inner)
            afrt_conv_own_(x, w, b, y, &p, &q, afrt_no_epilogue());
        (void)afrt_conv1x1t_f32(x, w, b, y, &p, afrt_no_epilogue());
        float sink = 0.0f;
        for (int i = 0; i < reps; ++i) {
            double t[2];
            for (int algo = 0; algo < 2; ++algo) {
                if (cold)
                    for (size_t f = 0; f < nflush; f += 16) sink += flush[f] += 1.0f;
                const double t0 = now_(cpu);
                for (int j = 0; j < inner; ++j) {
                    if (algo == 0) (void)afrt_conv1x1t_f32(x, w, b, y, &p, afrt_no_epilogue());
                    else afrt_conv_own_(x, w, b, y, &p, &q, afrt_no_epilogue());
                }
                t[algo] = (now_(cpu) - t0) / inner * 1e6;
            }
            tt[i] = t[0];
            td[i] = t[1];
            r[i] = tt[i] / td[i];
        }
        if (sink == 1.0f) printf("#\n"); /* keeps the flush */
        printf("%lld %lld %lld %.1f %.1f %.3f\n", (long long)C, (long long)K, (long long)H,
               median_(tt, reps), median_(td, reps), median_(r, reps));
        fflush(stdout);
        afrt_unregister_constant_region(w);
        free(tt);
        free(x);
        free(w);
        free(b);
        free(y);
    }
    free(flush);
    return 0;
}
