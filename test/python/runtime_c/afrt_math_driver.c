/* Reads float32 values on stdin, writes afrt_expf, afrt_tanhf, afrt_erff of each (3 floats
 * per input) on stdout; run by test/python/test_runtime_kernels.py. */
#include "afrt.h"

#include <stdio.h>

int main(void) {
    float x;
    while (fread(&x, sizeof x, 1, stdin) == 1) {
        const float o[3] = {afrt_expf(x), afrt_tanhf(x), afrt_erff(x)};
        if (fwrite(o, sizeof o[0], 3, stdout) != 3) return 1;
    }
    return 0;
}
