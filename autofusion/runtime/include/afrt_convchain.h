/*
 * afrt_convchain.h -- conv-chain fusion in spatial tiles for afrt.h (included by afrt.h after
 * afrt_dwconv.h; uses afrt_conv_params, afrt_epilogue, the depthwise phase-plane helpers and
 * the GEMM core's afrt_pack_a_all_ / afrt_gemm_tile_; it does not stand alone). Copied beside
 * afrt.h into every build and package folder.
 *
 *   afrt_dwpw_f32(x, wd, bd, lo, hi, wp, bp, y, &pd, &pp, epi)
 *
 * A depthwise convolution (pd: any kernel, stride, padding, dilation and channel multiplier
 * that afrt_dwconv2d_f32 takes) whose output, clamped to [lo, hi] (Relu: [0, inf], Relu6:
 * [0, 6], none: [-inf, inf]; NaN passes through as in ONNX), is the input of a 1x1 stride-1
 * unpadded group-1 convolution (pp) -- MobileNet-V2's and EfficientNet's depthwise ->
 * pointwise pair. The depthwise output (C x OH x OW; 4.8 MB at 96 x 112 x 112) never goes to
 * memory: per task (image, band of output rows) the band's depthwise rows of all channels are
 * computed into a per-thread tile T [C, band * OW] sized to stay in L2
 * (AFRT_CC_TILE_BYTES), and the pointwise GEMM Y[:, band] = Wp . T runs on it at once
 * through the GEMM core (packed Wp, cached for constant weights), then the pointwise bias and
 * the epilogue (afrt_epilogue's conv contract: rows = output channels, cols = positions of
 * the whole image, ld = OH * OW) on the finished block [0, K) x band.
 *
 * No halo: a 1x1 pointwise conv needs exactly its own rows of the depthwise output; the
 * depthwise band reads its input rows (with the kernel's overlap) straight from x through
 * the phase-plane fill, whose pad_top is shifted by the band's first row (it may go
 * negative: rows outside [0, H) read as zero either way).
 *
 * Returns 0 (nothing written) if the pair does not qualify (afrt_dwpw_applies). Without
 * scratch memory for the tiles it runs the two convolutions apart through a whole
 * intermediate (returns 0 if even that cannot be had).
 */
#ifndef AFRT_CONVCHAIN_H
#define AFRT_CONVCHAIN_H

/* Columns (band rows x OW) a band aims at: one GEMM column block (AFRT_NC). */
#ifndef AFRT_CC_COLS
#define AFRT_CC_COLS 512
#endif
/* Bytes of the depthwise tile T at most (with the packed B block it stays in a 2 MiB L2). */
#ifndef AFRT_CC_TILE_BYTES
#define AFRT_CC_TILE_BYTES (256 * 1024)
#endif

/* Whether afrt_dwpw_f32 takes the pair (pd depthwise, pp its 1x1 reader). */
static inline int afrt_dwpw_applies(const afrt_conv_params *pd, const afrt_conv_params *pp) {
    return afrt_dwconv_applies(pd) && pp->N == pd->N && pp->C == pd->K && pp->H == pd->OH &&
           pp->W == pd->OW && pp->R == 1 && pp->S == 1 && pp->stride_h == 1 &&
           pp->stride_w == 1 && pp->pad_top == 0 && pp->pad_left == 0 && pp->pad_bottom == 0 &&
           pp->pad_right == 0 && pp->OH == pp->H && pp->OW == pp->W && (pp->group <= 1);
}

/* Output rows per band: about AFRT_CC_COLS columns, T within AFRT_CC_TILE_BYTES, and at
 * least two tasks per thread when there are threads. */
static inline int64_t afrt_cc_band_rows_(const afrt_conv_params *pd, int nth) {
    const int64_t ow = afrt_max_(1, pd->OW), oh = afrt_max_(1, pd->OH);
    int64_t th = afrt_max_(1, afrt_cdiv_(AFRT_CC_COLS, ow));
    const int64_t cap = AFRT_CC_TILE_BYTES / (int64_t)sizeof(float) / afrt_max_(1, pd->K * ow);
    th = afrt_min_(oh, afrt_max_(1, afrt_min_(th, cap)));
    while (nth > 1 && th > 1 && pd->N * afrt_cdiv_(oh, th) < 2 * (int64_t)nth) th = afrt_cdiv_(th, 2);
    return th;
}

/* Depthwise rows [oh0, oh1) of image n, all channels, clamped, into t [K, (oh1-oh0) * OW];
 * xp: scratch of afrt_cc_dw_floats_(pd, th) floats (bands of at most th rows). Channels in
 * vector lanes where afrt_dwl_applies (afrt_dwconv.h), else the phase planes. */
