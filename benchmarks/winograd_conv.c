/* Winograd F(4x4, 3x3) (afrt_winograd_f32) against im2col + GEMM (afrt_conv_own_, the
 * im2col_gemm path) on the same 3x3 stride-1 pad-1 conv, rounds interleaved (kbench.h);
 * driven by winograd_conv.py, which prints the table. Arguments: threads reps cold C K H
 * [C K H ...]; cold != 0 streams through 64 MiB before every call (untimed).
 * Per case it prints "C K H median_wino_us median_im2col_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

static void run_(void *ctx, int algo) {
    kb_conv *c = ctx;
    if (algo == 0) (void)afrt_winograd_f32(c->x, c->w, c->b, c->y, &c->p, afrt_no_epilogue());
    else afrt_conv_own_(c->x, c->w, c->b, c->y, &c->p, &c->q, afrt_no_epilogue(), 0);
}

int main(int argc, char **argv) { return kb_square_conv_main(argc, argv, 3, run_); }
