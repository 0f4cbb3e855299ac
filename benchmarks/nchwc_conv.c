/* Direct blocked convolution (afrt_nchwc_f32, afrt_nchwc.h) against the path afrt_conv2d_f32
 * takes without it (Winograd where afrt_winograd_applies, else afrt_conv_own_: gemm_1x1 or
 * im2col_gemm) on the same conv, rounds interleaved (kbench.h); driven by nchwc_conv.py,
 * which prints the table. Arguments: threads reps cold flags C K H R stride [C K H R stride ...]
 * (flags: afrt_nchwc_ex_f32's, x and/or y already NCHW16c)
 * (square maps, pad R/2 on every side). cold != 0 streams through 64 MiB before every call
 * (untimed). Per case it prints "C K H R stride median_nchwc_us median_base_us median_ratio
 * max_diff". */
#include "afrt.h"
#include "kbench.h"

#include <math.h>

/* The conv as afrt_conv2d_f32 computed it before afrt_nchwc.h. */
static void base_(const kb_conv *c, float *y) {
    const afrt_conv_params *p = &c->p;
    if (afrt_winograd_applies(p) && afrt_winograd_f32(c->x, c->w, c->b, y, p, afrt_no_epilogue()))
        return;
    afrt_conv_own_(c->x, c->w, c->b, y, p, &c->q, afrt_no_epilogue(), 0);
}

static int flags_;  /* afrt_nchwc_ex_f32's: x and/or y already NCHW16c */
static float *yb_; /* the blocked kernel's output: room for a channel-padded NCHW16c y */

static void run_(void *ctx, int algo) {
    kb_conv *c = ctx;
    if (algo == 0) (void)afrt_nchwc_ex_f32(c->x, c->w, c->b, yb_, &c->p, afrt_no_epilogue(), flags_);
    else base_(c, c->y);
}

int main(int argc, char **argv) {
    if (argc < 10) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    flags_ = atoi(argv[4]);
    afrt_set_num_threads(threads);
    for (int a = 5; a + 4 < argc; a += 5) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        const int64_t R = atoi(argv[a + 3]), st = atoi(argv[a + 4]), pd = R / 2;
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        kb_conv c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, OH, OH, st, st, pd, pd,
                                                   pd, pd, 1, 1, 1});
        yb_ = malloc((size_t)((K + 15) / 16 * 16 * OH * OH) * 4);
        const int inner = kb_inner(&bench, 2e-3, run_, &c, 1);
        base_(&c, c.y);
        if (!afrt_nchwc_ex_f32(c.x, c.w, c.b, yb_, &c.p, afrt_no_epilogue(), flags_)) return 3;
        float diff = 0.0f; /* with a blocked x or y the outputs differ by layout: not compared */
        for (size_t i = 0; !flags_ && i < c.ny; ++i) diff = fmaxf(diff, fabsf(c.y[i] - yb_[i]));
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &c);
        printf("%lld %lld %lld %lld %lld %.1f %.1f %.3f %.2e\n", (long long)C, (long long)K,
               (long long)H, (long long)R, (long long)st, r.us0, r.us1, r.ratio, (double)diff);
        fflush(stdout);
        free(yb_);
        kb_conv_free(&c);
    }
    kb_end(&bench);
    return 0;
}