static inline void afrt_cc_dw_band_(const float *x, const float *w, const float *bias, float lo,
                                    float hi, const afrt_conv_params *pd, int64_t th, int64_t n,
                                    int64_t oh0, int64_t oh1, float *xp, float *t) {
    const int64_t cols = (oh1 - oh0) * pd->OW;
    if (afrt_dwl_applies(pd)) {
        const afrt_dwl_geom_ g = afrt_dwl_geom_init_(pd, th);
        for (int64_t k0 = 0; k0 < pd->K; k0 += AFRT_DWL_L)
            afrt_dwl_task_(x, w, bias, pd, &g, n, k0, afrt_min_(AFRT_DWL_L, pd->K - k0), oh0, oh1,
                           1, lo, hi, xp, t + k0 * cols, cols);
        return;
    }
    afrt_conv_params pb = *pd;
    pb.N = 1;
    pb.OH = oh1 - oh0;
    pb.pad_top = pd->pad_top - oh0 * pd->stride_h;
    afrt_dw_geom_ g;
    afrt_dw_geom_init_(&pb, &g);
    const int64_t hw = pd->H * pd->W, kg = pd->K / pd->C;
    float *wide = xp + g.total + 16;
    for (int64_t k = 0; k < pd->K; ++k) {
        if (k == 0 || k % kg == 0) afrt_dw_fill_(x + (n * pd->C + k / kg) * hw, &pb, &g, xp);
        afrt_dw_correlate_(xp, &g, w + k * g.taps, wide);
        float *tk = t + k * cols;
        afrt_dw_compact_(wide, &pb, g.lp, bias ? bias[k] : 0.0f, tk);
        for (int64_t i = 0; i < cols; ++i) {
            const float v = tk[i];
            tk[i] = v < lo ? lo : (v > hi ? hi : v);
        }
    }
}

/* Floats of the depthwise scratch for bands of at most th rows: the lanes tiles, or the phase
 * planes + wide rows of the largest band (the first band's geometry is the largest: the
 * shifted pad only moves rows). */
static inline int64_t afrt_cc_dw_floats_(const afrt_conv_params *pd, int64_t th) {
    if (afrt_dwl_applies(pd)) return afrt_dwl_geom_init_(pd, afrt_min_(th, pd->OH)).floats;
    afrt_conv_params pb = *pd;
    pb.N = 1;
    pb.OH = afrt_min_(th, pd->OH);
    afrt_dw_geom_ g;
    afrt_dw_geom_init_(&pb, &g);
    return g.total + 16 + g.nqv;
}

/* The two convolutions apart, through a whole intermediate: the fallback. Out of memory for
 * the intermediate, it records the fault (y is incomplete) and returns 0. */
static inline int afrt_dwpw_apart_(const float *x, const float *wd, const float *bd, float lo,
                                   float hi, const float *wp, const float *bp, float *y,
                                   const afrt_conv_params *pd, const afrt_conv_params *pp,
                                   afrt_epilogue epi) {
    const size_t n = (size_t)(pd->N * pd->K * pd->OH * pd->OW);
    float *mid = (float *)afrt_malloc_(n * sizeof(float));
    if (!mid) {
        afrt_nomem_("afrt_dwpw_f32");
        return 0;
    }
    afrt_conv2d_f32(x, wd, bd, mid, pd, NULL, afrt_no_epilogue());
    for (size_t i = 0; i < n; ++i) {
        const float v = mid[i];
        mid[i] = v < lo ? lo : (v > hi ? hi : v);
    }
    afrt_conv2d_f32(mid, wp, bp, y, pp, NULL, epi);
    free(mid);
    return 1;
}

static inline int afrt_dwpw_f32(const float *x, const float *wd, const float *bd, float lo,
                                float hi, const float *wp, const float *bp, float *y,
                                const afrt_conv_params *pd, const afrt_conv_params *pp,
                                afrt_epilogue epi) {
    if (!afrt_dwpw_applies(pd, pp)) return 0;
    if (pd->N <= 0 || pp->K <= 0 || pd->OH <= 0 || pd->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t C = pd->K, K = pp->K, ohw = pd->OH * pd->OW;
    const float *pa = NULL;
    if (!afrt_pack_a_all_(wp, 0, 1, K, C, C, 0, &pa))
        return afrt_dwpw_apart_(x, wd, bd, lo, hi, wp, bp, y, pd, pp, epi);
    const int nth = afrt_num_threads_;
    const double work = (double)pd->N * (double)ohw *
                        ((double)C * (double)K + AFRT_SLOW_WORK * (double)C * pd->R * pd->S);
    const int par = nth > 1 && afrt_worth_threads_(work);
    const int64_t th = afrt_cc_band_rows_(pd, par ? nth : 1);
    const int64_t nbands = afrt_cdiv_(pd->OH, th), tasks = pd->N * nbands;
    const int64_t dwf = (afrt_cc_dw_floats_(pd, th) + 15) / 16 * 16;
    const int64_t tf = (C * th * pd->OW + 15) / 16 * 16;
    const size_t need = (size_t)(dwf + tf + (int64_t)AFRT_KC * AFRT_NC) * sizeof(float);
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t task = 0; task < tasks; ++task) {
        afrt_arrive_();
        float *xp = (float *)afrt_thread_scratch(0, need);
        if (!xp) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *t = xp + dwf, *kbuf = t + tf;
        const int64_t n = task / nbands, oh0 = (task % nbands) * th;
        const int64_t oh1 = afrt_min_(pd->OH, oh0 + th), cols = (oh1 - oh0) * pd->OW;
        afrt_cc_dw_band_(x, wd, bd, lo, hi, pd, th, n, oh0, oh1, xp, t);
        const afrt_bsrc_ bs = {NULL, t, cols, 0, NULL, NULL};
        float *yn = y + n * K * ohw;
        const int64_t c0 = oh0 * pd->OW;
        const afrt_tile_finish_ fin = {yn, bp, 1.0f, n, 0, c0, epi};
        afrt_gemm_tile_(pa, K, cols, C, &bs, yn + c0, ohw, 0, K, 0, cols, kbuf, 0, &fin);
    }
    return failed ? afrt_dwpw_apart_(x, wd, bd, lo, hi, wp, bp, y, pd, pp, epi) : 1;
}

#endif /* AFRT_CONVCHAIN_H */
