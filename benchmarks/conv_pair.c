/* conv_pair.c: ResNet's conv3 (h: Cm -> K, 1x1) and downsample (x: Ci -> K, 1x1, stride s),
 * added and Relu'd, as one kernel (afrt_conv1x1_pair_f32, algo 0) against today's two calls
 * (algo 1: the downsample writing D, then conv3 with the residual epilogue reading D). See
 * conv_pair.py. Arguments: threads reps cold, then per case Cm Ci K OH s; prints per case
 * "Cm Ci K OH s pair_us apart_us ratio max_diff max_abs". */
#include "afrt.h"
#include "kbench.h"
#include <math.h>

typedef struct {
    int64_t Cm, Ci, K, OH, s;
    float *h, *x, *w3, *wd, *b3, *bd, *D, *y0, *y1;
    afrt_conv_params p3, pd, pc;
    afrt_epi_clamp cl_res, cl;
} pair_;

static void run_(void *ctx, int algo) {
    pair_ *c = ctx;
    if (algo == 0) {
        afrt_conv1x1_pair_f32(c->h, c->x, c->w3, c->b3, c->wd, c->bd, c->y0, &c->pc, &c->pd,
                              (afrt_epilogue){afrt_epi_clamp_fn, (void *)&c->cl});
    } else {
        afrt_conv2d_f32(c->x, c->wd, c->bd, c->D, &c->pd, NULL, afrt_no_epilogue());
        afrt_conv2d_f32(c->h, c->w3, c->b3, c->y1, &c->p3, NULL,
                        (afrt_epilogue){afrt_epi_clamp_fn, (void *)&c->cl_res});
    }
}

static float *fill_(size_t n, unsigned mul, float scale, float off) {
    float *v = malloc(n * 4);
    for (size_t i = 0; i < n; ++i) v[i] = (float)((i * mul) % 1000) * scale - off;
    return v;
}

int main(int argc, char **argv) {
    if (argc < 9) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 4; a + 4 < argc; a += 5) {
        pair_ c = {.Cm = atoi(argv[a]), .Ci = atoi(argv[a + 1]), .K = atoi(argv[a + 2]),
                   .OH = atoi(argv[a + 3]), .s = atoi(argv[a + 4])};
        const int64_t H = c.OH * c.s, ohw = c.OH * c.OH, Ct = c.Cm + c.Ci;
        c.h = fill_((size_t)(c.Cm * ohw), 2654435761u, 1.0f / 500, 0.0f);
        c.x = fill_((size_t)(c.Ci * H * H), 2246822519u, 1.0f / 500, 0.0f);
        c.w3 = fill_((size_t)(c.K * c.Cm), 40503u, 1.0f / 50000, 0.01f);
        c.wd = fill_((size_t)(c.K * c.Ci), 30011u, 1.0f / 50000, 0.01f);
        c.b3 = fill_((size_t)c.K, 7u, 1.0f / 5000, 0.05f);
        c.bd = fill_((size_t)c.K, 11u, 1.0f / 5000, 0.05f);
        afrt_register_constant_region(c.w3, (size_t)(c.K * c.Cm) * 4);
        afrt_register_constant_region(c.wd, (size_t)(c.K * c.Ci) * 4);
        c.D = malloc((size_t)(c.K * ohw) * 4);
        c.y0 = malloc((size_t)(c.K * ohw) * 4);
        c.y1 = malloc((size_t)(c.K * ohw) * 4);
        c.p3 = (afrt_conv_params){1, c.Cm, c.OH, c.OH, c.K, 1, 1, c.OH, c.OH, 1, 1, 0, 0, 0, 0, 1, 1, 1};
        c.pc = c.p3;
        c.pc.C = Ct;
        c.pd = (afrt_conv_params){1, c.Ci, H, H, c.K, 1, 1, c.OH, c.OH, c.s, c.s, 0, 0, 0, 0, 1, 1, 1};
        if (!afrt_conv1x1_pair_applies(&c.pc, &c.pd)) return 3;
        c.cl = (afrt_epi_clamp){NULL, 0, 0, 0.0f, INFINITY};
        c.cl_res = (afrt_epi_clamp){c.D, c.K * ohw, ohw, 0.0f, INFINITY};
        const int inner = kb_inner(&bench, 5e-3, run_, &c, 1);
        run_(&c, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &c);
        double diff = 0.0, mx = 0.0;
        for (int64_t i = 0; i < c.K * ohw; ++i) {
            diff = fmax(diff, fabs((double)c.y0[i] - (double)c.y1[i]));
            mx = fmax(mx, fabs((double)c.y1[i]));
        }
        printf("%lld %lld %lld %lld %lld %.1f %.1f %.3f %.2e %.2f\n", (long long)c.Cm,
               (long long)c.Ci, (long long)c.K, (long long)c.OH, (long long)c.s, r.us0, r.us1,
               r.ratio, diff, mx);
        fflush(stdout);
        afrt_unregister_constant_region(c.w3);
        afrt_unregister_constant_region(c.wd);
        free(c.h), free(c.x), free(c.w3), free(c.wd), free(c.b3), free(c.bd), free(c.D), free(c.y0), free(c.y1);
    }
    kb_end(&bench);
    return 0;
}
