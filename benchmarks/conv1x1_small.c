/* gemm_1x1_t (afrt_conv1x1t_f32: output channels along the 32-wide panels) against gemm_1x1
 * (afrt_conv_own_: output positions along them) on the same 1x1 stride-1 conv, rounds
 * interleaved (kbench.h); driven by conv1x1_small.py, which prints the table. Arguments:
 * threads reps cold C K H [C K H ...] (an H x H map); cold != 0 streams through 64 MiB
 * before every call (untimed). Per case it prints
 * "C K H median_t_us median_direct_us median_ratio". */
#include "afrt.h"
#include "kbench.h"

static void run_(void *ctx, int algo) {
    kb_conv *c = ctx;
    if (algo == 0) (void)afrt_conv1x1t_f32(c->x, c->w, c->b, c->y, &c->p, afrt_no_epilogue());
    else afrt_conv_own_(c->x, c->w, c->b, c->y, &c->p, &c->q, afrt_no_epilogue(), 0);
}

int main(int argc, char **argv) { return kb_square_conv_main(argc, argv, 1, run_); }
