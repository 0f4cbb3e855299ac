/* Out of memory inside the kernels (afrt.h, "Memory the kernels allocate"), built with
 * -DAFRT_TEST_FAIL_ALLOC so that chosen kernel allocations fail. The rule every case checks:
 * a call either records an out-of-memory fault (afrt_nomem_kernel(), naming the kernel) or
 * gives the right result, never a wrong one without a fault.
 *
 * - In place (the output buffer holds the residual of the built-in clamp epilogue, plan-buffers'
 *   memory.residual_inplace): afrt_conv2d_f32 (1x1, im2col, two k blocks) and afrt_matmul_f32
 *   (batch 2, two k blocks), each with its allocations failing one at a time and from each one
 *   on, against the same call on a separate residual with all the memory it wants.
 * - A grouped conv the small-channel kernel takes group by group, swept in place and not.
 * - Fallbacks without any memory: a 1x1 conv and a matmul (not in place) compute the right
 *   result with no fault; an im2col conv (not in place) swept like the in-place ones (its
 *   fallback used to ask for a 0-byte column buffer: with none on the thread it skipped the
 *   conv, leaving stale output, and with a smaller one it could write past it).
 * - The 1x1 chain (afrt_conv1x1_chain_f32, fuse-pw-chain) with its first output over the
 *   residual and its second over its input, in column blocks a few at a time
 *   (AFRT_CHAIN_BLOCK_BYTES made small), swept the same way against the two convs apart.
 * - Pooling (max and average, the row-buffer and whole-plane paths) swept the same way.
 * - Faults without any memory: an im2col conv, max and average pooling, a 16-bit matmul whose
 *   weights cannot be widened, each naming itself; the fault is per thread (another thread
 *   does not see it) and afrt_nomem_clear forgets it.
 * Results are compared with the project's bar, |got - ref| <= 1e-4 * max(1, max |ref|) +
 * 1e-3 * |ref| (paths without memory sum in another order).
 *
 *   afrt_oom_driver THREADS   -> "ok CASES faults FAULTS fallbacks FALLBACKS", or the first
 *                                wrong result, exit 1
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

/* several column blocks per image on the chain case's small map */
#define AFRT_CHAIN_BLOCK_BYTES 4096
#include "afrt.h"
#include "driver_util.h"

static float *filled_(size_t n) {
    float *p = malloc(n * sizeof(float));
    drv_fill(p, n, 1.0f);
    return p;
}

static int close_(const float *got, const float *ref, size_t n, const char *what) {
    float big = 1.0f;
    for (size_t i = 0; i < n; ++i) big = fmaxf(big, fabsf(ref[i]));
    for (size_t i = 0; i < n; ++i)
        if (!(fabsf(got[i] - ref[i]) <= 1e-4f * big + 1e-3f * fabsf(ref[i]))) {
            printf("%s: element %zu is %g, expected %g (no fault recorded)\n", what, i,
                   (double)got[i], (double)ref[i]);
            return 0;
        }
    return 1;
}

static int threads_ = 1;
static int cases_, faults_, fallbacks_;

/* Every thread's scratch freed, so the next call allocates afresh (OpenMP keeps its threads). */
static void free_scratch_(void) {
    afrt_free_thread_scratch();
    AFRT_OMP(parallel num_threads(threads_))
    afrt_free_thread_scratch();
}

/* One run of a case under failing allocations [from, from + count): 1 if it faulted (naming
 * `kernel`) or matches ref, else 0 after printing why. */
typedef void (*run_fn_)(void *ctx, float *out);
static int one_(run_fn_ run, void *ctx, const float *ref, float *out, size_t n, const char *kernel,
                long long from, long long count) {
    free_scratch_();
    afrt_nomem_clear();
    afrt_test_fail_alloc(from, count);
    run(ctx, out);
    afrt_test_fail_alloc(0, 0);
    ++cases_;
    const char *k = afrt_nomem_kernel();
    if (k) {
        ++faults_;
        /* a kernel that falls back to another names the one that ran out ("a|b": either) */
        const char *bar = strchr(kernel, '|');
        if (bar && strncmp(k, kernel, (size_t)(bar - kernel)) == 0 && !k[bar - kernel]) return 1;
        if (strcmp(k, bar ? bar + 1 : kernel) != 0) {
            printf("%s: allocations %lld+%lld: the fault names %s\n", kernel, from, count, k);
            return 0;
        }
        return 1;
    }
    ++fallbacks_;
    if (close_(out, ref, n, kernel)) return 1;
    printf("%s: allocations %lld+%lld failing\n", kernel, from, count);
    return 0;
}

