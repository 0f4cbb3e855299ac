/* Standalone timings of afrt.h kernels with a ReLU epilogue: ResNet-50 convolutions and
 * BERT-base GEMMs at batch 1, for both GEMM strategies. Run via benchmarks/bench_kernels.py.
 *
 *   bench_kernels THREADS STRATEGY REPS
 *
 * Prints one line per shape: name, GFLOP/s of the call (epilogue included), and GFLOP/s of
 * a bare single sgemm of the same GEMM shape without epilogue (the OpenBLAS roof for it).
 */
#include "afrt.h"

#include <stdio.h>
#include <time.h>

/* With one thread, process CPU time: immune to preemption on a shared machine (the work all
 * runs in this thread). With more threads, wall time. */
static int use_cpu_clock = 0;
static double now(void) {
    struct timespec ts;
    clock_gettime(use_cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void relu_epi(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                     int64_t c1, int64_t ld) {
    (void)ctx, (void)batch;
    for (int64_t r = r0; r < r1; ++r) {
        float *row = out + r * ld;
        for (int64_t c = c0; c < c1; ++c) row[c] = row[c] > 0.0f ? row[c] : 0.0f;
    }
}

static float *rnd(size_t n) {
    float *p = (float *)aligned_alloc(64, ((n * 4 + 63) / 64) * 64);
    unsigned s = 12345;
    for (size_t i = 0; i < n; ++i) {
        s = s * 1103515245u + 12345u;
        p[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

/* median of reps timings */
static double median(double *t, int n) {
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && t[j] < t[j - 1]; --j) {
            double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x;
        }
    return t[n / 2];
}

typedef struct { const char *name; int64_t C, H, W, K, R, S, stride, pad, group; } conv_case;

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    const int strategy = argc > 2 ? atoi(argv[2]) : 0;
    const int reps = argc > 3 ? atoi(argv[3]) : 20;
    afrt_set_num_threads(threads);
    afrt_set_gemm_strategy(strategy);
    use_cpu_clock = threads == 1;
    afrt_epilogue epi = {relu_epi, NULL};
    double t[256];
    const conv_case convs[] = {
        {"conv1 7x7/2 3->64 224", 3, 224, 224, 64, 7, 7, 2, 3, 1},
        {"res2 1x1 64->64 56", 64, 56, 56, 64, 1, 1, 1, 0, 1},
        {"res2 3x3 64->64 56", 64, 56, 56, 64, 3, 3, 1, 1, 1},
        {"res2 1x1 64->256 56", 64, 56, 56, 256, 1, 1, 1, 0, 1},
        {"res3 3x3 128->128 28", 128, 28, 28, 128, 3, 3, 1, 1, 1},
        {"res3 1x1 512->128 28", 512, 28, 28, 128, 1, 1, 1, 0, 1},
        {"res4 3x3 256->256 14", 256, 14, 14, 256, 3, 3, 1, 1, 1},
        {"res4 1x1 256->1024 14", 256, 14, 14, 1024, 1, 1, 1, 0, 1},
        {"res5 3x3 512->512 7", 512, 7, 7, 512, 3, 3, 1, 1, 1},
        {"res5 1x1 512->2048 7", 512, 7, 7, 2048, 1, 1, 1, 0, 1},
        {"dw 3x3 128 56 (depthwise)", 128, 56, 56, 128, 3, 3, 1, 1, 128},
    };
    for (size_t ci = 0; ci < sizeof convs / sizeof convs[0]; ++ci) {
        const conv_case *c = &convs[ci];
        afrt_conv_params p = {1, c->C, c->H, c->W, c->K, c->R, c->S, 0, 0, c->stride, c->stride,
                              c->pad, c->pad, c->pad, c->pad, 1, 1, c->group};
        p.OH = (p.H + 2 * c->pad - c->R) / c->stride + 1;
        p.OW = (p.W + 2 * c->pad - c->S) / c->stride + 1;
        float *x = rnd((size_t)(p.C * p.H * p.W)), *w = rnd((size_t)(p.K * p.C / p.group * p.R * p.S));
        float *b = rnd((size_t)p.K), *y = rnd((size_t)(p.K * p.OH * p.OW));
        /* weights are constant, as in generated code (registered by af_create) */
        afrt_register_constant_region(w, (size_t)(p.K * p.C / p.group * p.R * p.S) * sizeof(float));
        size_t sb = afrt_conv2d_scratch_bytes(&p);
        void *scratch = sb ? aligned_alloc(64, ((sb + 63) / 64) * 64) : NULL;
        for (int i = 0; i < 3; ++i) afrt_conv2d_f32(x, w, b, y, &p, scratch, epi);
        for (int i = 0; i < reps; ++i) {
            double t0 = now();
            afrt_conv2d_f32(x, w, b, y, &p, scratch, epi);
            t[i] = now() - t0;
        }
        const double flop = 2.0 * (double)(p.K * p.OH * p.OW) * (double)(p.C / p.group * p.R * p.S);
        const double ms = median(t, reps) * 1e3;
        printf("%-28s %8.3f ms %7.1f GFLOP/s\n", c->name, ms, flop / (ms * 1e6));
        afrt_unregister_constant_region(w);
        free(x), free(w), free(b), free(y), free(scratch);
    }
    /* BERT-base, seq 128: QKV/out projection, FFN up/down, attention scores and context. */
    struct { const char *name; int64_t batch, M, N, K; int tb; } mms[] = {
        {"bert proj 128x768x768", 1, 128, 768, 768, 0},
        {"bert ffn1 128x3072x768", 1, 128, 3072, 768, 0},
        {"bert ffn2 128x768x3072", 1, 128, 768, 3072, 0},
        {"bert qk^T 12x128x128x64", 12, 128, 128, 64, 1},
        {"bert pv 12x128x64x128", 12, 128, 64, 128, 0},
    };
    for (size_t mi = 0; mi < sizeof mms / sizeof mms[0]; ++mi) {
        const int64_t B = mms[mi].batch, M = mms[mi].M, N = mms[mi].N, K = mms[mi].K;
        const int tb = mms[mi].tb;
        float *a = rnd((size_t)(B * M * K)), *bm = rnd((size_t)(B * K * N)), *c = rnd((size_t)(B * M * N));
        if (B == 1) afrt_register_constant_region(bm, (size_t)(K * N) * sizeof(float)); /* weights */
        for (int i = 0; i < 3; ++i)
            afrt_matmul_f32(B, M, N, K, 1.0f, a, K, M * K, 0, bm, tb ? K : N, K * N, tb, 0.0f, c, N,
                            M * N, epi);
        for (int i = 0; i < reps; ++i) {
            double t0 = now();
            afrt_matmul_f32(B, M, N, K, 1.0f, a, K, M * K, 0, bm, tb ? K : N, K * N, tb, 0.0f, c, N,
                            M * N, epi);
            t[i] = now() - t0;
        }
        const double flop = 2.0 * (double)(B * M * N * K);
        const double ms = median(t, reps) * 1e3;
        printf("%-28s %8.3f ms %7.1f GFLOP/s\n", mms[mi].name, ms, flop / (ms * 1e6));
        if (B == 1) afrt_unregister_constant_region(bm);
        free(a), free(bm), free(c);
    }
    /* the roof: one bare OpenBLAS sgemm with all threads, no epilogue */
    scipy_openblas_set_num_threads(threads);
    {
        const int64_t M = 128, N = 3072, K = 768;
        float *a = rnd((size_t)(M * K)), *bm = rnd((size_t)(K * N)), *c = rnd((size_t)(M * N));
        for (int i = 0; i < 3; ++i) afrt_sgemm_(0, 0, M, N, K, 1.0f, a, K, bm, N, 0.0f, c, N);
        for (int i = 0; i < reps; ++i) {
            double t0 = now();
            afrt_sgemm_(0, 0, M, N, K, 1.0f, a, K, bm, N, 0.0f, c, N);
            t[i] = now() - t0;
        }
        const double ms = median(t, reps) * 1e3;
        printf("%-28s %8.3f ms %7.1f GFLOP/s\n", "roof: bare sgemm 128x3072x768", ms,
               2.0 * (double)(M * N * K) / (ms * 1e6));
        free(a), free(bm), free(c);
    }
    return 0;
}
