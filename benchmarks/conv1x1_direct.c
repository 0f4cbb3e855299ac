/* direct_1x1 (afrt_conv1x1d_f32: the NCHW input read in place, 8 output channels x 48
 * positions in registers) against gemm_1x1 (afrt_conv_own_: the input packed into the GEMM
 * core's panels) on the same 1x1 stride-1 conv with a Relu (the built-in clamp, as in
 * SqueezeNet's squeezes), rounds interleaved (kbench.h); driven by conv1x1_direct.py, which
 * prints the table. Arguments: threads reps cold C K H [C K H ...] (an H x H map); cold != 0
 * streams through 64 MiB before every call (untimed). Per case it prints
 * "C K H median_direct_us median_gemm_us median_ratio". */
/* the kernel runs every case, also those its rule leaves to gemm_1x1 (the table's last
 * column says which the lowering picks) */
#define AFRT_1X1D_MAX_K 4096
#define AFRT_1X1D_MIN_HW 1
#include "afrt.h"
#include "kbench.h"

static afrt_epi_clamp relu_ = {NULL, 0, 0, 0.0f, INFINITY};

static void run_(void *ctx, int algo) {
    kb_conv *c = ctx;
    const afrt_epilogue e = {afrt_epi_clamp_fn, &relu_};
    if (algo == 0) (void)afrt_conv1x1d_f32(c->x, c->w, c->b, c->y, &c->p, e);
    else afrt_conv_own_(c->x, c->w, c->b, c->y, &c->p, &c->q, e, 0);
}

int main(int argc, char **argv) { return kb_square_conv_main(argc, argv, 1, run_); }
