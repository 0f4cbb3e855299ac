/* The pooling kernels against their previous version (main at 5d48ba5, kept below verbatim
 * but renamed, as the baseline), rounds interleaved (kbench.h); driven by pool2d.py, which
 * prints the table. Arguments: threads reps cold, then per case
 * kind(0 max, 1 avg) N C H W R S sh sw pt pl pb pr OH OW cip.
 * Per case it prints "median_new_us median_old_us median_ratio maxdiff" (maxdiff: the
 * largest |new - old| over the output, relative to max(1, |old|)). */
#include "afrt.h"
#include "kbench.h"

static void old_maxpool2d_f32(const float *x, float *y, const afrt_pool_params *p) {
    const int64_t planes = p->N * p->C, OH = p->OH, OW = p->OW, H = p->H, W = p->W;
    const int64_t sw = p->stride_w, pl = p->pad_left, dw = p->dil_w, S = p->S;
    int64_t *rg = (int64_t *)afrt_malloc_((size_t)(2 * (OH + OW)) * sizeof(int64_t));
    if (!rg) {
        afrt_nomem_("afrt_maxpool2d_f32");
        return;
    }
    int64_t *cg = rg + 2 * OH;
    for (int64_t oh = 0; oh < OH; ++oh)
        afrt_tap_range_(oh, p->stride_h, p->pad_top, p->dil_h, p->R, H, &rg[2 * oh], &rg[2 * oh + 1]);
    /* interior columns [ilo, ihi): every tap inside the row */
    int64_t ilo = OW, ihi = OW;
    for (int64_t ow = 0; ow < OW; ++ow) {
        afrt_tap_range_(ow, sw, pl, dw, S, W, &cg[2 * ow], &cg[2 * ow + 1]);
        if (cg[2 * ow] == 0 && cg[2 * ow + 1] == S) {
            if (ilo == OW) ilo = ow;
            ihi = ow + 1;
        }
    }
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_num_threads_) if (planes > 1 && afrt_worth_threads_(AFRT_SLOW_WORK * (double)planes * OH * OW * p->R * S)))
    for (int64_t t = 0; t < planes; ++t) {
        float *restrict tmp = (float *)afrt_thread_scratch(0, (size_t)(W > 0 ? W : 1) * sizeof(float));
        if (!tmp) {
            afrt_flag_set_(&failed);
            continue;
        }
        const float *xc = x + t * H * W;
        float *restrict yc = y + t * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t r_lo = rg[2 * oh], r_hi = rg[2 * oh + 1];
            const int64_t ih0 = oh * p->stride_h - p->pad_top;
            float *restrict yr = yc + oh * OW;
            if (r_hi <= r_lo) { /* the window lies in the padding */
                for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = -INFINITY;
                continue;
            }
            const float *restrict first = xc + (ih0 + r_lo * p->dil_h) * W;
            for (int64_t iw = 0; iw < W; ++iw) tmp[iw] = first[iw];
            for (int64_t r = r_lo + 1; r < r_hi; ++r) {
                const float *restrict row = xc + (ih0 + r * p->dil_h) * W;
                for (int64_t iw = 0; iw < W; ++iw) tmp[iw] = afrt_nanmax_(tmp[iw], row[iw]);
            }
            int64_t done_lo = ilo, done_hi = ilo; /* interior columns already written */
            if (S == 3 && dw == 1 && sw == 1) {
                for (int64_t ow = ilo; ow < ihi; ++ow) {
                    const float *t3 = tmp + ow - pl;
                    yr[ow] = afrt_nanmax_(afrt_nanmax_(t3[0], t3[1]), t3[2]);
                }
                done_hi = ihi;
            } else if (S == 3 && dw == 1 && sw == 2) {
                for (int64_t ow = ilo; ow < ihi; ++ow) {
                    const float *t3 = tmp + 2 * ow - pl;
                    yr[ow] = afrt_nanmax_(afrt_nanmax_(t3[0], t3[1]), t3[2]);
                }
                done_hi = ihi;
            }
            for (int64_t ow = 0; ow < OW; ++ow) {
                if (ow >= done_lo && ow < done_hi) continue;
                const int64_t s_lo = cg[2 * ow], s_hi = cg[2 * ow + 1];
                const int64_t iw0 = ow * sw - pl;
                float m = -INFINITY;
                for (int64_t s = s_lo; s < s_hi; ++s) m = afrt_nanmax_(m, tmp[iw0 + s * dw]);
                yr[ow] = m;
            }
        }
    }
    free(rg);
    if (failed) { /* out of memory for a row buffer: a NaN output rather than stale data */
        for (int64_t i = 0; i < planes * OH * OW; ++i) y[i] = NAN;
        afrt_nomem_("afrt_maxpool2d_f32");
    }
}

