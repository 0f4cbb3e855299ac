/* Reads float32 values on stdin, writes af_expf, af_tanhf, af_erff of each (3 floats per
 * input) on stdout; run by test/python/test_runtime_kernels.py. */
#include "afrt.h"

#include <stdio.h>

int main(void) {
    float x;
    while (fread(&x, sizeof x, 1, stdin) == 1) {
        const float o[3] = {af_expf(x), af_tanhf(x), af_erff(x)};
        if (fwrite(o, sizeof o[0], 3, stdout) != 3) return 1;
    }
    return 0;
}
