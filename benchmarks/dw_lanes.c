/* Depthwise convolution with channels in vector lanes (afrt_dwl_f32_, what afrt_dwconv2d_f32
 * runs for K == C, dilation 1) against the phase-plane path (afrt_dw_phase_f32_), rounds
 * interleaved; driven by dw_lanes.py, which prints the table. Arguments: threads reps C H
 * stride R [C H stride R ...] (depthwise RxR, pad R/2, on C x H x H, bias, Relu6 as the
 * built-in clamp epilogue). Per case it prints "C H stride R median_lanes_us median_phase_us
 * median_ratio max_abs_diff" (timing: kbench.h, warm caches). With DWL_ONLY=lanes or
 * DWL_ONLY=phase in the environment it runs only that path, reps times, untimed (for
 * valgrind --tool=callgrind instruction counts). */
#include "afrt.h"
#include "kbench.h"

#include <math.h>

typedef struct {
    const float *x, *w, *b;
    float *y0, *y1;
    const afrt_conv_params *p;
    afrt_epilogue clamp;
} dw_;

static void run_(void *ctx, int algo) {
    const dw_ *c = ctx;
    if (algo == 0)
        (void)afrt_dwl_f32_(c->x, c->w, c->b, c->y0, c->p, c->clamp);
    else
        (void)afrt_dw_phase_f32_(c->x, c->w, c->b, c->y1, c->p, c->clamp);
}

int main(int argc, char **argv) {
    if (argc < 7) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, 0);
    afrt_set_num_threads(threads);
    afrt_epi_clamp relu6 = {NULL, 0, 0, 0.0f, 6.0f};
    for (int a = 3; a + 3 < argc; a += 4) {
        const int64_t C = atoi(argv[a]), H = atoi(argv[a + 1]), s = atoi(argv[a + 2]);
        const int64_t R = atoi(argv[a + 3]), pd = R / 2, OH = (H + 2 * pd - R) / s + 1;
        const afrt_conv_params p = {1, C, H, H, C, R, R, OH, OH, s, s, pd, pd, pd, pd, 1, 1, C};
        const size_t nx = (size_t)(C * H * H), ny = (size_t)(C * OH * OH), nw = (size_t)(C * R * R);
        float *wb = malloc((nw + (size_t)C) * 4), *w = wb, *b = wb + nw;
        float *x = malloc(nx * 4), *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
        for (size_t i = 0; i < nx; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t i = 0; i < nw; ++i) w[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.3f;
        for (int64_t i = 0; i < C; ++i) b[i] = 0.05f;
        afrt_register_constant_region(wb, (nw + (size_t)C) * 4);
        dw_ d = {x, w, b, y0, y1, &p, {afrt_epi_clamp_fn, &relu6}};
        const char *only = getenv("DWL_ONLY");
        if (only) {
            for (int i = 0; i < reps; ++i) run_(&d, only[0] == 'l' ? 0 : 1);
        } else {
            const int inner = kb_inner(&bench, 2e-3, run_, &d, 1);
            run_(&d, 0);
            const kb_result r = kb_rounds(&bench, reps, inner, run_, &d);
            double diff = 0.0;
            for (size_t i = 0; i < ny; ++i) diff = fmax(diff, fabs((double)y0[i] - (double)y1[i]));
            printf("%lld %lld %lld %lld %.2f %.2f %.3f %.2e\n", (long long)C, (long long)H,
                   (long long)s, (long long)R, r.us0, r.us1, r.ratio, diff);
            fflush(stdout);
        }
        afrt_unregister_constant_region(wb);
        free(wb), free(x), free(y0), free(y1);
    }
    kb_end(&bench);
    return 0;
}
