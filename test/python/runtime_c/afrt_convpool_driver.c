/* afrt_convpool_nc_f32 (fuse-conv-pool's stem + max pool, afrt_convchain.h) against the two
 * calls apart (afrt_dconv_smallcb_f32, or afrt_nchwc_naive_f32 without AVX-512, then
 * afrt_maxpool2d_nc_f32), bit for bit. One line per case on stdin:
 *   N C H K R stride pad  PR PS pstride ppad pdil ceil  threads special relu
 * special: 1 puts NaN, +inf, -inf and -0.0 into the image, the weights and the bias (the
 * max's NaN rule and its first-maximum choice); relu: 1 the built-in clamp, 0 no epilogue.
 * Prints per case "<fused ran> <pool rows> <same bits>". */
#include "afrt.h"
#include <stdio.h>
#include <string.h>

static int64_t pool_out(int64_t h, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_) {
    const int64_t span = (k - 1) * d + 1, num = h + 2 * p - span;
    int64_t o = (ceil_ ? (num + s - 1) / s : num / s) + 1;
    if (ceil_ && (o - 1) * s >= h + p) --o; /* ONNX: the last window starts inside */
    return o;
}

int main(void) {
    long v[16];
    while (1) {
        for (int i = 0; i < 16; ++i)
            if (scanf("%ld", &v[i]) != 1) return 0;
        const int64_t N = v[0], C = v[1], H = v[2], K = v[3], R = v[4], st = v[5], pd = v[6];
        const int64_t PR = v[7], PS = v[8], ps = v[9], pp = v[10], pdl = v[11];
        const int ceil_ = (int)v[12], special = (int)v[14], relu = (int)v[15];
        afrt_set_num_threads((int)v[13]);
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        const int64_t POH = pool_out(OH, PR, ps, pp, pdl, ceil_);
        const int64_t POW = pool_out(OH, PS, ps, pp, pdl, ceil_);
        afrt_conv_params p = {N, C, H, H, K, R, R, OH, OH, st, st, pd, pd, pd, pd, 1, 1, 1};
        afrt_pool_params q = {N, K, OH, OH, PR, PS, POH, POW, ps, ps, pp, pp, pp, pp, pdl, pdl, 0};
        const int64_t nx = N * C * H * H, nw = K * C * R * R, Kb = K / 16;
        const int64_t ny = N * Kb * OH * OH * 16, nz = N * Kb * POH * POW * 16;
        float *x = malloc(4 * nx), *w = malloc(4 * nw), *b = malloc(4 * K);
        float *mid = malloc(4 * ny), *y0 = malloc(4 * nz), *y1 = malloc(4 * nz);
        unsigned s = 12345u + (unsigned)(H * 7 + K);
        for (int64_t i = 0; i < nx; ++i) {
            s = s * 1103515245u + 12345u;
            x[i] = (float)((s >> 8) % 2000) / 1000.0f - 1.0f;
        }
        for (int64_t i = 0; i < nw; ++i) {
            s = s * 1103515245u + 12345u;
            w[i] = (float)((s >> 8) % 2000) / 2000.0f - 0.5f;
        }
        for (int64_t i = 0; i < K; ++i) b[i] = (float)(i % 5) * 0.1f - 0.2f;
        if (special) {
            x[5] = NAN, x[nx / 2] = INFINITY, x[nx - 3] = -INFINITY, x[7] = -0.0f;
            w[1] = -0.0f, b[1] = -0.0f, b[K - 1] = -INFINITY, b[K / 2] = NAN;
        }
        afrt_epi_clamp cl = {NULL, 0, 0, 0.0f, INFINITY};
        const afrt_epilogue epi = {relu ? afrt_epi_clamp_fn : NULL, relu ? &cl : NULL};
        if (!afrt_dconv_smallcb_f32(x, w, b, mid, &p, epi))
            afrt_nchwc_naive_f32(x, w, b, mid, &p, epi, AFRT_NC_OUT_BLOCKED);
        afrt_maxpool2d_nc_f32(mid, y0, &q);
        memset(y1, 0x7f, (size_t)(4 * nz));
        afrt_convpool_nc_f32(x, w, b, y1, &p, &q, epi);
        const int same = memcmp(y0, y1, (size_t)(4 * nz)) == 0;
        memset(y1, 0x7f, (size_t)(4 * nz));
        const int ran = afrt_scb_maxpool_f32(x, w, b, y1, &p, &q, epi);
        printf("%d %ld %d\n", ran, (long)POH, same && (!ran || memcmp(y0, y1, (size_t)(4 * nz)) == 0));
        free(x), free(w), free(b), free(mid), free(y0), free(y1);
    }
}
