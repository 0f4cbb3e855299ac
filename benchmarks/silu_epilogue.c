/* The built-in SiLU epilogue (afrt_epi_silu_fn) against the other ways of finishing the same
 * conv, rounds interleaved (kbench.h); driven by silu_epilogue.py, which prints the table.
 * Algo 0 is the conv with the built-in epilogue (the AVX-512 GEMM core applies it in
 * registers; other kernels call it on each finished block). Algo 1 by `against`:
 *   0  the epilogue the lowering generated before: per element v * (1 / (1 + af_expf(-v))),
 *      AFRT_WIDE_VEC, called on each finished block (what EfficientNet-B0 paid);
 *   1  the built-in one through a function no kernel recognises (the register path's gain);
 *   2  no epilogue (what the fused SiLU still costs).
 * Arguments: threads reps cold against, then per case C K H R stride group gate; an H x H
 * map, pad R / 2, depthwise when group == C == K (afrt_dwconv2d_f32, as model.c calls it);
 * gate 1: sigmoid alone (an SE block's gate). Per case it prints
 * "C K H R stride group gate median_0_us median_1_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

typedef struct {
    kb_conv c;
    int against;
    afrt_epi_silu d;
} case_;

static AFRT_WIDE_VEC void generated_(void *ctx, float *out, int64_t batch, int64_t r0,
                                     int64_t r1, int64_t c0, int64_t c1, int64_t ld) {
    (void)batch;
    const int gate = ((const afrt_epi_silu *)ctx)->gate;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const float v = out[r * ld + c], s = 1.0f / (1.0f + af_expf(-v));
            out[r * ld + c] = gate ? s : v * s;
        }
}

static void opaque_(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1, int64_t ld) {
    afrt_epi_silu_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

static void conv_(case_ *k, afrt_epilogue e) {
    kb_conv *c = &k->c;
    if (!afrt_dwconv2d_f32(c->x, c->w, c->b, c->y, &c->p, e))
        afrt_conv2d_f32(c->x, c->w, c->b, c->y, &c->p, NULL, e);
}

static void run_(void *ctx, int algo) {
    case_ *k = ctx;
    if (algo == 0) conv_(k, (afrt_epilogue){afrt_epi_silu_fn, &k->d});
    else if (k->against == 0) conv_(k, (afrt_epilogue){generated_, &k->d});
    else if (k->against == 1) conv_(k, (afrt_epilogue){opaque_, &k->d});
    else conv_(k, afrt_no_epilogue());
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]), against = atoi(argv[4]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 5; a + 6 < argc; a += 7) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        const int64_t R = atoi(argv[a + 3]), st = atoi(argv[a + 4]), g = atoi(argv[a + 5]);
        const int gate = atoi(argv[a + 6]);
        const int64_t pd = R / 2, OH = (H + 2 * pd - R) / st + 1;
        case_ k = {.against = against, .d = {gate}};
        k.c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, OH, OH, st, st, pd, pd, pd, pd,
                                             1, 1, g});
        /* pre-activations of a few units (the kbench inputs give |v| < ~0.3) */
        for (size_t i = 0; i < k.c.nw; ++i) k.c.w[i] *= 20.0f;
        const int inner = kb_inner(&bench, 2e-3, run_, &k, 1);
        run_(&k, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &k);
        printf("%lld %lld %lld %lld %lld %lld %d %.1f %.1f %.3f\n", (long long)C, (long long)K,
               (long long)H, (long long)R, (long long)st, (long long)g, gate, r.us0, r.us1,
               r.ratio);
        fflush(stdout);
        kb_conv_free(&k.c);
    }
    kb_end(&bench);
    return 0;
}
