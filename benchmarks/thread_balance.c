/* How a conv's threads share its work and how much faster they make it: per-thread CPU time
 * of one call at `threads` threads against the same call on one thread, rounds interleaved;
 * driven by thread_balance.py, which prints the table. Arguments: threads reps cold, then per
 * case C K H R stride kind epi (pad R / 2); cold != 0 streams 64 MiB through the caches before
 * every call (untimed), so weights and activations come from memory as in a whole model. kind: 0 Winograd (afrt_winograd_f32), 1 the blocked
 * direct conv (afrt_nchwc_f32), 2 gemm_1x1_t (afrt_conv1x1t_f32), 3 whatever afrt_conv2d_f32
 * picks (also the fallback when the kernel asked for does not take the conv). epi: -1 none,
 * 0 the built-in Relu, 1 residual add + Relu (the residual in its own buffer), 2 the same with
 * the residual the output itself (written in place, as plan-buffers'
 * memory.residual_inplace makes it; each call adds to what the last one left).
 * Run with OMP_WAIT_POLICY=passive (the driver sets it): a thread without work then sleeps
 * instead of spinning, so its CPU time is its share of the conv. Per case it prints
 * "C K H R S stride kind epi longest_us sum_us one_us" (medians over reps calls; longest: the
 * busiest thread, the call's time on an otherwise idle machine; sum: all threads, the work;
 * one: the whole call on one thread). Unlike wall time, none of them moves much when other
 * processes take the cores for a while. */
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

static void conv_(kb_conv *c, int kind, afrt_epilogue e) {
    int done = 0;
    switch (kind) {
    case 0: done = afrt_winograd_f32(c->x, c->w, c->b, c->y, &c->p, e); break;
    case 1: done = afrt_nchwc_f32(c->x, c->w, c->b, c->y, &c->p, e); break;
    case 2: done = afrt_conv1x1t_f32(c->x, c->w, c->b, c->y, &c->p, e); break;
    default: break;
    }
    if (!done) afrt_conv2d_f32(c->x, c->w, c->b, c->y, &c->p, NULL, e);
}

/* One call on nth threads (afrt's count and the stamps'); the busiest thread's CPU time and
 * all threads' in *longest and *sum. */
static void timed_(const kb_bench *b, kb_conv *c, int kind, afrt_epilogue e, int nth,
                   double *longest, double *sum) {
    double t0[MAX_THREADS], t1[MAX_THREADS];
    afrt_set_num_threads(nth);
    if (b->cold) {
        float sink = 0.0f;
        for (size_t k = 0; k < b->nflush; k += 16) sink += b->flush[k] += 1.0f;
        if (sink == 1.0f) printf("#\n"); /* keeps the flush */
    }
    stamp_(t0, nth);
    conv_(c, kind, e);
    stamp_(t1, nth);
    *longest = *sum = 0.0;
    for (int i = 0; i < nth; ++i) {
        const double d = t1[i] - t0[i];
        *sum += d;
        if (d > *longest) *longest = d;
    }
}

int main(int argc, char **argv) {
    if (argc < 12) return 2;
    const int nth = atoi(argv[1]), reps = atoi(argv[2]);
    if (nth < 1 || nth > MAX_THREADS || reps < 1) return 2;
    kb_bench bench = kb_begin(nth, atoi(argv[3]));
    double *v = malloc((size_t)reps * 3 * sizeof(double));
    double *longest = v, *sum = v + reps, *one = v + 2 * reps;
    for (int a = 4; a + 7 < argc; a += 8) {
        const int64_t C = atoll(argv[a]), K = atoll(argv[a + 1]), H = atoll(argv[a + 2]);
        const int64_t R = atoll(argv[a + 3]), S = atoll(argv[a + 4]), st = atoll(argv[a + 5]);
        const int64_t ph = R / 2, pw = S / 2;
        const int kind = atoi(argv[a + 6]), epi = atoi(argv[a + 7]);
        const int64_t OH = (H + 2 * ph - R) / st + 1, OW = (H + 2 * pw - S) / st + 1;
        kb_conv c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, S, OH, OW, st, st, ph, pw, ph,
                                                   pw, 1, 1, 1});
        float *res = NULL;
        if (epi >= 1) { /* values of ordinary size; in place: y starts as the residual */
            res = malloc(c.ny * sizeof(float));
            for (size_t i = 0; i < c.ny; ++i) res[i] = (float)(i % 7) * 0.25f - 0.75f;
            if (epi == 2) memcpy(c.y, res, c.ny * sizeof(float));
        }
        afrt_epi_clamp d = {epi == 2 ? c.y : res, K * OH * OW, OH * OW, 0.0f, INFINITY};
        const afrt_epilogue e = epi >= 0 ? (afrt_epilogue){afrt_epi_clamp_fn, &d}
                                         : afrt_no_epilogue();
        double ignored;
        timed_(&bench, &c, kind, e, nth, &longest[0], &sum[0]); /* warm-up: packed weights, scratch */
        timed_(&bench, &c, kind, e, 1, &one[0], &ignored);
        for (int r = 0; r < reps; ++r) {
            timed_(&bench, &c, kind, e, nth, &longest[r], &sum[r]);
            timed_(&bench, &c, kind, e, 1, &one[r], &ignored);
        }
        printf("%lld %lld %lld %lld %lld %lld %d %d %.1f %.1f %.1f\n", (long long)C,
               (long long)K, (long long)H, (long long)R, (long long)S, (long long)st, kind, epi,
               kb_median(longest, reps), kb_median(sum, reps), kb_median(one, reps));
        fflush(stdout);
        free(res);
        kb_conv_free(&c);
    }
    free(v);
    kb_end(&bench);
    return 0;
}
