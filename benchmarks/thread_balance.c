/* How evenly a conv's threads share its work: per-thread CPU time of afrt_conv2d_f32 (the
 * path the runtime picks by itself) on square RxR convs; driven by thread_balance.py, which
 * prints the table. Arguments: threads reps, then per case C K H R stride (pad R / 2).
 * Run with OMP_WAIT_POLICY=passive (the driver sets it): a thread without work then sleeps
 * instead of spinning, so its CPU time is its share of the conv. Per case it prints
 * "C K H R stride longest_us sum_us" (medians over reps calls; longest: the busiest thread,
 * the call's time on an otherwise idle machine; sum: all threads, the work). Unlike wall
 * time, neither moves much when other processes take the cores for a while. */
#include <omp.h>
#include <string.h>

#include "afrt.h"
#include "kbench.h"

enum { MAX_THREADS = 64 };

static double thread_cpu_us_(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* each OpenMP thread's CPU time now: libgomp keeps the same threads from region to region */
static void stamp_(double *t, int nth) {
    AFRT_OMP(parallel num_threads(nth))
    t[omp_get_thread_num()] = thread_cpu_us_();
}

int main(int argc, char **argv) {
    if (argc < 8) return 2;
    const int nth = atoi(argv[1]), reps = atoi(argv[2]);
    if (nth < 1 || nth > MAX_THREADS || reps < 1) return 2;
    afrt_set_num_threads(nth);
    double *longest = malloc((size_t)reps * sizeof(double)), *sum = malloc((size_t)reps * sizeof(double));
    for (int a = 3; a + 4 < argc; a += 5) {
        const int64_t C = atoll(argv[a]), K = atoll(argv[a + 1]), H = atoll(argv[a + 2]);
        const int64_t R = atoll(argv[a + 3]), st = atoll(argv[a + 4]), pd = R / 2;
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        kb_conv c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, OH, OH, st, st, pd, pd, pd,
                                                   pd, 1, 1, 1});
        afrt_conv2d_f32(c.x, c.w, c.b, c.y, &c.p, NULL, afrt_no_epilogue()); /* warm-up */
        for (int r = 0; r < reps; ++r) {
            double t0[MAX_THREADS], t1[MAX_THREADS];
            stamp_(t0, nth);
            afrt_conv2d_f32(c.x, c.w, c.b, c.y, &c.p, NULL, afrt_no_epilogue());
            stamp_(t1, nth);
            longest[r] = sum[r] = 0.0;
            for (int i = 0; i < nth; ++i) {
                const double d = t1[i] - t0[i];
                sum[r] += d;
                if (d > longest[r]) longest[r] = d;
            }
        }
        printf("%lld %lld %lld %lld %lld %.1f %.1f\n", (long long)C, (long long)K, (long long)H,
               (long long)R, (long long)st, kb_median(longest, reps), kb_median(sum, reps));
        fflush(stdout);
        kb_conv_free(&c);
    }
    free(longest);
    free(sum);
    return 0;
}