static void old_avgpool2d_f32(const float *x, float *y, const afrt_pool_params *p) {
    const int64_t planes = p->N * p->C, OH = p->OH, OW = p->OW;
    /* per output row/column: valid taps [lo, hi) and taps inside the padded extent */
    int64_t *rg = (int64_t *)afrt_malloc_((size_t)(3 * (OH + OW)) * sizeof(int64_t));
    if (!rg) {
        afrt_nomem_("afrt_avgpool2d_f32");
        return;
    }
    int64_t *cg = rg + 3 * OH;
    for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t a, b;
        afrt_tap_range_(oh, p->stride_h, p->pad_top, p->dil_h, p->R, p->H, &rg[3 * oh], &rg[3 * oh + 1]);
        afrt_tap_range_(oh, p->stride_h, 0, p->dil_h, p->R, p->H + p->pad_top + p->pad_bottom, &a, &b);
        rg[3 * oh + 2] = p->count_include_pad ? b - a : rg[3 * oh + 1] - rg[3 * oh];
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t a, b;
        afrt_tap_range_(ow, p->stride_w, p->pad_left, p->dil_w, p->S, p->W, &cg[3 * ow], &cg[3 * ow + 1]);
        afrt_tap_range_(ow, p->stride_w, 0, p->dil_w, p->S, p->W + p->pad_left + p->pad_right, &a, &b);
        cg[3 * ow + 2] = p->count_include_pad ? b - a : cg[3 * ow + 1] - cg[3 * ow];
    }
    /* interior columns [ilo, ihi): every tap inside the row */
    const int64_t W = p->W, S = p->S, sw = p->stride_w, pl = p->pad_left, dw = p->dil_w;
    int64_t ilo = OW, ihi = OW;
    for (int64_t ow = 0; ow < OW; ++ow)
        if (cg[3 * ow] == 0 && cg[3 * ow + 1] == S) {
            if (ilo == OW) ilo = ow;
            ihi = ow + 1;
        }
    const int fast = S == 3 && dw == 1 && (sw == 1 || sw == 2);
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_num_threads_) if (planes > 1 && afrt_worth_threads_(AFRT_SLOW_WORK * (double)planes * OH * OW * p->R * p->S)))
    for (int64_t t = 0; t < planes; ++t) {
        /* separably: the sum over the window's valid rows, then over its valid columns */
        float *restrict tmp = (float *)afrt_thread_scratch(0, (size_t)(W > 0 ? W : 1) * sizeof(float));
        if (!tmp) {
            afrt_flag_set_(&failed);
            continue;
        }
        const float *xc = x + t * p->H * W;
        float *restrict yc = y + t * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t r_lo = rg[3 * oh], r_hi = rg[3 * oh + 1], rc = rg[3 * oh + 2];
            const int64_t ih0 = oh * p->stride_h - p->pad_top;
            float *restrict yr = yc + oh * OW;
            for (int64_t iw = 0; iw < W; ++iw) tmp[iw] = 0.0f;
            for (int64_t r = r_lo; r < r_hi; ++r) {
                const float *restrict row = xc + (ih0 + r * p->dil_h) * W;
                for (int64_t iw = 0; iw < W; ++iw) tmp[iw] += row[iw];
            }
            if (fast) {
                for (int64_t ow = ilo; ow < ihi; ++ow) {
                    const float *t3 = tmp + ow * sw - pl;
                    const int64_t cnt = rc * cg[3 * ow + 2];
                    yr[ow] = cnt ? (t3[0] + t3[1] + t3[2]) / (float)cnt : 0.0f;
                }
            }
            for (int64_t ow = 0; ow < OW; ++ow) {
                if (fast && ow >= ilo && ow < ihi) continue;
                const int64_t s_lo = cg[3 * ow], s_hi = cg[3 * ow + 1];
                const int64_t iw0 = ow * sw - pl;
                float acc = 0.0f;
                for (int64_t s = s_lo; s < s_hi; ++s) acc += tmp[iw0 + s * dw];
                const int64_t cnt = rc * cg[3 * ow + 2];
                yr[ow] = cnt ? acc / (float)cnt : 0.0f;
            }
        }
    }
    if (failed) { /* out of memory for a row buffer: a NaN output rather than stale data */
        for (int64_t i = 0; i < planes * OH * OW; ++i) y[i] = NAN;
        afrt_nomem_("afrt_avgpool2d_f32");
    }
    free(rg);
}

typedef struct {
    int avg;
    afrt_pool_params p;
    float *x, *y0, *y1;
} case_;

static void run_(void *ctx, int algo) {
    case_ *c = ctx;
    if (algo == 0) {
        if (c->avg) afrt_avgpool2d_f32(c->x, c->y0, &c->p);
        else afrt_maxpool2d_f32(c->x, c->y0, &c->p);
    } else {
        if (c->avg) old_avgpool2d_f32(c->x, c->y1, &c->p);
        else old_maxpool2d_f32(c->x, c->y1, &c->p);
    }
}

int main(int argc, char **argv) {
    enum { NARGS = 17 };
    if (argc < 4 + NARGS) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    for (int a = 4; a + NARGS <= argc; a += NARGS) {
        int64_t v[NARGS];
        for (int i = 0; i < NARGS; ++i) v[i] = atoll(argv[a + i]);
        case_ c = {(int)v[0], {v[1], v[2], v[3], v[4], v[5], v[6], v[13], v[14], v[7], v[8],
                               v[9], v[10], v[11], v[12], 1, 1, (int)v[15]}, NULL, NULL, NULL};
        (void)v[16];
        const size_t nx = (size_t)(v[1] * v[2] * v[3] * v[4]), ny = (size_t)(v[1] * v[2] * v[13] * v[14]);
        c.x = malloc(nx * 4), c.y0 = malloc(ny * 4), c.y1 = malloc(ny * 4);
        for (size_t i = 0; i < nx; ++i) c.x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        const int inner = kb_inner(&bench, 2e-3, run_, &c, 1);
        run_(&c, 0);
        run_(&c, 1);
        float diff = 0.0f;
        for (size_t i = 0; i < ny; ++i) {
            const float o = c.y1[i], e = fabsf(c.y0[i] - o) / (fabsf(o) > 1.0f ? fabsf(o) : 1.0f);
            if (e > diff || e != e) diff = e;
        }
        const kb_result r = kb_rounds(&bench, reps, inner, run_, &c);
        printf("%.2f %.2f %.3f %.3g\n", r.us0, r.us1, r.ratio, (double)diff);
        fflush(stdout);
        free(c.x), free(c.y0), free(c.y1);
    }
    kb_end(&bench);
    return 0;
}
