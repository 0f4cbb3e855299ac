/* What the C test drivers of this directory share: a seeded LCG for their inputs, the
 * bit-for-bit comparison of two outputs, and (for the drivers a Python test feeds through
 * files) reading and writing DIR/NAME.bin and the counting epilogue. Each driver seeds once
 * at the top of main, so its inputs are the same on every build and every run. */
#ifndef DRIVER_UTIL_H
#define DRIVER_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "afrt.h"

static uint32_t drv_rng_ = 12345u;

static inline void drv_seed(uint32_t seed) { drv_rng_ = seed; }

/* Uniform in [-0.5, 0.5) on a grid of 2^-16 (exact in float, so scaled by a power of two it
 * stays exact). */
static inline float drv_frand(void) {
    drv_rng_ = drv_rng_ * 1664525u + 1013904223u;
    return (float)((drv_rng_ >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* p[0..n) = scale * drv_frand() */
static inline void drv_fill(float *p, size_t n, float scale) {
    for (size_t i = 0; i < n; ++i) p[i] = scale * drv_frand();
}

/* Bit for bit, except that two NaNs match whatever their signs and payloads: where a NaN
 * meets a NaN (a NaN input reaching a NaN bias or residual), IEEE 754 leaves which one
 * propagates to the implementation, and GCC swaps the operands of a + b freely, so the sign
 * of such a NaN can differ between two compilations of one sum (the GEMM core's two paths
 * differ so on a grouped im2col conv with a NaN bias). Prints the first difference. */
static inline int drv_same(const float *a, const float *b, size_t n, const char *what) {
    if (memcmp(a, b, n * sizeof(float)) == 0) return 1;
    for (size_t i = 0; i < n; ++i) {
        uint32_t x, y;
        memcpy(&x, a + i, 4);
        memcpy(&y, b + i, 4);
        if (x != y && !(a[i] != a[i] && b[i] != b[i])) {
            printf("%s: element %zu differs: %a vs %a\n", what, i, (double)a[i], (double)b[i]);
            return 0;
        }
    }
    return 1;
}

/* The epilogue the file-fed drivers pass: v -> 0.5 * v - 1, counting the calls per element
 * (count is batch x rows x cols int32), so the test sees it ran exactly once per element and
 * after the element's final value was stored. */
typedef struct {
    int32_t *count;
    int64_t rows, cols; /* per-batch matrix shape in the count array */
} drv_counter;

static inline void drv_count_epi(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1,
                                 int64_t c0, int64_t c1, int64_t ld) {
    drv_counter *k = (drv_counter *)ctx;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            out[r * ld + c] = 0.5f * out[r * ld + c] - 1.0f;
            k->count[(batch * k->rows + r) * k->cols + c] += 1;
        }
}

/* n elements of elem bytes from DIR/NAME (exit 2 if it cannot be read); the caller frees. */
static inline void *drv_load(const char *dir, const char *name, size_t n, size_t elem) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *buf = malloc(n * elem + 1);
    FILE *f = fopen(path, "rb");
    if (!f || !buf || fread(buf, elem, n, f) != n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return buf;
}

/* bytes from data to DIR/NAME (exit 2 if it cannot be written). */
static inline void drv_save(const char *dir, const char *name, const void *data, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

/* The conv kernels the epilogue drivers run one case on (the SiLU and clamp drivers compare a
 * built-in epilogue with the same function passed as one no kernel recognises). */
enum { DRV_CONV2D, DRV_DW, DRV_WINOGRAD, DRV_NCHWC, DRV_NCHWC_BLOCKED_OUT };
static const char *const DRV_CONV_NAMES[] = {"conv2d", "dwconv", "winograd", "nchwc",
                                             "nchwc_blocked_out"};

/* One call of conv kernel `kind`; 0 if it declined (then the case would check nothing). */
static inline int drv_run_conv(int kind, const float *x, const float *w, const float *b,
                               float *y, const afrt_conv_params *p, afrt_epilogue e) {
    switch (kind) {
    case DRV_DW: return afrt_dwconv2d_f32(x, w, b, y, p, e);
    case DRV_WINOGRAD: return afrt_winograd_f32(x, w, b, y, p, e);
    case DRV_NCHWC: return afrt_nchwc_f32(x, w, b, y, p, e);
    case DRV_NCHWC_BLOCKED_OUT: return afrt_nchwc_ex_f32(x, w, b, y, p, e, AFRT_NC_OUT_BLOCKED);
    default: afrt_conv2d_f32(x, w, b, y, p, NULL, e); return 1;
    }
}

#endif
