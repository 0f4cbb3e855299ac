/* Reads float32 values on stdin, writes af_expf, af_tanhf and af_erff of each (3 floats per
 * input) on stdout; run by test/python/test_runtime_kernels.py (and, built for aarch64, by
 * test_runtime_neon.py). The values are computed in plain loops over arrays, as generated
 * code calls them, so the compiler's vectorised forms are what is checked. */
#include "afrt.h"

#include <stdio.h>

int main(void) {
    size_t n = 0, cap = 1024;
    float *x = (float *)malloc(cap * sizeof(float));
    while (x && fread(x + n, sizeof(float), 1, stdin) == 1)
        if (++n == cap) x = (float *)realloc(x, (cap *= 2) * sizeof(float));
    float *e = (float *)malloc((n + 1) * sizeof(float)), *t = (float *)malloc((n + 1) * sizeof(float));
    float *r = (float *)malloc((n + 1) * sizeof(float));
    if (!x || !e || !t || !r) return 1;
    for (size_t i = 0; i < n; ++i) e[i] = af_expf(x[i]);
    for (size_t i = 0; i < n; ++i) t[i] = af_tanhf(x[i]);
    for (size_t i = 0; i < n; ++i) r[i] = af_erff(x[i]);
    for (size_t i = 0; i < n; ++i) {
        const float o[3] = {e[i], t[i], r[i]};
        if (fwrite(o, sizeof o[0], 3, stdout) != 3) return 1;
    }
    free(x), free(e), free(t), free(r);
    return 0;
}
