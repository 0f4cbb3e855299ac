/* The built-in clamp epilogue (afrt_epi_clamp_fn: residual add, Relu) applied at the store
 * against the other ways of finishing the same conv, rounds interleaved (kbench.h); driven by
 * conv_epilogue.py, which prints the table. Algo 0 is always the kernel with the built-in
 * epilogue (which Winograd, the blocked direct conv, gemm_1x1_t and the GEMM core apply to
 * their values before the only store). Algo 1 by `against`:
 *   0  the same epilogue through a function the kernels do not recognise: the pass over each
 *      finished block that they ran before (what the fused build paid);
 *   1  no epilogue at all (algo 0 / algo 1 - 1 is what the fused Relu / Add still costs);
 *   2  no epilogue, then the epilogue over the whole output in one pass (a separate Relu /
 *      Add + Relu kernel, as in the unfused build);
 *   3  no bias and no epilogue: the bare conv of the unfused build, whose BatchNorm is a kernel
 *      of its own (algo 0 / algo 1 - 1 is all the fused conv pays for what it absorbed).
 * Arguments: threads reps cold against then per case kind C K H R stride residual, kind 0
 * Winograd (afrt_winograd_f32), 1 blocked direct (afrt_nchwc_f32), 2 gemm_1x1_t
 * (afrt_conv1x1t_f32), 3 whatever afrt_conv2d_f32 picks; an H x H map, pad R / 2; residual 0
 * none, 1 a separate buffer, 2 the output itself (written in place, as plan-buffers'
 * memory.residual_inplace makes it: every call adds to what the last one left), 3 no epilogue
 * at all in algo 0 (the bias alone: a conv whose BatchNorm was folded, nothing else fused;
 * with against 3). Per case it
 * prints "kind C K H R stride residual median_0_us median_1_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

typedef struct {
    kb_conv c;
    int kind, against, bias_only;
    afrt_epi_clamp d;
} case_;

/* Same arithmetic as afrt_epi_clamp_fn, behind a pointer no kernel compares with. */
static void opaque_clamp_(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1,
                          int64_t c0, int64_t c1, int64_t ld) {
    afrt_epi_clamp_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

static void conv_(case_ *k, afrt_epilogue e, const float *b) {
    kb_conv *c = &k->c;
    int done = 0;
    switch (k->kind) {
    case 0: done = afrt_winograd_f32(c->x, c->w, b, c->y, &c->p, e); break;
    case 1: done = afrt_nchwc_f32(c->x, c->w, b, c->y, &c->p, e); break;
    case 2: done = afrt_conv1x1t_f32(c->x, c->w, b, c->y, &c->p, e); break;
    default: break;
    }
    if (!done) afrt_conv2d_f32(c->x, c->w, b, c->y, &c->p, NULL, e);
}

static void run_(void *ctx, int algo) {
    case_ *k = ctx;
    if (algo == 0 && k->bias_only) {
        conv_(k, afrt_no_epilogue(), k->c.b);
    } else if (algo == 0) {
        conv_(k, (afrt_epilogue){afrt_epi_clamp_fn, &k->d}, k->c.b);
    } else if (k->against == 0) {
        conv_(k, (afrt_epilogue){opaque_clamp_, &k->d}, k->c.b);
    } else {
        conv_(k, afrt_no_epilogue(), k->against == 3 ? NULL : k->c.b);
        if (k->against == 2) {
            const afrt_conv_params *p = &k->c.p;
            const int64_t ohw = p->OH * p->OW;
            AFRT_OMP(parallel for schedule(static) num_threads(afrt_num_threads_))
            for (int64_t r = 0; r < p->K; ++r)
                afrt_epi_clamp_fn(&k->d, k->c.y, 0, r, r + 1, 0, ohw, ohw);
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]), against = atoi(argv[4]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 5; a + 6 < argc; a += 7) {
        const int kind = atoi(argv[a]), with_res = atoi(argv[a + 6]);
        const int64_t C = atoi(argv[a + 1]), K = atoi(argv[a + 2]), H = atoi(argv[a + 3]);
        const int64_t R = atoi(argv[a + 4]), st = atoi(argv[a + 5]), pd = R / 2;
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        case_ k = {.kind = kind, .against = against, .bias_only = with_res == 3};
        k.c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, OH, OH, st, st, pd, pd, pd, pd,
                                             1, 1, 1});
        float *res = NULL;
        if (with_res == 1 || with_res == 2) {
            res = malloc(k.c.ny * sizeof(float));
            for (size_t i = 0; i < k.c.ny; ++i) res[i] = (float)(i % 7) * 0.25f - 0.75f;
        }
        if (with_res == 2) { /* in place: y starts as the residual */
            memcpy(k.c.y, res, k.c.ny * sizeof(float));
            free(res);
            res = NULL;
        }
        k.d = (afrt_epi_clamp){with_res == 2 ? k.c.y : res, K * OH * OH, OH * OH, 0.0f, INFINITY};
        const int inner = kb_inner(&bench, 2e-3, run_, &k, 1);
        run_(&k, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &k);
        printf("%d %lld %lld %lld %lld %lld %d %.1f %.1f %.3f\n", kind, (long long)C, (long long)K,
               (long long)H, (long long)R, (long long)st, with_res, r.us0, r.us1, r.ratio);
        fflush(stdout);
        free(res);
        kb_conv_free(&k.c);
    }
    kb_end(&bench);
    return 0;
}
