/* Reads float32 values on stdin, writes af_expf, af_tanhf, af_erff of each and af_expf_nonpos_
 * of minus its magnitude (4 floats per input) on stdout; run by test/python/test_runtime_kernels.py (and, built for aarch64, by
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
    float *r = (float *)malloc((n + 1) * sizeof(float)), *q = (float *)malloc((n + 1) * sizeof(float));
    if (!x || !e || !t || !r || !q) return 1;
    for (size_t i = 0; i < n; ++i) e[i] = af_expf(x[i]);
    for (size_t i = 0; i < n; ++i) t[i] = af_tanhf(x[i]);
    for (size_t i = 0; i < n; ++i) r[i] = af_erff(x[i]);
    for (size_t i = 0; i < n; ++i) q[i] = af_expf_nonpos_(-fabsf(x[i]));
    for (size_t i = 0; i < n; ++i) {
        const float o[4] = {e[i], t[i], r[i], q[i]};
        if (fwrite(o, sizeof o[0], 4, stdout) != 4) return 1;
    }
    free(x), free(e), free(t), free(r), free(q);
    return 0;
}