/* Counts the case's allocations, then fails each one alone and each one with all after it. */
static int sweep_(run_fn_ run, void *ctx, const float *ref, float *out, size_t n,
                  const char *kernel) {
    free_scratch_();
    afrt_test_fail_alloc(0, 0);
    run(ctx, out);
    const long long total = afrt_test_alloc_count();
    if (total == 0 || !close_(out, ref, n, kernel)) {
        printf("%s: %lld allocations with memory\n", kernel, total);
        return 0;
    }
    for (long long from = 1; from <= total; ++from)
        if (!one_(run, ctx, ref, out, n, kernel, from, 1) ||
            !one_(run, ctx, ref, out, n, kernel, from, -1))
            return 0;
    return 1;
}

/* ---- in place: conv ----------------------------------------------------------------------- */
typedef struct {
    afrt_conv_params p;
    const float *x, *w, *b, *res;
    size_t ny;
    int in_place;
} conv_case_;

static void run_conv_(void *ctx, float *out) {
    const conv_case_ *c = (const conv_case_ *)ctx;
    const int64_t ohw = c->p.OH * c->p.OW;
    if (c->in_place) memcpy(out, c->res, c->ny * sizeof(float));
    const afrt_epi_clamp d = {c->in_place ? out : c->res, c->p.K * ohw, ohw, 0.0f, 6.0f};
    const afrt_epilogue e = {afrt_epi_clamp_fn, (void *)&d};
    afrt_conv2d_f32(c->x, c->w, c->b, out, &c->p, NULL, e);
}

/* The conv on a separate residual with all the memory it wants, then `how` (0: sweep in
 * place, 1: no memory at all, not in place, 2: sweep not in place). */
static int conv_(afrt_conv_params p, int how) {
    const size_t nx = (size_t)(p.N * p.C * p.H * p.W), ny = (size_t)(p.N * p.K * p.OH * p.OW);
    float *x = filled_(nx), *w = filled_((size_t)(p.K * p.C / p.group * p.R * p.S));
    float *b = filled_((size_t)p.K), *res = filled_(ny), *ref = malloc(ny * 4), *y = malloc(ny * 4);
    conv_case_ c = {p, x, w, b, res, ny, 0};
    free_scratch_();
    run_conv_(&c, ref);
    int ok;
    if (how == 1) {
        ok = one_(run_conv_, &c, ref, y, ny, "afrt_conv2d_f32", 1, -1);
    } else {
        c.in_place = how == 0;
        ok = sweep_(run_conv_, &c, ref, y, ny, "afrt_conv2d_f32");
    }
    free(x), free(w), free(b), free(res), free(ref), free(y);
    return ok;
}

/* ---- in place: matmul ------------------------------------------------------------------- */
typedef struct {
    int64_t batch, M, N, K;
    float alpha;
    const float *a, *bm, *res;
    int in_place;
} mm_case_;

static void run_mm_(void *ctx, float *out) {
    const mm_case_ *c = (const mm_case_ *)ctx;
    const size_t nc = (size_t)(c->batch * c->M * c->N);
    if (c->in_place) memcpy(out, c->res, nc * sizeof(float));
    const afrt_epi_clamp d = {c->in_place ? out : c->res, c->M * c->N, c->N, -INFINITY, INFINITY};
    const afrt_epilogue e = {afrt_epi_clamp_fn, (void *)&d};
    afrt_matmul_f32(c->batch, c->M, c->N, c->K, c->alpha, c->a, c->K, c->M * c->K, 0, c->bm, c->N,
                    c->K * c->N, 0, 0.0f, out, c->N, c->M * c->N, e);
}

static int matmul_(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, int how) {
    const size_t nc = (size_t)(batch * M * N);
    float *a = filled_((size_t)(batch * M * K)), *bm = filled_((size_t)(batch * K * N));
    float *res = filled_(nc), *ref = malloc(nc * 4), *c = malloc(nc * 4);
    mm_case_ m = {batch, M, N, K, alpha, a, bm, res, 0};
    free_scratch_();
    run_mm_(&m, ref);
    int ok;
    if (how == 0) {
        m.in_place = 1;
        ok = sweep_(run_mm_, &m, ref, c, nc, "afrt_matmul_f32");
    } else {
        ok = one_(run_mm_, &m, ref, c, nc, "afrt_matmul_f32", 1, -1);
    }
    free(a), free(bm), free(res), free(ref), free(c);
    return ok;
}

/* ---- in place: the 1x1 chain -------------------------------------------------------------- */
typedef struct {
    afrt_conv_params p, p2;
    const float *x, *w, *b, *res, *w2, *b2;
    size_t ny, ny2;
} chain_case_;

/* out holds y (p's output, written over the residual) then y2 (p2's output over y, written
 * over x: the memory plan's chain_input_operand), as plan-buffers lays them out. */
