/* Depthwise convolution with channels in vector lanes (afrt_dwconv2d_f32's path for K == C,
 * dilation 1: afrt_dwl_f32_) against a naive conv in double over a sweep: channel counts off
 * the 16-lane blocks (1, 5, 16, 17, 40), maps from 1x1 to 40x37 (several row bands), strides
 * 1, 2 and 3, kernels 3x3, 5x5 and the generic path (1x1, 3x1, 7x7), symmetric, asymmetric
 * and one-sided pads, batch 2, with and without bias. Each case runs four epilogues: none,
 * the built-in clamp as Relu6 (applied in registers), the same clamp through a callback the
 * kernel does not know (must give the same bits), and the built-in clamp with a residual
 * (run on the stored rows). Some cases hold NaN and +-inf among the inputs: the output must
 * be NaN exactly where the reference is. Tolerance: |got - ref| <= 1e-5 * (1 + sum|w x|).
 * Built with -DAFRT_TEST_FAIL_ALLOC, every case also runs with all allocations failing: the
 * lanes path must refuse (return 0) and afrt_conv2d_f32's fallback must still be right.
 *
 *   afrt_dwl_driver THREADS [EVERY]   -> prints "ok N" (N cases run: every EVERY-th of the
 *                                        sweep, default all) or the first mismatch, exit 1
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "afrt.h"
#include "driver_util.h"

static void plain_clamp(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                        int64_t c1, int64_t ld) {
    afrt_epi_clamp_fn(ctx, out, batch, r0, r1, c0, c1, ld);
}

/* ref = conv + bias (double), mag = sum |w x| + |bias| per output. */
static void naive_(const float *x, const float *w, const float *b, const afrt_conv_params *p,
                   double *ref, double *mag) {
    for (int64_t n = 0; n < p->N; ++n)
        for (int64_t k = 0; k < p->K; ++k)
            for (int64_t oh = 0; oh < p->OH; ++oh)
                for (int64_t ow = 0; ow < p->OW; ++ow) {
                    double acc = b ? b[k] : 0.0, m = b ? fabs(b[k]) : 0.0;
                    for (int64_t r = 0; r < p->R; ++r)
                        for (int64_t s = 0; s < p->S; ++s) {
                            const int64_t ih = oh * p->stride_h - p->pad_top + r;
                            const int64_t iw = ow * p->stride_w - p->pad_left + s;
                            const double xv = ih >= 0 && ih < p->H && iw >= 0 && iw < p->W
                                                  ? x[((n * p->C + k) * p->H + ih) * p->W + iw]
                                                  : 0.0;
                            acc += (double)w[(k * p->R + r) * p->S + s] * xv;
                            m += fabs((double)w[(k * p->R + r) * p->S + s] * xv);
                        }
                    const int64_t i = ((n * p->K + k) * p->OH + oh) * p->OW + ow;
                    ref[i] = acc;
                    mag[i] = m;
                }
}

static double clamp6_(double v) { return v != v ? v : (v < 0.0 ? 0.0 : (v > 6.0 ? 6.0 : v)); }

static int close_(float got, double want, double mag) {
    if (want != want) return got != got;
    if (isinf(want)) return got == (float)want;
    return fabs((double)got - want) <= 1e-5 * (1.0 + mag);
}

