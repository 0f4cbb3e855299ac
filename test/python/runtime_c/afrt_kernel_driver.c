/* Test driver for afrt.h kernels, run by test/python/test_runtime_kernels.py.
 *
 *   afrt_kernel_driver THREADS STRATEGY conv DIR N C H W K R S sh sw pt pl pb pr dh dw g bias
 *   afrt_kernel_driver THREADS STRATEGY matmul DIR batch M N K alpha beta ta tb bcast_a bcast_b
 *   afrt_kernel_driver THREADS STRATEGY pool DIR max|avg N C H W R S OH OW sh sw pt pl pb pr dh dw cip
 *   afrt_kernel_driver THREADS STRATEGY sweep DIR ta tb MMAX NMAX KMAX
 *   afrt_kernel_driver THREADS STRATEGY kernels DIR   (prints AFRT_KERNELS: the kernel set)
 *
 * Inputs are read from DIR/{x,w,b}.bin (conv), DIR/{a,b,c}.bin (matmul), DIR/x.bin (pool);
 * the output goes to DIR/y.bin and, for conv/matmul, the per-element epilogue call counts to
 * DIR/count.bin (int32). The epilogue maps v -> 0.5*v - 1 so the test can see it ran after the
 * final value was stored. STRATEGY is an AFRT_GEMM_* value, or 3: AFRT_GEMM_OWN with the
 * weights (conv w; matmul a and b) registered as constant, so the packed-operand cache is used
 * (the conv's second call hits it); 4 or 5: AFRT_GEMM_OWN with direct A (the core reading
 * a row-major A unpacked, afrt_gemm_direct_a_) forced on (4) or off (5) instead of the rule;
 * 6 or 7: direct A on with matmul's b registered (packed once, as a model's weights), with
 * (6) and without (7) the micro-kernel's prefetch of the next packed B block (afrt_pf_next_).
 * sweep: for each (M, N, K) in DIR/shapes.bin (int64 triples), C = op(A)[:M, :K] @
 * op(B)[:K, :N] from DIR/a.bin (op(A) is MMAX x KMAX, stored transposed when ta) and
 * DIR/b.bin (op(B) KMAX x NMAX, transposed when tb), read through their full leading
 * dimensions; the C blocks (dense M x N, prefilled with NaN) go one after another to
 * DIR/y.bin. The test picks shapes that reach every edge tile of the micro-kernel.
 */
#include "afrt.h"
#include "driver_util.h"

