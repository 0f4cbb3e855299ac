/* direct_smallc_b (afrt_dconv_smallcb_f32: the stem writing NCHW16c, 64 output channels x 6
 * positions in registers) against direct_smallc (afrt_dconv_smallc_f32: positions along the
 * lanes from phase planes, NCHW y) on the same conv with a Relu (the built-in clamp), rounds
 * interleaved (kbench.h); driven by stem_blocked.py, which prints the table. Arguments:
 * threads reps cold C K H R stride pad [...] (an H x H image). Per case it prints
 * "C K H R stride pad median_blocked_us median_nchw_us median_ratio"; before timing it
 * checks the blocked output against the NCHW one (exit 3 on a mismatch). */
#include "afrt.h"
#include "kbench.h"

static afrt_epi_clamp relu_ = {NULL, 0, 0, 0.0f, INFINITY};

typedef struct {
    kb_conv c;
    float *yb;
} case_;

static void run_(void *ctx, int algo) {
    case_ *k = ctx;
    const afrt_epilogue e = {afrt_epi_clamp_fn, &relu_};
    if (algo == 0) (void)afrt_dconv_smallcb_f32(k->c.x, k->c.w, k->c.b, k->yb, &k->c.p, e);
    else (void)afrt_dconv_smallc_f32(k->c.x, k->c.w, k->c.b, k->c.y, &k->c.p, e);
}

int main(int argc, char **argv) {
    if (argc < 10) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 4; a + 5 < argc; a += 6) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        const int64_t R = atoi(argv[a + 3]), st = atoi(argv[a + 4]), pd = atoi(argv[a + 5]);
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        case_ k = {kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, OH, OH, st, st, pd, pd,
                                                  pd, pd, 1, 1, 1}),
                   NULL};
        k.yb = malloc(k.c.ny * 4);
        run_(&k, 0);
        run_(&k, 1);
        const int64_t ohw = OH * OH;
        for (int64_t c = 0; c < K; ++c)
            for (int64_t q = 0; q < ohw; ++q) {
                const float b = k.yb[((c / 16) * ohw + q) * 16 + c % 16], n = k.c.y[c * ohw + q];
                if (fabsf(b - n) > 1e-5f * (1.0f + fabsf(n))) {
                    printf("# mismatch at channel %lld position %lld: %g vs %g\n", (long long)c,
                           (long long)q, b, n);
                    return 3;
                }
            }
        const int inner = kb_inner(&bench, 2e-3, run_, &k, 1);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &k);
        printf("%lld %lld %lld %lld %lld %lld %.1f %.1f %.3f\n", (long long)C, (long long)K,
               (long long)H, (long long)R, (long long)st, (long long)pd, r.us0, r.us1, r.ratio);
        fflush(stdout);
        free(k.yb);
        kb_conv_free(&k.c);
    }
    kb_end(&bench);
    return 0;
}