static int check_(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t st,
                  int64_t pt, int64_t pl, int64_t pb, int64_t pr, int use_bias, int specials) {
    const int64_t OH = (H + pt + pb - R) / st + 1, OW = (W + pl + pr - S) / st + 1;
    if (OH < 1 || OW < 1) return 0;
    const afrt_conv_params p = {N, C, H, W, C, R, S, OH, OW, st, st, pt, pl, pb, pr, 1, 1, C};
    if (!afrt_dwl_applies(&p)) {
        printf("not taken: C%lld %lldx%lld\n", (long long)C, (long long)H, (long long)W);
        return 1;
    }
    const size_t nx = (size_t)(N * C * H * W), ny = (size_t)(N * C * OH * OW);
    const size_t nw = (size_t)(C * R * S);
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)C * 4);
    float *y = malloc(ny * 4), *y2 = malloc(ny * 4), *res = malloc(ny * 4);
    double *ref = malloc(ny * 8), *mag = malloc(ny * 8);
    drv_fill(x, nx, 4.0f);
    for (size_t i = 0; i < nw; ++i) w[i] = 4.0f * drv_frand() / (float)(R * S);
    drv_fill(b, (size_t)C, 4.0f);
    drv_fill(res, ny, 4.0f);
    if (specials && nx > 8) {
        x[nx / 3] = NAN;
        x[nx / 2] = INFINITY;
        x[nx - 1] = -INFINITY;
    }
    naive_(x, w, use_bias ? b : NULL, &p, ref, mag);
    afrt_epi_clamp relu6 = {NULL, 0, 0, 0.0f, 6.0f};
    afrt_epi_clamp addrelu = {res, C * OH * OW, OH * OW, 0.0f, INFINITY};
    int bad = 0;
    for (int mode = 0; mode < 4 && !bad; ++mode) {
        afrt_epilogue e = afrt_no_epilogue();
        if (mode == 1) e = (afrt_epilogue){afrt_epi_clamp_fn, &relu6};
        if (mode == 2) e = (afrt_epilogue){plain_clamp, &relu6};
        if (mode == 3) e = (afrt_epilogue){afrt_epi_clamp_fn, &addrelu};
        float *out = mode == 2 ? y2 : y;
        for (size_t i = 0; i < ny; ++i) out[i] = 12345.0f;
        if (!afrt_dwconv2d_f32(x, w, use_bias ? b : NULL, out, &p, e)) {
            printf("refused\n");
            bad = 1;
            break;
        }
        for (size_t i = 0; i < ny && !bad; ++i) {
            double want = ref[i];
            if (mode == 1 || mode == 2) want = clamp6_(want);
            if (mode == 3) {
                want += res[i];
                want = want != want ? want : (want < 0.0 ? 0.0 : want);
            }
            if (mode == 2 ? memcmp(&y[i], &y2[i], 4) != 0 : !close_(out[i], want, mag[i])) {
                printf("mismatch N%lld C%lld %lldx%lld k%lldx%lld s%lld pads %lld %lld %lld %lld "
                       "bias %d mode %d at %zu: got %g want %.9g (builtin %g)\n",
                       (long long)N, (long long)C, (long long)H, (long long)W, (long long)R,
                       (long long)S, (long long)st, (long long)pt, (long long)pl, (long long)pb,
                       (long long)pr, use_bias, mode, i, (double)out[i], want, (double)y[i]);
                bad = 1;
            }
        }
    }
#ifdef AFRT_TEST_FAIL_ALLOC
    /* Out of memory (docs/runtime.md, "Out of memory"): the lanes path refuses (returns 0) and
     * afrt_conv2d_f32 still gives the right result with every allocation failing. */
    if (!bad) {
        afrt_epilogue e = {afrt_epi_clamp_fn, &relu6};
        afrt_free_thread_scratch();
        afrt_test_fail_alloc(1, -1);
        const int took = afrt_dwconv2d_f32(x, w, use_bias ? b : NULL, y, &p, e);
        for (size_t i = 0; i < ny; ++i) y[i] = 12345.0f;
        afrt_conv2d_f32(x, w, use_bias ? b : NULL, y, &p, NULL, e);
        afrt_test_fail_alloc(0, 0);
        if (took) {
            printf("no memory, yet afrt_dwconv2d_f32 reported success\n");
            bad = 1;
        }
        for (size_t i = 0; i < ny && !bad; ++i)
            if (!close_(y[i], clamp6_(ref[i]), mag[i])) {
                printf("no memory: afrt_conv2d_f32 wrong at %zu: got %g want %g\n", i,
                       (double)y[i], clamp6_(ref[i]));
                bad = 1;
            }
    }
#endif
    free(x), free(w), free(b), free(y), free(y2), free(res), free(ref), free(mag);
    return bad;
}

int main(int argc, char **argv) {
    drv_seed(777u);
    afrt_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    const int every = argc > 2 ? atoi(argv[2]) : 1;
    int seen = 0;
    static const int64_t cs[] = {1, 5, 16, 17, 40};
    static const int64_t maps[][2] = {{1, 1}, {4, 4}, {7, 7}, {9, 5}, {14, 13}, {40, 37}};
    static const int64_t ks[][2] = {{3, 3}, {5, 5}, {1, 1}, {3, 1}, {7, 7}};
    int n = 0;
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ++ci)
        for (size_t mi = 0; mi < sizeof maps / sizeof maps[0]; ++mi)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ++ki)
                for (int64_t st = 1; st <= 3; ++st) {
                    const int64_t R = ks[ki][0], S = ks[ki][1], H = maps[mi][0], W = maps[mi][1];
                    const int v = (int)(ci + mi + ki + (size_t)st);
                    /* pads: symmetric R/2, asymmetric (top/left only), none */
                    const int64_t pt = v % 3 == 2 ? 0 : R / 2, pl = v % 3 == 2 ? 0 : S / 2;
                    const int64_t pb = v % 3 == 1 ? 0 : R / 2, pr = v % 3 == 1 ? (S > 1) : S / 2;
                    const int64_t N = v % 4 == 0 ? 2 : 1;
                    if (st == 3 && ki > 1 && v % 2) continue;
                    if (seen++ % every) continue;
                    const int r = check_(N, cs[ci], H, W, R, S, st, pt, pl, pb, pr, v % 2, v % 5 == 0);
                    if (r) return 1;
                    n += H + pt + pb >= R && W + pl + pr >= S;
                }
    printf("ok %d\n", n);
    return 0;
}