static void run_chain_(void *ctx, float *out) {
    const chain_case_ *c = (const chain_case_ *)ctx;
    const int64_t hw = c->p.H * c->p.W;
    float *y = out, *y2 = out + c->ny;
    memcpy(y, c->res, c->ny * sizeof(float));
    memcpy(y2, c->x, c->ny2 * sizeof(float));
    const afrt_epi_clamp d = {y, c->p.K * hw, hw, 0.0f, 6.0f};
    const afrt_epi_clamp d2 = {NULL, c->p2.K * hw, hw, 0.0f, INFINITY};
    const afrt_epilogue e = {afrt_epi_clamp_fn, (void *)&d}, e2 = {afrt_epi_clamp_fn, (void *)&d2};
    afrt_conv1x1_chain_f32(y2, c->w, c->b, y, &c->p, e, c->w2, c->b2, y2, &c->p2, e2);
}

/* The reference: the two convs apart on buffers of their own, with all the memory they want. */
static void run_chain_ref_(void *ctx, float *out) {
    const chain_case_ *c = (const chain_case_ *)ctx;
    const int64_t hw = c->p.H * c->p.W;
    const afrt_epi_clamp d = {c->res, c->p.K * hw, hw, 0.0f, 6.0f};
    const afrt_epi_clamp d2 = {NULL, c->p2.K * hw, hw, 0.0f, INFINITY};
    const afrt_epilogue e = {afrt_epi_clamp_fn, (void *)&d}, e2 = {afrt_epi_clamp_fn, (void *)&d2};
    afrt_conv2d_f32(c->x, c->w, c->b, out, &c->p, NULL, e);
    afrt_conv2d_f32(out, c->w2, c->b2, out + c->ny, &c->p2, NULL, e2);
}

/* p then p2 (p2->C == p->K, p2->K == p->C so that y2 takes x's bytes), the weights in a
 * registered constant region (else the chain runs the two convs apart). */
static int chain_(afrt_conv_params p, afrt_conv_params p2) {
    const int64_t hw = p.H * p.W;
    const size_t nx = (size_t)(p.N * p.C * hw), ny = (size_t)(p.N * p.K * hw);
    const size_t nw = (size_t)(p.K * p.C), nw2 = (size_t)(p2.K * p2.C);
    float *weights = filled_(nw + nw2);
    afrt_register_constant_region(weights, (nw + nw2) * sizeof(float));
    float *x = filled_(nx), *b = filled_((size_t)p.K), *b2 = filled_((size_t)p2.K);
    float *res = filled_(ny), *ref = malloc((ny + nx) * 4), *out = malloc((ny + nx) * 4);
    chain_case_ c = {p, p2, x, weights, b, res, weights + nw, b2, ny, nx};
    free_scratch_();
    run_chain_ref_(&c, ref);
    const int ok = sweep_(run_chain_, &c, ref, out, ny + nx,
                          "afrt_conv2d_f32|afrt_conv1x1_chain_f32");
    afrt_unregister_constant_region(weights);
    free(weights), free(x), free(b), free(b2), free(res), free(ref), free(out);
    return ok;
}

/* ---- kernels with no way without memory ------------------------------------------------- */
typedef struct {
    afrt_pool_params p;
    const float *x;
    int avg;
} pool_case_;

static void run_pool_(void *ctx, float *out) {
    const pool_case_ *c = (const pool_case_ *)ctx;
    if (c->avg) afrt_avgpool2d_f32(c->x, out, &c->p);
    else afrt_maxpool2d_f32(c->x, out, &c->p);
}

typedef struct {
    const uint16_t *w;
    const float *a;
} lp_case_;

static void run_lp_(void *ctx, float *out) {
    const lp_case_ *c = (const lp_case_ *)ctx;
    afrt_matmul_lp(AFRT_LP_BF16, 1, 8, 16, 24, 1.0f, c->a, 0, 24, 0, 0, c->w, 1, 16, 0, 0, 0.0f,
                   out, 16, 0, afrt_no_epilogue());
}

/* Must fault with every allocation failing. */
static int must_fault_(run_fn_ run, void *ctx, float *out, const char *kernel) {
    free_scratch_();
    afrt_nomem_clear();
    afrt_test_fail_alloc(1, -1);
    run(ctx, out);
    afrt_test_fail_alloc(0, 0);
    ++cases_;
    const char *k = afrt_nomem_kernel();
    if (!k || strcmp(k, kernel) != 0) {
        printf("%s without memory: fault %s\n", kernel, k ? k : "none");
        return 0;
    }
    ++faults_;
    /* per thread: another thread has its own (empty) record */
    int seen_elsewhere = 0;
    AFRT_OMP(parallel num_threads(2))
    {
#ifdef _OPENMP
        if (omp_get_thread_num() == 1 && afrt_nomem_kernel()) seen_elsewhere = 1;
#endif
    }
    afrt_nomem_clear();
    if (seen_elsewhere || afrt_nomem_kernel()) {
        printf("%s: the fault outlived afrt_nomem_clear or reached another thread\n", kernel);
        return 0;
    }
    return 1;
}

