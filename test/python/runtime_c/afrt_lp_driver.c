/* Test driver for afrt.h's 16-bit contractions, run by test/python/test_runtime_lp.py.
 *
 *   afrt_lp_driver THREADS LP matmul DIR batch M N K alpha beta ta tb bcast_a bcast_b a16 b16
 *   afrt_lp_driver THREADS LP conv DIR N C H W K R S sh sw pt pl pb pr dh dw g bias w16
 *
 * LP: 1 fp16, 2 bf16 (AFRT_LP_*). An operand flagged 16-bit (a16, b16, w16) is read from its
 * .bin file as uint16 and registered as a constant region (how a model's stored weights reach
 * the kernel); fp32 operands are not, so they are packed (and rounded) per call. Files and the
 * epilogue (v -> 0.5*v - 1, counted) as afrt_kernel_driver.c: driver_util.h.
 */
#include "afrt.h"
#include "driver_util.h"

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    afrt_set_num_threads(atoi(argv[1]));
    const int lp = atoi(argv[2]);
    const char *op = argv[3], *dir = argv[4];
    int64_t v[32] = {0};
    for (int i = 5; i < argc && i - 5 < 32; ++i) v[i - 5] = atoll(argv[i]);
    if (strcmp(op, "matmul") == 0) {
        if (argc != 5 + 12) return 2;
        const int64_t batch = v[0], M = v[1], N = v[2], K = v[3];
        const float alpha = (float)atof(argv[9]), beta = (float)atof(argv[10]);
        const int ta = (int)v[6], tb = (int)v[7], bca = (int)v[8], bcb = (int)v[9];
        const int a16 = (int)v[10], b16 = (int)v[11];
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
        const int64_t sa = (ta ? K : M) * lda, sb = (tb ? N : K) * ldb, sc = M * ldc;
        const size_t na = (size_t)((bca ? 1 : batch) * sa), nb = (size_t)((bcb ? 1 : batch) * sb);
        void *a = drv_load(dir, "a.bin", na, a16 ? 2 : 4), *b = drv_load(dir, "b.bin", nb, b16 ? 2 : 4);
        float *c = (float *)drv_load(dir, "c.bin", (size_t)(batch * sc), 4);
        if (a16) afrt_register_constant_region(a, na * 2);
        if (b16) afrt_register_constant_region(b, nb * 2);
        drv_counter k = {(int32_t *)calloc((size_t)(batch * M * ldc), sizeof(int32_t)), M, ldc};
        afrt_epilogue e = {drv_count_epi, &k};
        afrt_matmul_lp(lp, batch, M, N, K, alpha, a, a16, lda, bca ? 0 : sa, ta, b, b16, ldb,
                       bcb ? 0 : sb, tb, beta, c, ldc, sc, e);
        if (a16) afrt_unregister_constant_region(a);
        if (b16) afrt_unregister_constant_region(b);
        drv_save(dir, "y.bin", c, (size_t)(batch * sc) * sizeof(float));
        drv_save(dir, "count.bin", k.count, (size_t)(batch * M * ldc) * sizeof(int32_t));
        free(a), free(b), free(c), free(k.count);
        return 0;
    }
    if (strcmp(op, "conv") == 0) {
        if (argc != 5 + 18) return 2;
        afrt_conv_params p = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], 0, 0, v[7], v[8],
                              v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
        p.OH = (p.H + p.pad_top + p.pad_bottom - p.dil_h * (p.R - 1) - 1) / p.stride_h + 1;
        p.OW = (p.W + p.pad_left + p.pad_right - p.dil_w * (p.S - 1) - 1) / p.stride_w + 1;
        const int w16 = (int)v[17];
        const size_t nx = (size_t)(p.N * p.C * p.H * p.W);
        const size_t nw = (size_t)(p.K * (p.C / p.group) * p.R * p.S);
        const size_t ny = (size_t)(p.N * p.K * p.OH * p.OW);
        float *x = (float *)drv_load(dir, "x.bin", nx, 4);
        void *w = drv_load(dir, "w.bin", nw, w16 ? 2 : 4);
        float *bias = v[16] ? (float *)drv_load(dir, "b.bin", (size_t)p.K, 4) : NULL;
        if (w16) afrt_register_constant_region(w, nw * 2);
        float *y = (float *)malloc(ny * sizeof(float));
        for (size_t i = 0; i < ny; ++i) y[i] = NAN; /* must all be overwritten */
        drv_counter k = {(int32_t *)calloc(ny, sizeof(int32_t)), p.K, p.OH * p.OW};
        afrt_epilogue e = {drv_count_epi, &k};
        afrt_conv2d_lp(lp, x, w, w16, bias, y, &p, NULL, e);
        /* a second call (cached packed weights) must give the same result */
        float *y2 = (float *)malloc(ny * sizeof(float));
        drv_counter k2 = {(int32_t *)calloc(ny, sizeof(int32_t)), p.K, p.OH * p.OW};
        afrt_epilogue e2 = {drv_count_epi, &k2};
        afrt_conv2d_lp(lp, x, w, w16, bias, y2, &p, NULL, e2);
        if (memcmp(y, y2, ny * sizeof(float)) != 0) {
            fprintf(stderr, "the second call gave a different result\n");
            return 3;
        }
        if (w16) afrt_unregister_constant_region(w);
        drv_save(dir, "y.bin", y, ny * sizeof(float));
        drv_save(dir, "count.bin", k.count, ny * sizeof(int32_t));
        free(x), free(w), free(bias), free(y), free(y2), free(k.count), free(k2.count);
        return 0;
    }
    return 2;
}
