/* The small-sequence attention path (afrt_attention_small_f32) against the streaming core
 * (afrt_attention_streamed_f32) on the same call, rounds interleaved (kbench.h); driven by
 * window_attention.py, which prints the table. Algo 0 is the small path, algo 1 the
 * streaming core. Arguments: threads reps cold, then per case W H S D masked: W windows x H
 * heads batch indices (the output's two batch dims), q [W*H, S, D], k and v [W*H, S, D]
 * (T = S, E = D); masked 1: a [1, H, S, S] mask broadcast over the windows (Swin's relative
 * position bias), 2: a [W, H, S, S] one (bias plus the shifted windows' mask), 0: none.
 * Per case it prints "W H S D masked median_0_us median_1_us median_ratio max_abs_diff". */
#include "afrt.h"
#include "kbench.h"

typedef struct {
    afrt_attn_params p;
    float *q, *k, *v, *m, *o0, *o1;
    float scale;
} case_;

static void run_(void *ctx, int algo) {
    case_ *c = ctx;
    if (algo == 0) {
        if (!afrt_attention_small_f32(c->q, c->k, c->v, c->m, c->o0, c->scale, &c->p))
            afrt_attention_streamed_f32(c->q, c->k, c->v, c->m, c->o0, c->scale, &c->p);
    } else {
        afrt_attention_streamed_f32(c->q, c->k, c->v, c->m, c->o1, c->scale, &c->p);
    }
}

static float *fill_(size_t n, unsigned mul) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) x[i] = (float)((i * mul) % 1000) / 500.0f - 1.0f;
    return x;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 4; a + 4 < argc; a += 5) {
        const int64_t W = atoi(argv[a]), H = atoi(argv[a + 1]), S = atoi(argv[a + 2]);
        const int64_t D = atoi(argv[a + 3]), masked = atoi(argv[a + 4]);
        case_ c = {.p = {.batch = W * H, .S = S, .T = S, .D = D, .E = D, .q_bstride = S * D,
                         .k_bstride = S * D, .v_bstride = S * D, .nbd = 2,
                         .bdims = {W, H, 1, 1, 1, 1}, .mask_s = S, .mask_t = 1},
                   .scale = 1.0f / sqrtf((float)D)};
        const size_t n = (size_t)(W * H * S * D);
        c.q = fill_(n, 2654435761u), c.k = fill_(n, 40503u), c.v = fill_(n, 9973u);
        c.o0 = malloc(n * sizeof(float)), c.o1 = malloc(n * sizeof(float));
        if (masked) {
            const int64_t nm = (masked == 2 ? W : 1) * H * S * S;
            c.m = fill_((size_t)nm, 7919u);
            c.p.mask_bstr[0] = masked == 2 ? H * S * S : 0;
            c.p.mask_bstr[1] = S * S;
        }
        const int inner = kb_inner(&bench, 2e-3, run_, &c, 1);
        run_(&c, 0);
        run_(&c, 1);
        float diff = 0.0f;
        for (size_t i = 0; i < n; ++i) diff = fmaxf(diff, fabsf(c.o0[i] - c.o1[i]));
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &c);
        printf("%lld %lld %lld %lld %lld %.1f %.1f %.3f %.2e\n", (long long)W, (long long)H,
               (long long)S, (long long)D, (long long)masked, r.us0, r.us1, r.ratio, diff);
        fflush(stdout);
        free(c.q), free(c.k), free(c.v), free(c.m), free(c.o0), free(c.o1);
    }
    kb_end(&bench);
    return 0;
}
