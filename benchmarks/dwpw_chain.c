/* Depthwise -> pointwise conv chain fused in row bands (afrt_dwpw_f32) against the two convs
 * apart (afrt_dwconv2d_f32 with a clamp epilogue, then the 1x1 conv: afrt_conv2d_f32's
 * gemm_1x1 path), rounds interleaved; driven by dwpw_chain.py, which prints the table.
 * Arguments: threads reps C H stride K [C H stride K ...] (depthwise 3x3 pad 1 on C x H x H,
 * then 1x1 to K channels). Per case it prints "C H stride K median_fused_us median_apart_us
 * median_ratio max_abs_diff" (timing: kbench.h, warm caches). Activations
 * come and go through memory: the intermediate of the apart version is a full buffer.
 * With DWPW_ONLY=fused or DWPW_ONLY=apart in the environment it runs only that version,
 * reps times, untimed (for valgrind --tool=callgrind instruction counts). */
#include "afrt.h"
#include "kbench.h"

#include <math.h>

static void relu6_(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                   int64_t c1, int64_t ld) {
    (void)ctx;
    (void)batch;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const float v = out[r * ld + c];
            out[r * ld + c] = v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
        }
}

typedef struct {
    const float *x, *wd, *bd, *wp, *bp;
    float *mid, *y0, *y1;
    const afrt_conv_params *pd, *pp;
    afrt_epilogue clamp;
} chain_;

static void run_(void *ctx, int algo) {
    const chain_ *c = ctx;
    if (algo == 0) {
        (void)afrt_dwpw_f32(c->x, c->wd, c->bd, 0.0f, 6.0f, c->wp, c->bp, c->y0, c->pd, c->pp,
                            afrt_no_epilogue());
    } else {
        (void)afrt_dwconv2d_f32(c->x, c->wd, c->bd, c->mid, c->pd, c->clamp);
        afrt_conv2d_f32(c->mid, c->wp, c->bp, c->y1, c->pp, NULL, afrt_no_epilogue());
    }
}

int main(int argc, char **argv) {
    if (argc < 7) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, 0);
    afrt_set_num_threads(threads);
    for (int a = 3; a + 3 < argc; a += 4) {
        const int64_t C = atoi(argv[a]), H = atoi(argv[a + 1]), s = atoi(argv[a + 2]);
        const int64_t K = atoi(argv[a + 3]), OH = (H + 2 - 3) / s + 1;
        const afrt_conv_params pd = {1, C, H, H, C, 3, 3, OH, OH, s, s, 1, 1, 1, 1, 1, 1, C};
        const afrt_conv_params pp = {1, C, OH, OH, K, 1, 1, OH, OH, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        const size_t nx = (size_t)(C * H * H), nm = (size_t)(C * OH * OH), ny = (size_t)(K * OH * OH);
        const size_t nwd = (size_t)(C * 9), nwp = (size_t)(K * C);
        float *wts = malloc((nwd + nwp + (size_t)(C + K)) * 4);
        float *wd = wts, *wp = wd + nwd, *bd = wp + nwp, *bp = bd + C;
        float *x = malloc(nx * 4), *mid = malloc(nm * 4), *y0 = malloc(ny * 4), *y1 = malloc(ny * 4);
        for (size_t i = 0; i < nx; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t i = 0; i < nwd; ++i) wd[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.3f;
        for (size_t i = 0; i < nwp; ++i) wp[i] = (float)((i * 40503u) % 1000) / 5000.0f - 0.1f;
        for (int64_t i = 0; i < C + K; ++i) bd[i] = 0.05f;
        afrt_register_constant_region(wts, (nwd + nwp + (size_t)(C + K)) * 4);
        chain_ chain = {x, wd, bd, wp, bp, mid, y0, y1, &pd, &pp, {relu6_, NULL}};
        const char *only = getenv("DWPW_ONLY");
        if (only) {
            for (int i = 0; i < reps; ++i) run_(&chain, only[0] == 'f' ? 0 : 1);
            afrt_unregister_constant_region(wts);
            free(wts), free(x), free(mid), free(y0), free(y1);
            continue;
        }
        int inner = kb_inner(&bench, 5e-3, run_, &chain, 0);
        inner = inner > 1 ? inner / 2 : 1;
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &chain);
        double diff = 0.0;
        for (size_t i = 0; i < ny; ++i) diff = fmax(diff, fabs((double)y0[i] - (double)y1[i]));
        printf("%lld %lld %lld %lld %.1f %.1f %.3f %.2e\n", (long long)C, (long long)H,
               (long long)s, (long long)K, r.us0, r.us1, r.ratio, diff);
        fflush(stdout);
        afrt_unregister_constant_region(wts);
        free(wts), free(x), free(mid), free(y0), free(y1);
    }
    kb_end(&bench);
    return 0;
}