static float *load(const char *dir, const char *name, size_t n) {
    return (float *)drv_load(dir, name, n, sizeof(float));
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    afrt_set_num_threads(atoi(argv[1]));
    const int strategy = atoi(argv[2]), reg = strategy == 3, regb = strategy >= 6;
    if (strategy >= 4) afrt_direct_a_ = strategy != 5; /* direct A forced on, or off (5) */
    afrt_pf_next_ = strategy != 7;
    afrt_set_gemm_strategy(reg || strategy >= 4 ? AFRT_GEMM_OWN : strategy);
    const char *op = argv[3], *dir = argv[4];
    int64_t v[32] = {0};
    const int first = strcmp(op, "pool") == 0 ? 6 : 5;
    for (int i = first; i < argc && i - first < 32; ++i) v[i - first] = atoll(argv[i]);
    if (strcmp(op, "conv") == 0) {
        if (argc != 5 + 17) return 2;
        afrt_conv_params p = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], 0, 0, v[7], v[8],
                              v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
        p.OH = (p.H + p.pad_top + p.pad_bottom - p.dil_h * (p.R - 1) - 1) / p.stride_h + 1;
        p.OW = (p.W + p.pad_left + p.pad_right - p.dil_w * (p.S - 1) - 1) / p.stride_w + 1;
        const size_t nx = (size_t)(p.N * p.C * p.H * p.W);
        const size_t nw = (size_t)(p.K * (p.C / p.group) * p.R * p.S);
        const size_t ny = (size_t)(p.N * p.K * p.OH * p.OW);
        float *x = load(dir, "x.bin", nx), *w = load(dir, "w.bin", nw);
        float *b = v[16] ? load(dir, "b.bin", (size_t)p.K) : NULL;
        if (reg) afrt_register_constant_region(w, nw * sizeof(float));
        float *y = (float *)malloc(ny * sizeof(float));
        for (size_t i = 0; i < ny; ++i) y[i] = NAN; /* must all be overwritten */
        drv_counter k = {(int32_t *)calloc(ny, sizeof(int32_t)), p.K, p.OH * p.OW};
        afrt_epilogue e = {drv_count_epi, &k};
        const size_t sb = afrt_conv2d_scratch_bytes(&p);
        void *scratch = sb ? malloc(sb) : NULL;
        afrt_conv2d_f32(x, w, b, y, &p, scratch, e);
        /* a second call with scratch == NULL must give the same result (epilogue again) */
        float *y2 = (float *)malloc(ny * sizeof(float));
        drv_counter k2 = {(int32_t *)calloc(ny, sizeof(int32_t)), p.K, p.OH * p.OW};
        afrt_epilogue e2 = {drv_count_epi, &k2};
        afrt_conv2d_f32(x, w, b, y2, &p, NULL, e2);
        if (memcmp(y, y2, ny * sizeof(float)) != 0 || memcmp(k.count, k2.count, ny * 4) != 0) {
            fprintf(stderr, "scratch == NULL gave a different result\n");
            return 3;
        }
        if (reg) afrt_unregister_constant_region(w);
        drv_save(dir, "y.bin", y, ny * sizeof(float));
        drv_save(dir, "count.bin", k.count, ny * sizeof(int32_t));
        free(x), free(w), free(b), free(y), free(y2), free(k.count), free(k2.count), free(scratch);
        return 0;
    }
    if (strcmp(op, "matmul") == 0) {
        if (argc != 5 + 10) return 2;
        const int64_t batch = v[0], M = v[1], N = v[2], K = v[3];
        const float alpha = (float)atof(argv[9]), beta = (float)atof(argv[10]);
        const int ta = (int)v[6], tb = (int)v[7], bca = (int)v[8], bcb = (int)v[9];
        /* padded leading dimensions, to test ld handling */
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
        const int64_t sa = (ta ? K : M) * lda, sb2 = (tb ? N : K) * ldb, sc = M * ldc;
        float *a = load(dir, "a.bin", (size_t)((bca ? 1 : batch) * sa));
        float *b = load(dir, "b.bin", (size_t)((bcb ? 1 : batch) * sb2));
        float *c = load(dir, "c.bin", (size_t)(batch * sc));
        if (reg) afrt_register_constant_region(a, (size_t)((bca ? 1 : batch) * sa) * sizeof(float));
        if (reg || regb)
            afrt_register_constant_region(b, (size_t)((bcb ? 1 : batch) * sb2) * sizeof(float));
        drv_counter k = {(int32_t *)calloc((size_t)(batch * M * ldc), sizeof(int32_t)), M, ldc};
        afrt_epilogue e = {drv_count_epi, &k};
        afrt_matmul_f32(batch, M, N, K, alpha, a, lda, bca ? 0 : sa, ta, b, ldb, bcb ? 0 : sb2,
                        tb, beta, c, ldc, sc, e);
        if (reg) afrt_unregister_constant_region(a);
        if (reg || regb) afrt_unregister_constant_region(b);
        drv_save(dir, "y.bin", c, (size_t)(batch * sc) * sizeof(float));
        drv_save(dir, "count.bin", k.count, (size_t)(batch * M * ldc) * sizeof(int32_t));
        free(a), free(b), free(c), free(k.count);
        return 0;
    }
    if (strcmp(op, "kernels") == 0) {
        printf("%s\n", AFRT_KERNELS);
        return 0;
    }
    if (strcmp(op, "sweep") == 0) {
        if (argc != 5 + 5) return 2;
        const int ta = (int)v[0], tb = (int)v[1];
        const int64_t MM = v[2], NN = v[3], KK = v[4];
        const int64_t lda = ta ? MM : KK, ldb = tb ? KK : NN;
        char path[4096];
        snprintf(path, sizeof path, "%s/shapes.bin", dir);
        FILE *f = fopen(path, "rb");
        if (!f || fseek(f, 0, SEEK_END) != 0) return 2;
        const int64_t ns = ftell(f) / (int64_t)(3 * sizeof(int64_t));
        int64_t *shapes = (int64_t *)malloc((size_t)(3 * ns + 1) * sizeof(int64_t)), total = 0;
        rewind(f);
        if (!shapes || (int64_t)fread(shapes, 3 * sizeof(int64_t), (size_t)ns, f) != ns) return 2;
        fclose(f);
        for (int64_t i = 0; i < ns; ++i) total += shapes[3 * i] * shapes[3 * i + 1];
        float *a = load(dir, "a.bin", (size_t)(MM * KK)), *b = load(dir, "b.bin", (size_t)(KK * NN));
        float *y = (float *)malloc((size_t)total * sizeof(float)), *o = y;
        for (int64_t i = 0; i < ns; ++i) {
            const int64_t M = shapes[3 * i], N = shapes[3 * i + 1], K = shapes[3 * i + 2];
            for (int64_t e = 0; e < M * N; ++e) o[e] = NAN; /* must all be overwritten */
            afrt_matmul_f32(1, M, N, K, 1.0f, a, lda, 0, ta, b, ldb, 0, tb, 0.0f, o, N, 0,
                            afrt_no_epilogue());
            o += M * N;
        }
        drv_save(dir, "y.bin", y, (size_t)total * sizeof(float));
        free(a), free(b), free(y), free(shapes);
        return 0;
    }
    if (strcmp(op, "pool") == 0) {
        if (argc != 6 + 17) return 2;
        afrt_pool_params p = {v[0], v[1], v[2],  v[3],  v[4],  v[5],  v[6],  v[7], v[8],
                              v[9], v[10], v[11], v[12], v[13], v[14], v[15], (int)v[16]};
        const size_t nx = (size_t)(p.N * p.C * p.H * p.W), ny = (size_t)(p.N * p.C * p.OH * p.OW);
        float *x = load(dir, "x.bin", nx), *y = (float *)malloc(ny * sizeof(float));
        if (strcmp(argv[5], "max") == 0) afrt_maxpool2d_f32(x, y, &p);
        else afrt_avgpool2d_f32(x, y, &p);
        drv_save(dir, "y.bin", y, ny * sizeof(float));
        free(x), free(y);
        return 0;
    }
    return 2;
}
