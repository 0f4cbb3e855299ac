/* Direct A (afrt_gemm_direct_a_: the GEMM core reads a row-major activation A unpacked)
 * against packed A (mode 0), or direct A with and without its prefetch of the next B block
 * (mode 1, afrt_pf_next_), on the same afrt_matmul_f32 call, rounds interleaved (kbench.h);
 * driven by gemm_direct_a.py, which prints the table. Arguments: threads reps cold mode M K N
 * [M K N ...];
 * B (K x N, the weights) is registered constant as a model's is (packed once, cached), A is
 * not. Per case it prints "M K N median_direct_us median_packed_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

static int mode_;

typedef struct {
    int64_t M, K, N;
    float *a, *b, *c;
} gemm_case_;

static void run_(void *ctx, int algo) {
    gemm_case_ *g = ctx;
    if (mode_ == 1) {
        afrt_direct_a_ = 1;
        afrt_pf_next_ = algo == 0;
    } else {
        afrt_direct_a_ = algo == 0;
    }
    afrt_matmul_f32(1, g->M, g->N, g->K, 1.0f, g->a, g->K, 0, 0, g->b, g->N, 0, 0, 0.0f, g->c,
                    g->N, 0, afrt_no_epilogue());
}

int main(int argc, char **argv) {
    if (argc < 8) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    mode_ = atoi(argv[4]);
    for (int i = 5; i + 2 < argc; i += 3) {
        gemm_case_ g = {atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]), NULL, NULL, NULL};
        const size_t na = (size_t)(g.M * g.K), nb = (size_t)(g.K * g.N), nc = (size_t)(g.M * g.N);
        g.a = malloc(na * 4), g.b = malloc(nb * 4), g.c = malloc(nc * 4);
        for (size_t k = 0; k < na; ++k) g.a[k] = (float)((k * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t k = 0; k < nb; ++k) g.b[k] = (float)((k * 40503u) % 1000) / 50000.0f - 0.01f;
        afrt_register_constant_region(g.b, nb * 4);
        const int inner = kb_inner(&bench, 2e-3, run_, &g, 1);
        run_(&g, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &g);
        printf("%lld %lld %lld %.1f %.1f %.3f\n", (long long)g.M, (long long)g.K, (long long)g.N,
               r.us0, r.us1, r.ratio);
        fflush(stdout);
        afrt_unregister_constant_region(g.b);
        free(g.a), free(g.b), free(g.c);
    }
    kb_end(&bench);
    return 0;
}