/* Pooling swept like the convs: the row-buffer path (3x3/2) and the whole-plane one (3x3/1
 * pads 1, whose average falls back to the row path without its per-position reciprocals). */
static int pools_(void) {
    const afrt_pool_params rows = {2, 3, 9, 10, 3, 3, 4, 4, 2, 2, 0, 0, 0, 0, 1, 1, 0};
    const afrt_pool_params flat = {2, 3, 9, 10, 3, 3, 9, 10, 1, 1, 1, 1, 1, 1, 1, 1, 0};
    const afrt_pool_params ps[2] = {rows, flat};
    float *x = filled_(2 * 3 * 9 * 10), *y = malloc(2 * 3 * 9 * 10 * 4), *ref = malloc(2 * 3 * 9 * 10 * 4);
    int ok = 1;
    for (int i = 0; ok && i < 4; ++i) {
        pool_case_ c = {ps[i / 2], x, i % 2};
        const size_t n = (size_t)(2 * 3 * c.p.OH * c.p.OW);
        free_scratch_();
        run_pool_(&c, ref);
        ok = sweep_(run_pool_, &c, ref, y, n, c.avg ? "afrt_avgpool2d_f32" : "afrt_maxpool2d_f32");
    }
    free(x), free(y), free(ref);
    return ok;
}

static int faults_only_(void) {
    const afrt_pool_params pp = {2, 3, 9, 10, 3, 3, 4, 4, 2, 2, 0, 0, 0, 0, 1, 1, 0};
    float *x = filled_(2 * 3 * 9 * 10), *y = malloc(2 * 3 * 16 * 4);
    pool_case_ mp = {pp, x, 0}, ap = {pp, x, 1};
    uint16_t w[24 * 16];
    for (int i = 0; i < 24 * 16; ++i) w[i] = afrt_f32_to_bf16_(drv_frand());
    float *a = filled_(8 * 24), *c = malloc(8 * 16 * 4);
    lp_case_ lp = {w, a};
    const int ok = must_fault_(run_pool_, &mp, y, "afrt_maxpool2d_f32") &&
                   must_fault_(run_pool_, &ap, y, "afrt_avgpool2d_f32") &&
                   must_fault_(run_lp_, &lp, c, "afrt_matmul_lp");
    free(x), free(y), free(a), free(c);
    return ok;
}

int main(int argc, char **argv) {
    drv_seed(4242u);
    threads_ = argc > 1 ? atoi(argv[1]) : 1;
    afrt_set_num_threads(threads_);
    /* N C H W K R S OH OW sh sw pt pl pb pr dh dw group */
    const afrt_conv_params c1x1 = {2, 40, 9, 9, 48, 1, 1, 9, 9, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    const afrt_conv_params c1x1_deep = {1, 300, 6, 6, 40, 1, 1, 6, 6, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    const afrt_conv_params c3x3s2 = {1, 24, 13, 13, 32, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 1};
    const afrt_conv_params c3x3g2 = {1, 16, 8, 8, 24, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 2};
    /* grouped, strided: the small-channel kernel group by group (afrt_dconv_smallc_groups_) */
    const afrt_conv_params c3x3g4s2 = {2, 32, 13, 13, 24, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 4};
    /* the second conv of a chain after c1x1: 48 -> 40 channels, its output x's size */
    const afrt_conv_params chain2 = {2, 48, 9, 9, 40, 1, 1, 9, 9, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    const int ok = conv_(c1x1, 0) && conv_(c1x1_deep, 0) && conv_(c3x3s2, 0) && conv_(c3x3g2, 0) &&
                   matmul_(2, 20, 70, 300, 1.0f, 0) && matmul_(1, 13, 40, 50, 0.5f, 0) &&
                   conv_(c1x1, 1) && matmul_(2, 20, 70, 300, 1.0f, 1) && conv_(c3x3s2, 1) &&
                   conv_(c3x3s2, 2) && conv_(c3x3g4s2, 0) && conv_(c3x3g4s2, 2) &&
                   chain_(c1x1, chain2) &&
                   pools_() && faults_only_();
    if (!ok) return 1;
    printf("ok %d faults %d fallbacks %d\n", cases_, faults_, fallbacks_);
    return 0;
}
