/* kbench.h: the timing harness of the kernel benchmarks (winograd_conv.c, conv1x1_small.c,
 * nchwc_conv.c, dwpw_chain.c, pool2d.c): two versions of one computation, "algo" 0 and 1, timed in
 * interleaved rounds (a sample of 0, then a sample of 1, reps times); a sample is `inner`
 * calls, its time per call. Reported: the median of each side's samples (us) and the median of
 * the per-round ratios 0 / 1 (< 1: algo 0 wins). One thread: process CPU time (robust to
 * other work on the machine); more: wall time. Cold (kb_begin's cold != 0): 64 MiB are
 * streamed through the caches before every sample (untimed), one call per sample, so weights
 * and activations come from memory as in a whole model, not from a cache warmed by the
 * previous call. With afrt.h included first, kb_conv holds one conv case's buffers. Header-only;
 * the Python side is kbench.py. */
#ifndef KBENCH_H
#define KBENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* One call of version `algo` (0 or 1) of the computation described by `ctx`. */
typedef void (*kb_fn)(void *ctx, int algo);

typedef struct {
    int cpu;      /* time in process CPU seconds (one thread), else wall seconds */
    int cold;     /* stream the flush buffer through the caches before every sample */
    float *flush; /* 64 MiB, cold only */
    size_t nflush;
} kb_bench;

typedef struct {
    double us0, us1, ratio; /* medians: per call of algo 0, of algo 1; of the round ratios */
} kb_result;

static inline double kb_now(const kb_bench *b) {
    struct timespec ts;
    clock_gettime(b->cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int kb_cmp_(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double kb_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), kb_cmp_);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline kb_bench kb_begin(int threads, int cold) {
    kb_bench b = {threads == 1, cold != 0, NULL, (size_t)16 << 20};
    if (b.cold) b.flush = calloc(b.nflush, sizeof(float));
    return b;
}

static inline void kb_end(kb_bench *b) {
    free(b->flush);
    b->flush = NULL;
}

/* Calls per sample: as many calls of `algo` as fit in `seconds` (plus one), made now as a
 * warm-up; 1 when cold. */
static inline int kb_inner(const kb_bench *b, double seconds, kb_fn f, void *ctx, int algo) {
    int inner = 1;
    for (double t0 = kb_now(b); !b->cold && kb_now(b) - t0 < seconds; ++inner) f(ctx, algo);
    return inner;
}

/* reps interleaved rounds of `inner` calls each. */
static inline kb_result kb_rounds(const kb_bench *b, int reps, int inner, kb_fn f, void *ctx) {
    double *t0s = malloc((size_t)reps * sizeof(double) * 3), *t1s = t0s + reps, *r = t1s + reps;
    float sink = 0.0f;
    for (int i = 0; i < reps; ++i) {
        double t[2];
        for (int algo = 0; algo < 2; ++algo) {
            if (b->cold)
                for (size_t k = 0; k < b->nflush; k += 16) sink += b->flush[k] += 1.0f;
            const double start = kb_now(b);
            for (int j = 0; j < inner; ++j) f(ctx, algo);
            t[algo] = (kb_now(b) - start) / inner * 1e6;
        }
        t0s[i] = t[0];
        t1s[i] = t[1];
        r[i] = t[0] / t[1];
    }
    if (sink == 1.0f) printf("#\n"); /* keeps the flush */
    const kb_result res = {kb_median(t0s, reps), kb_median(t1s, reps), kb_median(r, reps)};
    free(t0s);
    return res;
}

#ifdef AFRT_H
/* One conv case: seeded input in [-1, 1), small weights, bias 0.1, the weights registered as
 * constants (as a model's are), the output, and the plan afrt_conv_own_ takes. */
typedef struct {
    afrt_conv_params p;
    afrt_conv_plan_ q;
    float *x, *w, *b, *y;
    size_t nx, nw, ny;
} kb_conv;

static inline kb_conv kb_conv_new(afrt_conv_params p) {
    kb_conv c = {.p = p, .q = afrt_conv_plan(&p)};
    c.nx = (size_t)(p.N * p.C * p.H * p.W);
    c.nw = (size_t)(p.K * (p.C / p.group) * p.R * p.S);
    c.ny = (size_t)(p.N * p.K * p.OH * p.OW);
    c.x = malloc(c.nx * 4), c.w = malloc(c.nw * 4), c.b = malloc((size_t)p.K * 4);
    c.y = malloc(c.ny * 4);
    for (size_t i = 0; i < c.nx; ++i) c.x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (size_t i = 0; i < c.nw; ++i) c.w[i] = (float)((i * 40503u) % 1000) / 50000.0f - 0.01f;
    for (int64_t i = 0; i < p.K; ++i) c.b[i] = 0.1f;
    afrt_register_constant_region(c.w, c.nw * 4);
    return c;
}

static inline void kb_conv_free(kb_conv *c) {
    afrt_unregister_constant_region(c->w);
    free(c->x), free(c->w), free(c->b), free(c->y);
}

/* main() of a benchmark of two ways (run: algo 0 and 1 on a kb_conv) to compute square RxR
 * stride-1 pad-R/2 convs. Arguments: threads reps cold C K H [C K H ...] (an H x H map);
 * per case it prints "C K H median_0_us median_1_us median_ratio". Warm: calls per sample
 * for ~2 ms of algo 1; cold: one call per sample, after a flush. */
static inline int kb_square_conv_main(int argc, char **argv, int64_t R, kb_fn run) {
    if (argc < 7) return 2;
    const int threads = atoi(argv[1]), reps = atoi(argv[2]);
    kb_bench bench = kb_begin(threads, atoi(argv[3]));
    afrt_set_num_threads(threads);
    const int64_t pd = R / 2;
    for (int a = 4; a + 2 < argc; a += 3) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        kb_conv c = kb_conv_new((afrt_conv_params){1, C, H, H, K, R, R, H, H, 1, 1, pd, pd, pd,
                                                   pd, 1, 1, 1});
        const int inner = kb_inner(&bench, 2e-3, run, &c, 1);
        run(&c, 0);
        const kb_result r = kb_rounds(&bench, reps, inner, run, &c);
        printf("%lld %lld %lld %.1f %.1f %.3f\n", (long long)C, (long long)K, (long long)H,
               r.us0, r.us1, r.ratio);
        fflush(stdout);
        kb_conv_free(&c);
    }
    kb_end(&bench);
    return 0;
}
#endif

#endif
