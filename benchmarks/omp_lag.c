/* How late an OpenMP worker starts a region after the caller enters it (docs/runtime.md,
 * "Threads on a busy machine"): a 2-thread region after a busy gap of 0..5 ms on the caller
 * (like the serial code between a model's kernels), 200 regions per gap; percentiles in us.
 *
 *     cc -O2 -fopenmp benchmarks/omp_lag.c -o /tmp/omp_lag && GOMP_SPINCOUNT=10000 /tmp/omp_lag
 *
 * Run it once as is and once beside a busy process (python3 -c 'while True: pass' &). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

enum { REPS = 200 };

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    static const double gaps[] = {0, 20e-6, 100e-6, 300e-6, 1e-3, 5e-3};
    static double t0, arrived[2], lags[REPS];
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; ++g) {
        for (int r = 0; r < REPS; ++r) {
            const double until = omp_get_wtime() + gaps[g];
            while (omp_get_wtime() < until) {
            }
            t0 = omp_get_wtime();
#pragma omp parallel num_threads(2)
            arrived[omp_get_thread_num()] = omp_get_wtime();
            lags[r] = (arrived[1] - t0) * 1e6;
        }
        qsort(lags, REPS, sizeof lags[0], cmp);
        printf("gap %6.0f us: lag p10 %7.1f  p50 %7.1f  p90 %7.1f  p99 %7.1f us\n", gaps[g] * 1e6,
               lags[REPS / 10], lags[REPS / 2], lags[REPS * 9 / 10], lags[REPS * 99 / 100]);
    }
    return 0;
}
