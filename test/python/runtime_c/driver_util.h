/* What the C test drivers of this directory share: a seeded LCG for their inputs, and the
 * bit-for-bit comparison of two outputs. Each driver seeds once at the top of main, so its
 * inputs are the same on every build and every run. */
#ifndef DRIVER_UTIL_H
#define DRIVER_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

#endif
