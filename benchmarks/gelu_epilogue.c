/* The built-in GELU epilogue (afrt_epi_gelu_fn) on a Linear layer, MatMul + column bias +
 * GELU (erf form), against the other ways of finishing the same MatMul, rounds interleaved
 * (kbench.h); driven by gelu_epilogue.py, which prints the table. Algo 0 is the MatMul with
 * the built-in epilogue (the AVX-512 GEMM core adds the bias in registers and runs the GELU
 * on each tile while it is in L1). Algo 1 by `against`:
 *   0  the epilogue the lowering generated before: per element y = out + b[c],
 *      (0.5 * y) * (1 + af_erff(y * (1 / sqrt 2))), AFRT_WIDE_VEC, on each finished block;
 *   1  the built-in one through a function no kernel recognises (the register path's gain);
 *   2  no epilogue (what the fused bias + GELU still costs).
 * Arguments: threads reps cold against, then per case M K N (x: M x K, weights K x N).
 * Per case it prints "M K N median_0_us median_1_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

typedef struct {
    int64_t M, K, N;
    int against;
    float *x, *w, *y;
    afrt_epi_gelu d;
} case_;

static AFRT_WIDE_VEC void generated_(void *ctx, float *out, int64_t batch, int64_t r0,
                                     int64_t r1, int64_t c0, int64_t c1, int64_t ld) {
    (void)batch;
    const float *restrict b = ((const afrt_epi_gelu *)ctx)->cbias;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const float y = b[c] + out[r * ld + c];
            const float e = af_erff(y * 0x1.6a09e6p-1f);
            out[r * ld + c] = (0.5f * y) * (1.0f + e);
        }
}

static void opaque_(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1, int64_t ld) {
    afrt_epi_gelu_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

static void mm_(case_ *k, afrt_epilogue e) {
    afrt_matmul_f32(1, k->M, k->N, k->K, 1.0f, k->x, k->K, 0, 0, k->w, k->N, 0, 0, 0.0f, k->y,
                    k->N, 0, e);
}

static void run_(void *ctx, int algo) {
    case_ *k = ctx;
    if (algo == 0) mm_(k, (afrt_epilogue){afrt_epi_gelu_fn, &k->d});
    else if (k->against == 0) mm_(k, (afrt_epilogue){generated_, &k->d});
    else if (k->against == 1) mm_(k, (afrt_epilogue){opaque_, &k->d});
    else mm_(k, afrt_no_epilogue());
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]), against = atoi(argv[4]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 5; a + 2 < argc; a += 3) {
        const int64_t M = atoi(argv[a]), K = atoi(argv[a + 1]), N = atoi(argv[a + 2]);
        case_ k = {.M = M, .K = K, .N = N, .against = against};
        k.x = malloc((size_t)(M * K) * 4), k.w = malloc((size_t)(K * N) * 4);
        k.y = malloc((size_t)(M * N) * 4);
        float *b = malloc((size_t)N * 4);
        /* pre-activations of a few units, both signs, as an MLP's fc1 gives */
        for (int64_t i = 0; i < M * K; ++i) k.x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (int64_t i = 0; i < K * N; ++i)
            k.w[i] = ((float)((i * 40503u) % 1000) / 500.0f - 1.0f) * 3.0f / sqrtf((float)K);
        for (int64_t i = 0; i < N; ++i) b[i] = (float)(i % 7) * 0.2f - 0.6f;
        k.d.cbias = b;
        afrt_register_constant_region(k.w, (size_t)(K * N) * 4);
        const int inner = kb_inner(&bench, 2e-3, run_, &k, 1);
        run_(&k, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &k);
        printf("%lld %lld %lld %.1f %.1f %.3f\n", (long long)M, (long long)K, (long long)N, r.us0,
               r.us1, r.ratio);
        fflush(stdout);
        afrt_unregister_constant_region(k.w);
        free(k.x), free(k.w), free(k.y), free(b);
    }
    kb_end(&bench);
    return 0;
}
