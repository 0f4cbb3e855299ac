/* A conv (+ Relu) and the max pool reading it fused in row bands (convpool_f32, defined
 * below) against the two calls apart (afrt_conv2d_f32 with a clamp epilogue writing the
 * whole conv output, then afrt_maxpool2d_f32), rounds interleaved; driven by conv_pool.py,
 * which prints the table. Arguments: threads reps cold C H K R s pad PR ps ppad ceil [...] (an R x R stride-s
 * pad-pad conv from C x H x H to K channels, Relu, then a PR x PR stride-ps pad-ppad max pool,
 * ceil_mode ceil). Per case it prints "C H K R s pad PR ps ppad ceil median_fused_us
 * median_apart_us median_ratio max_abs_diff" (timing: kbench.h). */
#include "afrt.h"
#include "kbench.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 *   convpool_f32(x, w, bias, lo, hi, y, &pc, &pp)
 *
 * A convolution (pc: any afrt_conv2d_f32 takes) whose output, clamped to [lo, hi] (Relu:
 * [0, inf]; none: [-inf, inf]; NaN passes through), is the input of a max pool (pp: its N, C,
 * H, W are pc's N, K, OH, OW) -- the stems of SqueezeNet, GoogLeNet and ResNet-50 (conv ->
 * 3x3/2 max pool). The conv output (3 MB at 64 x 111 x 111) never goes to memory: per image
 * and band of pooled rows, the conv rows the band's windows read (with the window's overlap,
 * recomputed: kernel - stride rows per band) are computed by afrt_conv2d_f32 into a per-thread
 * tile that stays in L2 (CP_TILE_FLOATS), the band's input rows first copied to a window
 * of their own (the conv's channel stride is its H x W); afrt_maxpool2d_f32 pools the tile and
 * the pooled rows are copied into y. The conv and the pool run with the caller's threads,
 * band by band. The same arithmetic per output as the calls apart, but a band may take another
 * conv path than the whole (the max diff column shows it).
 *
 * Returns 0 (nothing written) when there is no scratch memory for the tiles or the shapes do
 * not chain (pp's input is not pc's output).
 *
 * Kept here, not in afrt.h: it measured no faster than the two calls apart (docs/runtime.md,
 * "Conv -> MaxPool in row bands"), so no pass forms it.
 * ------------------------------------------------------------------------------------------- */
/* Floats of the conv tile of one band at most (K x conv rows x OW; 384 KiB: with the input
 * window and the packed weights it stays in this machine's 1 MiB L2). */
#ifndef CP_TILE_FLOATS
#define CP_TILE_FLOATS (96 * 1024)
#endif

static inline int convpool_applies(const afrt_conv_params *pc, const afrt_pool_params *pp) {
    return pp->N == pc->N && pp->C == pc->K && pp->H == pc->OH && pp->W == pc->OW &&
           pp->stride_h >= 1 && pp->dil_h >= 1 && pp->R >= 1 && pc->stride_h >= 1 &&
           pc->dil_h >= 1 && pc->OH > 0 && pc->OW > 0 && pp->OH > 0 && pp->OW > 0;
}

/* Conv rows [lo, hi) pooled rows [p0, p1) read (clipped to [0, OH)). */
static inline void cp_rows_(const afrt_pool_params *pp, int64_t p0, int64_t p1, int64_t *lo,
                                 int64_t *hi) {
    *lo = afrt_max_(0, p0 * pp->stride_h - pp->pad_top);
    *hi = afrt_min_(pp->H, (p1 - 1) * pp->stride_h - pp->pad_top + (pp->R - 1) * pp->dil_h + 1);
    if (*hi < *lo) *hi = *lo;
}

static inline int convpool_f32(const float *x, const float *w, const float *bias, float lo,
                                    float hi, float *y, const afrt_conv_params *pc,
                                    const afrt_pool_params *pp) {
    if (!convpool_applies(pc, pp)) return 0;
    const int64_t K = pc->K, OWc = pc->OW, C = pc->C, H = pc->H, W = pc->W;
    const int64_t POH = pp->OH, POW = pp->OW;
    /* pooled rows per band: as many as keep the conv tile within CP_TILE_FLOATS */
    const int64_t row_floats = K * OWc, per = afrt_max_(1, CP_TILE_FLOATS / row_floats);
    const int64_t span = (pp->R - 1) * pp->dil_h + 1;
    int64_t pb = per > span ? (per - span) / pp->stride_h + 1 : 1;
    if (pb > POH) pb = POH;
    int64_t t_lo, t_hi;
    cp_rows_(pp, 0, pb, &t_lo, &t_hi);
    int64_t crows = t_hi - t_lo; /* the largest band's conv rows: any band spans as many */
    for (int64_t p0 = pb; p0 < POH; p0 += pb) {
        cp_rows_(pp, p0, afrt_min_(POH, p0 + pb), &t_lo, &t_hi);
        crows = afrt_max_(crows, t_hi - t_lo);
    }
    const int64_t irows = afrt_min_(H, (crows - 1) * pc->stride_h + (pc->R - 1) * pc->dil_h + 1);
    const size_t win = (size_t)(C * irows * W), pooled = (size_t)(K * pb * POW);
    float *xs = (float *)afrt_thread_scratch(2, (win + pooled) * sizeof(float));
    float *ct = (float *)afrt_thread_scratch(3, (size_t)(K * crows * OWc) * sizeof(float));
    if (!xs || !ct) return 0;
    float *ys = xs + win;
    afrt_epi_clamp cl = {NULL, 0, 0, lo, hi};
    const afrt_epilogue epi = (lo == -INFINITY && hi == INFINITY)
                                  ? afrt_no_epilogue()
                                  : (afrt_epilogue){afrt_epi_clamp_fn, (void *)&cl};
    for (int64_t n = 0; n < pc->N; ++n) {
        const float *xn = x + n * C * H * W;
        float *yn = y + n * K * POH * POW;
        for (int64_t p0 = 0; p0 < POH; p0 += pb) {
            const int64_t p1 = afrt_min_(POH, p0 + pb), np = p1 - p0;
            int64_t c_lo, c_hi;
            cp_rows_(pp, p0, p1, &c_lo, &c_hi);
            /* the pool's band: its first window starts start rows into the tile (< 0: pads) */
            const int64_t start = p0 * pp->stride_h - pp->pad_top - c_lo;
            afrt_pool_params q = *pp;
            q.N = 1, q.H = c_hi - c_lo, q.OH = np, q.pad_top = -start, q.pad_bottom = 0;
            if (c_hi > c_lo) {
                /* the conv's rows [c_lo, c_hi) read input rows [i_lo, i_hi) (pads outside) */
                const int64_t i_lo = c_lo * pc->stride_h - pc->pad_top;
                const int64_t i_hi = (c_hi - 1) * pc->stride_h - pc->pad_top +
                                     (pc->R - 1) * pc->dil_h + 1;
                const int64_t a = afrt_max_(0, i_lo), b = afrt_min_(H, i_hi);
                afrt_conv_params c = *pc;
                c.N = 1, c.H = afrt_max_(0, b - a), c.OH = c_hi - c_lo;
                c.pad_top = a - i_lo, c.pad_bottom = i_hi - i_lo - c.H - c.pad_top;
                for (int64_t ch = 0; ch < C; ++ch)
                    memcpy(xs + ch * c.H * W, xn + (ch * H + a) * W, (size_t)(c.H * W) * sizeof(float));
                afrt_conv2d_f32(xs, w, bias, ct, &c, NULL, epi);
            }
            afrt_maxpool2d_f32(ct, ys, &q);
            for (int64_t k = 0; k < K; ++k)
                memcpy(yn + (k * POH + p0) * POW, ys + k * np * POW, (size_t)(np * POW) * sizeof(float));
        }
    }
    return 1;
}


typedef struct {
    kb_conv c;
    afrt_pool_params pp;
    float *mid, *y0, *y1;
    afrt_epi_clamp cl;
} convpool_;

static void run_(void *ctx, int algo) {
    convpool_ *c = ctx;
    if (algo == 0) {
        if (!convpool_f32(c->c.x, c->c.w, c->c.b, 0.0f, INFINITY, c->y0, &c->c.p, &c->pp))
            abort();
    } else {
        afrt_conv2d_f32(c->c.x, c->c.w, c->c.b, c->mid, &c->c.p, NULL,
                        (afrt_epilogue){afrt_epi_clamp_fn, (void *)&c->cl});
        afrt_maxpool2d_f32(c->mid, c->y1, &c->pp);
    }
}

static int64_t pooled_(int64_t h, int64_t k, int64_t s, int64_t pad, int ceil) {
    const int64_t span = h + 2 * pad - k;
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= h + pad) --o; /* the last window must start inside */
    return o;
}

