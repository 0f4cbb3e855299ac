/* A Linear layer's bias + residual (a transformer's fc2 or attention projection + the skip
 * connection: afrt_epi_bias_clamp with res, no bound) against the bare MatMul, rounds
 * interleaved (kbench.h); driven by residual_epilogue.py, which prints the table. Algo 0 is
 * the MatMul with the epilogue (the AVX-512 GEMM core adds the bias and the residual in its
 * registers), algo 1 the MatMul alone. Arguments: threads reps cold, then per case M K N (x:
 * M x K, weights K x N registered as a constant, residual M x N). Per case it prints
 * "M K N median_0_us median_1_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

typedef struct {
    int64_t M, K, N;
    float *x, *w, *y;
    afrt_epi_bias_clamp d;
} case_;

static void run_(void *ctx, int algo) {
    case_ *k = ctx;
    const afrt_epilogue e =
        algo == 0 ? (afrt_epilogue){afrt_epi_bias_clamp_fn, &k->d} : afrt_no_epilogue();
    afrt_matmul_f32(1, k->M, k->N, k->K, 1.0f, k->x, k->K, 0, 0, k->w, k->N, 0, 0, 0.0f, k->y,
                    k->N, 0, e);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 4; a + 2 < argc; a += 3) {
        const int64_t M = atoi(argv[a]), K = atoi(argv[a + 1]), N = atoi(argv[a + 2]);
        case_ k = {.M = M, .K = K, .N = N};
        k.x = malloc((size_t)(M * K) * 4), k.w = malloc((size_t)(K * N) * 4);
        k.y = malloc((size_t)(M * N) * 4);
        float *b = malloc((size_t)N * 4), *r = malloc((size_t)(M * N) * 4);
        for (int64_t i = 0; i < M * K; ++i) k.x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (int64_t i = 0; i < K * N; ++i)
            k.w[i] = ((float)((i * 40503u) % 1000) / 500.0f - 1.0f) / sqrtf((float)K);
        for (int64_t i = 0; i < N; ++i) b[i] = (float)(i % 7) * 0.2f - 0.6f;
        for (int64_t i = 0; i < M * N; ++i) r[i] = (float)(i % 13) * 0.1f - 0.6f;
        k.d = (afrt_epi_bias_clamp){{r, 0, N, -INFINITY, INFINITY}, b};
        afrt_register_constant_region(k.w, (size_t)(K * N) * 4);
        const int inner = kb_inner(&bench, 2e-3, run_, &k, 1);
        run_(&k, 0);
        const kb_result res = kb_rounds(&bench, reps, inner, run_, &k);
        printf("%lld %lld %lld %.1f %.1f %.3f\n", (long long)M, (long long)K, (long long)N,
               res.us0, res.us1, res.ratio);
        fflush(stdout);
        afrt_unregister_constant_region(k.w);
        free(k.x), free(k.w), free(k.y), free(b), free(r);
    }
    kb_end(&bench);
    return 0;
}