int main(int argc, char **argv) {
    if (argc < 14) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 4; a + 9 < argc; a += 10) {
        int64_t v[10];
        for (int i = 0; i < 10; ++i) v[i] = atoi(argv[a + i]);
        const int64_t C = v[0], H = v[1], K = v[2], R = v[3], s = v[4], pd = v[5];
        const int64_t PR = v[6], ps = v[7], pp = v[8];
        const int64_t OH = (H + 2 * pd - R) / s + 1, POH = pooled_(OH, PR, ps, pp, (int)v[9]);
        const int64_t pb = (POH - 1) * ps + PR - OH - pp; /* bottom pad ceil mode implies */
        convpool_ c = {.c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, OH, OH, s, s, pd,
                                                          pd, pd, pd, 1, 1, 1}),
                       .pp = {1, K, OH, OH, PR, PR, POH, POH, ps, ps, pp, pp, afrt_max_(pp, pb),
                              afrt_max_(pp, pb), 1, 1, 0},
                       .cl = {NULL, 0, 0, 0.0f, INFINITY}};
        const size_t nm = (size_t)(K * OH * OH), ny = (size_t)(K * POH * POH);
        c.mid = malloc(nm * 4), c.y0 = malloc(ny * 4), c.y1 = malloc(ny * 4);
        int inner = kb_inner(&bench, 5e-3, run_, &c, 1);
        run_(&c, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &c);
        double diff = 0.0;
        for (size_t i = 0; i < ny; ++i) diff = fmax(diff, fabs((double)c.y0[i] - (double)c.y1[i]));
        printf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %.1f %.1f %.3f %.2e\n",
               (long long)C, (long long)H, (long long)K, (long long)R, (long long)s,
               (long long)pd, (long long)PR, (long long)ps, (long long)pp, (long long)v[9], r.us0,
               r.us1, r.ratio, diff);
        fflush(stdout);
        free(c.mid), free(c.y0), free(c.y1);
        kb_conv_free(&c.c);
    }
    kb_end(&bench);
    return 0;
}
