/*
 * afrt.h — the autofusion runtime: the speed-critical library that generated model.c includes.
 *
 * Header-only C11 (every function is `static inline`), so a generated model is one translation
 * unit: `cc -std=c11 -O3 -march=x86-64-v3 -fopenmp -I<this dir> model.c -lm` (any -march:
 * the kernels pick AVX-512, AVX2+FMA, NEON (aarch64) or portable C from the compiler's
 * predefined macros; AFRT_KERNELS names the set, -DAFRT_PORTABLE keeps portable C on aarch64).
 * Compiles warning-free with -Wall -Wextra -Werror, with or without -fopenmp.
 *
 * What it provides
 *   - afrt_conv2d_f32   NCHW 2-d convolution (groups, depthwise fast path, 1x1 without im2col,
 *                       Winograd F(4x4, 3x3) for 3x3 stride-1 convs where it wins
 *                       (afrt_winograd.h), im2col fused into the GEMM packing otherwise),
 *                       bias, fused epilogue.
 *   - afrt_conv3d_f32   NCDHW 3-d convolution (groups, strides, pads, dilations): im2col over
 *                       D x H x W packed into the same GEMM core's B panels, fused epilogue.
 *   - afrt_conv1x1_pair_f32   two 1x1 convs whose outputs are added (fuse-conv-pair: ResNet's
 *                       conv3 + downsample) as one GEMM over both inputs' channels.
 *   - afrt_conv1x1_chain_f32  a 1x1 conv and the 1x1 conv reading its output (fuse-pw-chain),
 *                       column block by column block, the first output kept in L2 between.
 *   - afrt_matmul_f32   batched row-major C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]
 *                       with batch strides (0 = broadcast), transposes and a fused epilogue.
 *   - afrt_matmul_lp / afrt_conv2d_lp   the same with bf16 or fp16 operands (16-bit weights
 *                       kept 16-bit, activations rounded while packing), fp32 accumulation.
 *   - afrt_maxpool2d_f32 / afrt_avgpool2d_f32   NCHW pooling with pads, strides, dilations.
 *   - afrt_maxpool2d_nc_f32                     the same max pool on NCHW16c (assign-layout).
 *   - af_expf / af_erff / af_tanhf   vectorisable f32 math that generated loops call.
 *   - afrt_set_num_threads / afrt_get_num_threads.
 *   - afrt_nomem_clear / afrt_nomem_kernel   the out-of-memory fault of the calling thread: a
 *                       kernel that could not allocate and had no other correct path names
 *                       itself there (af_run turns it into AF_ERR_NOMEM).
 *
 * GEMM core: afrt's own packed-panel core (below). Only with -DAFRT_OPENBLAS (kernel tests and
 * benchmarks, linked with -lscipy_openblas) does OpenBLAS sgemm from the scipy-openblas32 wheel
 * (symbols prefixed `scipy_`) serve afrt_sgemm_ and the AFRT_GEMM_TILED/WHOLE strategies; its
 * prototypes are declared here, so do not also include the wheel's cblas.h in the same unit.
 * Without it a model needs only libc, libm and (with -fopenmp) libgomp: a deployable build.
 *
 * Threading: by default (AFRT_GEMM_TILED, chosen by measurement, see docs/runtime.md) OpenBLAS
 * runs single-threaded and the runtime splits every GEMM/conv into output tiles that OpenMP
 * threads compute independently; each thread applies the epilogue to its own tile right after
 * computing it, while the tile is in that core's L2. The alternative AFRT_GEMM_WHOLE (one
 * OpenBLAS-threaded sgemm per matrix, then a separate OpenMP epilogue pass) is kept for the
 * benchmark that justifies the choice; select it with afrt_set_gemm_strategy().
 *
 * Conventions: all sizes are int64_t; arrays are dense row-major unless an ld/stride says
 * otherwise; outputs never alias inputs. Convolutions of other ranks: a 1-d conv is a 2-d conv
 * with H = R = OH = 1 (stride_h = dil_h = 1, pad_top = pad_bottom = 0); 3-d convs are not
 * covered by this header (the lowering must emit them as loops or reject them).
 */
#ifndef AFRT_H
#define AFRT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif
/* AFRT_KERNELS (the kernel set) and AFRT_NEON_ (the NEON kernels below, in blocks of their
 * own), from the predefined macros: afrt_kernels.h. */
#include "afrt_kernels.h"
#if defined(AFRT_NEON_)
#include <arm_neon.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#define AFRT_PRAGMA_(x) _Pragma(#x)
/* AFRT_OMP(parallel for) expands to `#pragma omp parallel for` when built with -fopenmp. */
#define AFRT_OMP(x) AFRT_PRAGMA_(omp x)
#else
#define AFRT_OMP(x)
#endif

/* Weight packers run once per model on whatever weights the conv is given. AFRT_NOIPA_ keeps
 * them out of gcc's interprocedural propagation: otherwise gcc specialises a packer for a
 * model's small constant weight array on a path the run-time dispatch never takes and reports
 * -Warray-bounds, which -Werror turns into a failed build (a 2x3x1x1 conv's 6 weights seen
 * through the 3x3 Winograd packer; found by the differential fuzzer). */
/* Pooling's per-plane and per-row max loops stay out of line: inlined into the kernel's
 * OpenMP body they ran 1.2-1.6x slower (GoogLeNet's, SqueezeNet's, ResNet-50's and
 * DenseNet-121's max pools; why is not known, docs/runtime.md "Pooling"). */
#define AFRT_NOINLINE_ __attribute__((noinline, unused))
#if defined(__GNUC__) && !defined(__clang__)
#define AFRT_NOIPA_ __attribute__((noipa, unused))
#else
#define AFRT_NOIPA_ __attribute__((noinline, unused))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * OpenBLAS (scipy-openblas32): the few entry points we use. Enum values are CBLAS's.
 * ------------------------------------------------------------------------------------------- */
#ifdef AFRT_OPENBLAS
enum { AFRT_CBLAS_ROW_MAJOR = 101, AFRT_CBLAS_NO_TRANS = 111, AFRT_CBLAS_TRANS = 112 };
void scipy_cblas_sgemm(const int order, const int trans_a, const int trans_b, const int m,
                       const int n, const int k, const float alpha, const float *a,
                       const int lda, const float *b, const int ldb, const float beta,
                       float *c, const int ldc);
void scipy_openblas_set_num_threads(int num_threads);
int scipy_openblas_get_num_threads(void);
#endif

/* ---------------------------------------------------------------------------------------------
 * Memory the kernels allocate, and the out-of-memory fault.
 *
 * Kernels allocate scratch (packing buffers, per-thread tiles, a copy of a residual) through
 * afrt_malloc_, afrt_thread_scratch and the packed-operand cache. When that fails, a kernel
 * either takes a path that needs less memory and still computes the right result, or, where
 * there is none, leaves its output incomplete and records an out-of-memory fault naming
 * itself (afrt_nomem_); docs/runtime.md ("Out of memory") lists which kernel does which.
 *
 * The record: the name of the first kernel that ran short since afrt_nomem_clear, one per
 * thread. af_run clears it, runs the graph and reads it (afrt_nomem_kernel) on its own thread,
 * so two models running on two threads never see each other's faults, and a run never sees
 * a fault of an earlier run. OpenMP workers are other threads with their own copies of a
 * thread-local, so only the thread that called the kernel records: a parallel loop whose
 * workers run short sets a flag of the call's own (afrt_flag_set_), and the kernel records
 * after the loop, on the calling thread. (The kernels that allocate are called from
 * af_graph's thread, never from inside a generated parallel loop, whose bodies are scalar
 * code.) A return code threaded through every kernel and generated function would say the
 * same at the cost of every signature.
 * ------------------------------------------------------------------------------------------- */
#ifdef __cplusplus
#define AFRT_THREAD_LOCAL thread_local
#else
#define AFRT_THREAD_LOCAL _Thread_local
#endif

static AFRT_THREAD_LOCAL const char *afrt_nomem_at_;

/* Forgets this thread's out-of-memory fault (af_run calls it first). */
static inline void afrt_nomem_clear(void) { afrt_nomem_at_ = NULL; }

/* The kernel that ran out of memory on this thread since afrt_nomem_clear, or NULL. */
static inline const char *afrt_nomem_kernel(void) { return afrt_nomem_at_; }

/* Records that `kernel` could not get memory and left its output incomplete (the first such
 * kernel is kept). Call on the thread that called the kernel, never inside a parallel loop. */
static inline void afrt_nomem_(const char *kernel) {
    if (!afrt_nomem_at_) afrt_nomem_at_ = kernel;
}

/* Sets a kernel call's own "ran short" flag from any of its OpenMP threads. */
static inline void afrt_flag_set_(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELAXED); }

#ifdef AFRT_TEST_FAIL_ALLOC
/* Test builds only (-DAFRT_TEST_FAIL_ALLOC; production builds have none of this): the kernels'
 * allocations are numbered 1, 2, ... and numbers [from, from + count) fail (from 0: none;
 * count < 0: every one from `from` on). afrt_test_fail_alloc(from, count) sets that and
 * restarts the numbering; until it is called, each allocation reads the setting from the
 * environment, AFRT_TEST_FAIL_ALLOC="FROM[:COUNT]" (numbered from the library's first
 * allocation), so a model library built this way can be made to fail, and then not, with no
 * entry point of its own. af_create's allocations (weights, arena) are not kernels' and are
 * not counted. */
static long long afrt_test_alloc_seen_, afrt_test_alloc_from_, afrt_test_alloc_count_ = -1;
static int afrt_test_alloc_set_;

static inline void afrt_test_fail_alloc(long long from, long long count) {
    AFRT_OMP(critical(afrt_test_alloc))
    {
        afrt_test_alloc_set_ = 1;
        afrt_test_alloc_seen_ = 0;
        afrt_test_alloc_from_ = from;
        afrt_test_alloc_count_ = count;
    }
}

/* How many kernel allocations were numbered since the last afrt_test_fail_alloc call. */
static inline long long afrt_test_alloc_count(void) {
    long long n;
    AFRT_OMP(critical(afrt_test_alloc))
    n = afrt_test_alloc_seen_;
    return n;
}

static inline int afrt_test_alloc_fails_(void) {
    int fail;
    AFRT_OMP(critical(afrt_test_alloc))
    {
        if (!afrt_test_alloc_set_) {
            const char *env = getenv("AFRT_TEST_FAIL_ALLOC");
            char *end = NULL;
            afrt_test_alloc_from_ = env ? strtoll(env, &end, 10) : 0;
            afrt_test_alloc_count_ = end && *end == ':' ? strtoll(end + 1, NULL, 10) : -1;
        }
        const long long k = ++afrt_test_alloc_seen_, from = afrt_test_alloc_from_;
        fail = from > 0 && k >= from && (afrt_test_alloc_count_ < 0 || k < from + afrt_test_alloc_count_);
    }
    return fail;
}
#define AFRT_ALLOC_FAILS_() afrt_test_alloc_fails_()
#else
#define AFRT_ALLOC_FAILS_() 0
#endif

/* malloc / 64-byte aligned_alloc (bytes a multiple of 64) for kernel scratch. */
static inline void *afrt_malloc_(size_t bytes) { return AFRT_ALLOC_FAILS_() ? NULL : malloc(bytes); }
static inline void *afrt_aligned_alloc_(size_t bytes) {
    return AFRT_ALLOC_FAILS_() ? NULL : aligned_alloc(64, bytes);
}

/* Memory for a large, long-lived buffer (packed weights, the arena): 64-byte aligned, and on
 * Linux, from 2 MiB up, 2 MiB-aligned with its whole 2 MiB pages advised into transparent huge
 * pages, so streaming a model's weights from DRAM on every run, or a large activation through
 * the caches, does not also take a TLB miss and a page walk every 4 KiB, and a buffer's cache
 * sets follow its addresses (4 KiB pages land anywhere in physical memory). Only whole pages
 * inside the buffer are advised, so no memory is added (rounding each buffer up to 2 MiB cost
 * ResNet-50 40 MB of RSS): the tail past the last whole page stays in small pages and the
 * alignment's padding is never touched. A buffer that wants its tail in a huge page too asks
 * for afrt_huge_round_(bytes). Free with free().
 * The advice only takes for pages not yet in memory: where the allocator hands back memory a
 * freed buffer had used (its heap, after other allocations came and went -- the second model
 * of a process, a Python process after numpy's arrays), those pages stay 4 KiB pages. So the
 * whole pages are first dropped (MADV_DONTNEED: they read as zeros at the next touch, and
 * the buffer's contents are undefined until written anyway), and the next touch faults them
 * in as huge pages. Before, a second copy of ResNet-50 loaded into one process had 5 of its 11
 * packed weight buffers of 8 MiB in small pages (smaps' AnonHugePages), and its 14x14 Winograd
 * convs, which stream their transformed weights from DRAM on every run, read 4-8% slower than
 * the first copy's (benchmarks/kernel_ab.py A A-copy --match winograd: 1.044 and 1.010 for the
 * 11 Winograds); after, all its big buffers were huge pages and the copies 0.992 and 0.968,
 * within the noise of such runs (issue 16, session 34; benchmarks/fusion_efficiency.py loads
 * the fused build second). Session 27 had tried this for the spread between processes, which
 * it did not narrow (docs/fusion.md). */
#define AFRT_HUGE_PAGE_ ((size_t)2 << 20)
#if defined(__linux__) && !defined(MADV_HUGEPAGE)
#define MADV_HUGEPAGE 14 /* Linux's values; <sys/mman.h> hides them in strict ISO C modes */
#define MADV_DONTNEED 4
int madvise(void *addr, size_t length, int advice);
#endif
/* ``bytes`` rounded up to whole huge pages where it is at least half of one (on Linux): for a
 * buffer used whole on every run (the arena), whose tail is then in a huge page too, for less
 * than 1 MiB more memory from 1 to 2 MiB and less than 2 MiB above (SqueezeNet-1.1's 1.9 MB
 * arena ~1% faster in one huge page). */
static inline size_t afrt_huge_round_(size_t bytes) {
#if defined(__linux__)
    if (bytes >= AFRT_HUGE_PAGE_ / 2) return (bytes + AFRT_HUGE_PAGE_ - 1) & ~(AFRT_HUGE_PAGE_ - 1);
#endif
    return bytes;
}

static inline void *afrt_alloc_big_(size_t bytes) {
    const size_t n = ((bytes + 63) / 64) * 64;
#if defined(__linux__)
    if (n >= AFRT_HUGE_PAGE_) {
        /* aligned_alloc wants a multiple of the alignment: that rounding is address space only */
        void *p = aligned_alloc(AFRT_HUGE_PAGE_, afrt_huge_round_(n));
        if (p) { /* advice only: either may fail, and the buffer is still good */
            (void)madvise(p, n & ~(AFRT_HUGE_PAGE_ - 1), MADV_DONTNEED);
            (void)madvise(p, n & ~(AFRT_HUGE_PAGE_ - 1), MADV_HUGEPAGE);
        }
        return p;
    }
#endif
    return aligned_alloc(64, n);
}

/* ---------------------------------------------------------------------------------------------
 * Epilogue callback.
 *
 * Called on each finished block of a row-major [rows, cols] output matrix while it is hot in
 * cache: batch index `batch`, rows [r0, r1), cols [c0, c1). `out` points at element (0, 0) of
 * batch `batch`'s matrix, so element (r, c) is out[r * ld + c]. Every output element is passed
 * to fn exactly once per library call, after its final value (including bias, alpha, beta) is
 * stored. fn may be called concurrently from several OpenMP threads on disjoint blocks, so it
 * must only write inside its block. fn == NULL means no epilogue.
 *
 *   conv (NCHW): rows = output channels K, cols = output positions OH*OW of image `batch`,
 *                ld = OH*OW.
 *   matmul:      rows = M, cols = N of batch item `batch`, ld = ldc.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    void (*fn)(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
               int64_t c1, int64_t ld);
    void *ctx;
} afrt_epilogue;

/* AFRT_WIDE_VEC: what the C printer puts on a generated function whose loops are bound by
 * arithmetic rather than memory: every epilogue (it runs on a piece of C the GEMM core has just
 * stored, still in L1) and every function calling af_expf / af_erff / af_tanhf (GELU's erf is
 * ~40 flops an element). With GCC and AVX-512 it vectorises them with 64-byte vectors:
 * -march=native alone tunes for 32-byte ones, and a GELU epilogue of Swin-Tiny's MLP then
 * cost 1.8 ms next to its 1.2 ms MatMul, 1.0 ms with 64-byte vectors (1 thread,
 * docs/runtime.md). Memory-bound loops keep the default (LayerNorm ran slower with a global
 * -mprefer-vector-width=512). Empty elsewhere (other compilers, other ISAs). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__) && defined(__x86_64__)
#define AFRT_WIDE_VEC __attribute__((target("prefer-vector-width=512")))
#else
#define AFRT_WIDE_VEC
#endif

/* A no-op epilogue, for calls that need none. */
static inline afrt_epilogue afrt_no_epilogue(void) {
    afrt_epilogue e = {NULL, NULL};
    return e;
}

/* ---------------------------------------------------------------------------------------------
 * The built-in clamp epilogue: out = min(max(out [+ res], lo), hi), NaN kept (each bound is
 * `(v > lo || v != v) ? v : lo`, then `(v < hi || v != v) ? v : hi`, as generated code does for
 * Relu, Clip and Max/Min with a constant); lo = -INFINITY / hi = INFINITY mean no bound.
 * Residual element (r, c) of batch item b is res[b * res_stride + r * res_ld + c] (res NULL: none,
 * res_stride 0: one residual for every batch item).
 *
 * {afrt_epi_clamp_fn, &desc} is an ordinary epilogue that every kernel may call. The GEMM core
 * (afrt_gemm_tile_, so 1x1 / im2col convs, fused conv chains and afrt_matmul_f32) recognises
 * the function and applies it to the accumulators in registers before their only store (with
 * AVX-512; on other ISAs to each micro-tile right after it is stored): Relu, Relu6 and
 * Add + Relu then cost a few instructions per 16 outputs instead of a pass over the tile.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    const float *res;
    int64_t res_stride, res_ld;
    float lo, hi;
} afrt_epi_clamp;

static inline float afrt_epi_clamp1_(float v, float lo, float hi) {
    v = (v > lo || v != v) ? v : lo;
    return (v < hi || v != v) ? v : hi;
}

/* Row r of batch item b of e's residual (res_ld apart), or NULL when it has none. */
static inline const float *afrt_epi_clamp_res_(const afrt_epi_clamp *e, int64_t b, int64_t r) {
    return e->res ? e->res + b * e->res_stride + r * e->res_ld : NULL;
}

/* One row of afrt_epi_clamp_rows_, each element's value before the residual given by X (of
 * y[c]): with the residual and both bounds, the residual and the lower bound, both bounds, the
 * lower bound alone (an infinite upper bound changes nothing: Relu, the Add alone). */
#define AFRT_EPI_CLAMP_ROW_(X)                                                                 \
    do {                                                                                       \
        if (z && up) {                                                                         \
            for (int64_t c = c0; c < c1; ++c) y[c] = afrt_epi_clamp1_((X) + z[c], lo, hi);     \
        } else if (z) {                                                                        \
            for (int64_t c = c0; c < c1; ++c) {                                                \
                const float v = (X) + z[c];                                                    \
                y[c] = (v > lo || v != v) ? v : lo;                                            \
            }                                                                                  \
        } else if (up) {                                                                       \
            for (int64_t c = c0; c < c1; ++c) y[c] = afrt_epi_clamp1_((X), lo, hi);            \
        } else {                                                                               \
            for (int64_t c = c0; c < c1; ++c) {                                                \
                const float v = (X);                                                           \
                y[c] = (v > lo || v != v) ? v : lo;                                            \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* The built-in clamp over rows [r0, r1) x [c0, c1) of out, each row's bias[r] added first
 * (bias NULL: none) in the same pass: each element's operations in the order of a bias pass
 * and then the epilogue, so the same bits (afrt_finish_block_ finishes a stored tile so). */
static inline void afrt_epi_clamp_rows_(const afrt_epi_clamp *e, const float *bias, float *out,
                                        int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                                        int64_t c1, int64_t ld) {
    const float lo = e->lo, hi = e->hi;
    const int up = hi != INFINITY;
    for (int64_t r = r0; r < r1; ++r) {
        float *restrict y = out + r * ld;
        const float *restrict z = afrt_epi_clamp_res_(e, batch, r);
        if (bias) {
            const float bv = bias[r];
            AFRT_EPI_CLAMP_ROW_(y[c] + bv);
        } else {
            AFRT_EPI_CLAMP_ROW_(y[c]);
        }
    }
}

static inline void afrt_epi_clamp_fn(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1,
                                     int64_t c0, int64_t c1, int64_t ld) {
    afrt_epi_clamp_rows_((const afrt_epi_clamp *)ctx, NULL, out, batch, r0, r1, c0, c1, ld);
}

/* The built-in clamp epilogue after a bias along the output's columns (a MatMul / Gemm's bias
 * over its last dimension): out = clamp(out + cbias[c] (+ res)), the operations and their
 * order of the generated Add (+ Add) (+ Relu / Clip) loop. The GEMM core applies it in its
 * registers (afrt_uk_epi_.cbias); every other kernel calls it as an ordinary epilogue. */
typedef struct {
    afrt_epi_clamp cl;
    const float *cbias; /* element c of the columns [c0, c1) of every row */
} afrt_epi_bias_clamp;

static inline void afrt_epi_bias_clamp_fn(void *ctx, float *out, int64_t batch, int64_t r0,
                                          int64_t r1, int64_t c0, int64_t c1, int64_t ld) {
    const afrt_epi_bias_clamp *e = (const afrt_epi_bias_clamp *)ctx;
    const float lo = e->cl.lo, hi = e->cl.hi;
    const float *restrict cb = e->cbias;
    for (int64_t r = r0; r < r1; ++r) {
        float *restrict y = out + r * ld;
        const float *restrict z =
            e->cl.res ? e->cl.res + batch * e->cl.res_stride + r * e->cl.res_ld : NULL;
        if (z) {
            for (int64_t c = c0; c < c1; ++c) y[c] = afrt_epi_clamp1_((y[c] + cb[c]) + z[c], lo, hi);
        } else {
            for (int64_t c = c0; c < c1; ++c) y[c] = afrt_epi_clamp1_(y[c] + cb[c], lo, hi);
        }
    }
}

/* The descriptor of the built-in clamp epilogue when epi is it, else NULL: kernels that know it
 * apply it to their values before the only store instead of calling it on the stored output. */
static inline const afrt_epi_clamp *afrt_epi_builtin_clamp_(afrt_epilogue epi) {
    return epi.fn == afrt_epi_clamp_fn ? (const afrt_epi_clamp *)epi.ctx : NULL;
}

/* dst[j] = clamp(src[j] (+ z[j])) for j < n (z NULL: no residual): afrt_epi_clamp_fn's
 * operations in its order, so storing this gives the bits that storing src and then calling
 * the epilogue on it gives. dst may equal src (element j is read before it is written).
 * AVX-512: 16 lanes at a time, the last piece masked. The Winograd output transform stores
 * rows of 14 or 28 outputs (14 x 14 and 28 x 28 maps) through here, which GCC's vectorised
 * loop left wholly or half to its scalar tail: ResNet-18's Winograd convs with their residual
 * added took 10-15% longer than the conv and the separate Add and Relu kernels together. */
static inline void afrt_epi_clamp_store_(float *dst, const float *src, const float *restrict z,
                                         int64_t n, float lo, float hi) {
#if defined(__AVX512F__)
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, src + j);
        if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, z + j));
        /* afrt_epi_clamp1_: !(v <= lo) keeps v (NaN too), then !(v >= hi) */
        v = _mm512_mask_mov_ps(vlo, _mm512_cmp_ps_mask(v, vlo, _CMP_NLE_UQ), v);
        v = _mm512_mask_mov_ps(vhi, _mm512_cmp_ps_mask(v, vhi, _CMP_NGE_UQ), v);
        _mm512_mask_storeu_ps(dst + j, m, v);
    }
#else
    if (z) {
        for (int64_t j = 0; j < n; ++j) dst[j] = afrt_epi_clamp1_(src[j] + z[j], lo, hi);
    } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = afrt_epi_clamp1_(src[j], lo, hi);
    }
#endif
}

/* Whether epi is the built-in clamp whose residual is the output itself (out, batch items
 * stride apart, rows ld apart): plan-buffers wrote the output over the residual it adds
 * (memory.residual_inplace). Only the GEMM core finishes every value before its only store
 * (afrt_gemm_tile_); afrt_conv2d_f32 and afrt_matmul_f32 give any other path a copy of the
 * residual (afrt_epi_detach_). */
static inline int afrt_epi_aliases_(afrt_epilogue epi, const float *out, int64_t stride,
                                    int64_t ld) {
    const afrt_epi_clamp *e = afrt_epi_builtin_clamp_(epi);
    return e && e->res == out && e->res_stride == stride && e->res_ld == ld;
}

/* epi reading a heap copy of its residual's first n floats (*copy, for the caller to free)
 * through *local; *copy is NULL if memory is short. */
static inline afrt_epilogue afrt_epi_detach_(afrt_epilogue epi, afrt_epi_clamp *local,
                                             float **copy, size_t n) {
    const afrt_epi_clamp *e = (const afrt_epi_clamp *)epi.ctx;
    *copy = (float *)afrt_malloc_(n * sizeof(float));
    if (!*copy) return epi;
    memcpy(*copy, e->res, n * sizeof(float));
    *local = *e;
    local->res = *copy;
    epi.ctx = local;
    return epi;
}

/* ---------------------------------------------------------------------------------------------
 * The built-in SiLU epilogue: out = out * sigmoid(out) (SiLU / Swish), or out = sigmoid(out)
 * when `gate` (an SE block's gate), sigmoid(v) = 1 / (1 + exp(-v)). No residual.
 *
 * exp(t) by range reduction (t = n ln2 + r, |r| <= ln2 / 2, ln2 in two parts) and a polynomial
 * of e^r (AVX-512: degree 5, near-minimax, 9e-8 relative, 2^n by scalef; AVX2: the degree-7
 * Taylor polynomial, < 6e-9, 2^n by the exponent bits);
 * the reciprocal by rcp14 plus one Newton step (AVX-512; exact for 1, so v * s = v for large v),
 * a division on AVX2 (its 12-bit rcp plus a Newton step missed 1 by an ulp). t = -v is clamped to
 * [-87, 87] so nothing overflows, and sigmoid(v) is 0 for v < -87: SiLU gives -0.0 there
 * (the exact value is below 2e-36 in magnitude) and NaN at v = -inf (-inf * 0, as the graph's
 * Mul(v, Sigmoid(v)), the generated loop and onnxruntime give), the gate 0; v = +inf gives +inf
 * (SiLU) / 1 (gate); NaN stays NaN. Max error against float64 over a dense sweep: docs/runtime.md (test_runtime_silu).
 *
 * {afrt_epi_silu_fn, &desc} is an ordinary epilogue (a vector loop over the stored block); the
 * AVX-512 GEMM core (1x1 / im2col convs, afrt_matmul_f32) applies it to its accumulators in
 * registers before their only store, as it does the clamp.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    int gate; /* 1: sigmoid(v) alone; 0: v * sigmoid(v) */
} afrt_epi_silu;

#define AFRT_SILU_LN2_HI 0.693145751953125f
#define AFRT_SILU_LN2_LO 1.428606765330187e-06f
#define AFRT_SILU_LOG2E 1.44269504088896341f
/* e^x ~ 1 + P1 x + ... + P5 x^5 on |x| <= ln2 / 2 (AVX-512; fitted in float64, Lawson) */
#define AFRT_SILU_P1 0.9999997019767761f
#define AFRT_SILU_P2 0.4999915063381195f
#define AFRT_SILU_P3 0.1666763573884964f
#define AFRT_SILU_P4 0.04189793020486832f
#define AFRT_SILU_P5 0.008290315046906471f

/* Scalar form (the portable loop and the tails of the AVX2 one). */
static inline float afrt_silu1_(float v, int gate) {
    if (v != v) return v;
    const float t = v > 87.0f ? -87.0f : v < -87.0f ? 87.0f : -v;
    const float s = v < -87.0f ? 0.0f : 1.0f / (1.0f + expf(t));
    return gate ? s : v * s;
}

#if defined(__AVX512F__) && !defined(AFRT_NEON_)
static inline __m512 afrt_silu16_(__m512 v, int gate) {
    /* exp(-u), u = min(v, 87) (min returns v when v is NaN): -u = n ln2 - r, r = u + n ln2,
     * exp(-u) = 2^n q(r), q(r) = p(-r) for p ~ e^x (degree 5, near-minimax on |x| <= ln2 / 2,
     * relative error 9e-8; the odd coefficients negated). 18 operations per 16 values. */
    const __m512 u = _mm512_min_ps(_mm512_set1_ps(87.0f), v);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(u, _mm512_set1_ps(-AFRT_SILU_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(AFRT_SILU_LN2_HI), u);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(AFRT_SILU_LN2_LO), r);
    __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(-AFRT_SILU_P5), r, _mm512_set1_ps(AFRT_SILU_P4));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-AFRT_SILU_P3));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(AFRT_SILU_P2));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-AFRT_SILU_P1));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f));
    /* v < -87: 2^n overflows and s is NaN or 0; it becomes 0 below (v = -inf: v * 0 = NaN) */
    const __m512 d = _mm512_add_ps(_mm512_scalef_ps(q, n), _mm512_set1_ps(1.0f));
    __m512 s = _mm512_rcp14_ps(d);
    s = _mm512_mul_ps(s, _mm512_fnmadd_ps(d, s, _mm512_set1_ps(2.0f)));
    s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ), s);
    return gate ? s : _mm512_mul_ps(v, s);
}
#elif defined(__AVX2__) && defined(__FMA__)
static inline __m256 afrt_silu8_(__m256 v, int gate) {
    const __m256 t = _mm256_min_ps(_mm256_set1_ps(87.0f),
                                   _mm256_max_ps(_mm256_set1_ps(-87.0f), _mm256_sub_ps(_mm256_setzero_ps(), v)));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(AFRT_SILU_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AFRT_SILU_LN2_HI), t);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AFRT_SILU_LN2_LO), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n from the exponent bits: n is in [-126, 126] (|t| <= 87); NaN lanes are masked below */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 d = _mm256_fmadd_ps(p, _mm256_castsi256_ps(e), _mm256_set1_ps(1.0f));
    const __m256 keep = _mm256_cmp_ps(v, _mm256_set1_ps(-87.0f), _CMP_NLT_UQ);
    const __m256 s = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d), keep);
    const __m256 y = gate ? s : _mm256_mul_ps(v, s);
    /* NaN v: its lane of y may not be NaN (the integer 2^n path), so v itself */
    return _mm256_blendv_ps(y, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}
#endif

/* y[j] = silu(y[j]) (or the gate) for j < n. */
static inline void afrt_silu_row_(float *y, int64_t n, int gate) {
    int64_t j = 0;
#if defined(__AVX512F__) && !defined(AFRT_NEON_)
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, afrt_silu16_(_mm512_loadu_ps(y + j), gate));
    if (j < n) {
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(y + j, m, afrt_silu16_(_mm512_maskz_loadu_ps(m, y + j), gate));
        j = n;
    }
#elif defined(__AVX2__) && defined(__FMA__)
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, afrt_silu8_(_mm256_loadu_ps(y + j), gate));
#endif
    for (; j < n; ++j) y[j] = afrt_silu1_(y[j], gate);
}

static inline void afrt_epi_silu_fn(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1,
                                    int64_t c0, int64_t c1, int64_t ld) {
    (void)batch;
    const int gate = ((const afrt_epi_silu *)ctx)->gate;
    /* whole rows are one run: an SE block's 1x1 gate conv has one column (ld 1), and a
     * vector per element, each a chain of ~25 dependent operations, cost 2.5x the scalar loop */
    if (c0 == 0 && c1 == ld) {
        afrt_silu_row_(out + r0 * ld, (r1 - r0) * ld, gate);
        return;
    }
    for (int64_t r = r0; r < r1; ++r) afrt_silu_row_(out + r * ld + c0, c1 - c0, gate);
}

/* The descriptor of the built-in SiLU epilogue when epi is it, else NULL. */
static inline const afrt_epi_silu *afrt_epi_builtin_silu_(afrt_epilogue epi) {
    return epi.fn == afrt_epi_silu_fn ? (const afrt_epi_silu *)epi.ctx : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The built-in GELU epilogue (erf form, a transformer MLP's fc1 + GELU): with y = out +
 * cbias[c] (a Linear layer's bias along the columns; none when cbias is NULL),
 * out = gelu(y) = 0.5 y (1 + erf(y / sqrt 2)), computed as 0.5 y + |y| r with r = erf(|y| /
 * sqrt 2) / 2: erf is odd, so y erf(y / sqrt 2) = |y| erf(|y| / sqrt 2), and the sign
 * handling, the add of 1 and one multiply of the generated loop (0.5 y (1 + af_erff(y /
 * sqrt 2))) fold into one FMA. r is a piecewise polynomial (AFRT_GELU_TAB, below) within 4e-8
 * of erf(a / sqrt 2) / 2, where af_erff's rational function is within 3.5e-7 / 2: -inf and NaN
 * give NaN as the generated loop does, large negative y +0.0 where it gives -0.0. The AVX-512
 * GEMM core adds the bias in its registers and runs the GELU there on half of each tile's rows,
 * over the other half right after their store (AFRT_UK_EPI_ROWS_ says why); every other
 * kernel and ISA calls {afrt_epi_gelu_fn, &desc} as an ordinary epilogue. Before, a generated
 * epilogue function ran the loop above over each finished block; benchmarks/gelu_epilogue.py
 * and docs/runtime.md, "Built-in GELU epilogue", have the figures.
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    const float *cbias; /* element c of the columns [c0, c1) of every row, or NULL */
} afrt_epi_gelu;

/* af_erff's coefficients (its rational function a P(a^2) / Q(a^2), highest degree first) and
 * clamp */
#define AFRT_ERF_P5 2.03476506e-06f
#define AFRT_ERF_P4 2.87474387e-04f
#define AFRT_ERF_P3 3.86812830e-03f
#define AFRT_ERF_P2 5.30598761e-02f
#define AFRT_ERF_P1 1.92759485e-01f
#define AFRT_ERF_P0 1.12837902e+00f
#define AFRT_ERF_Q5 3.80706872e-05f
#define AFRT_ERF_Q4 1.18806563e-03f
#define AFRT_ERF_Q3 1.51719020e-02f
#define AFRT_ERF_Q2 1.15082727e-01f
#define AFRT_ERF_Q1 5.04160314e-01f
#define AFRT_ERF_Q0 1.00000000e+00f
#define AFRT_ERF_CLAMP 3.92f

static inline float af_erff_rational_(float a); /* defined last, with af_erff */

/* The GELU's r(a) = erf(a / sqrt 2) / 2 for a = |y| >= 0, by pieces: u = min(a SCALE,
 * PIECES - 0.5), piece i = (int) u, t = u - i in [0, 1), r = sum_k AFRT_GELU_TAB[k][i] t^k
 * (Horner, FMAs). Pieces 0-30 cover [0, 3.92 sqrt 2] (af_erff's clamp), the last is the
 * constant 1/2 that every a past it takes (then 0.5 y + 0.5 |y| is exact: large positive y
 * gives y, large negative +0.0). The table is autofusion/runtime/gelu_table.py's least-squares fit
 * (`python -m autofusion.runtime.gelu_table` prints it; test_gelu_epilogue.py checks that it
 * is that one). On AVX-512 each coefficient is one two-register permute (vpermt2ps) by the
 * piece number: 17 operations per 16 values, 7 on the FMA pipes, where af_erff's degree
 * 5 / 5 rational function took 18 with 14 on the FMA pipes and a division (in a loop over L1,
 * 2.56 against 3.70 ns per 16 values; issue 16, session 24). */
#define AFRT_GELU_PIECES 32
#define AFRT_GELU_DEGREE 4
#define AFRT_GELU_SCALE 5.591915607452393f
static const float AFRT_GELU_TAB[AFRT_GELU_DEGREE + 1][AFRT_GELU_PIECES]
    __attribute__((aligned(64))) = {
    {3.489960543e-09f, 7.096424699e-02f, 1.397008151e-01f, 2.041896135e-01f,
     2.627938390e-01f, 3.143786490e-01f, 3.583593965e-01f, 3.946799338e-01f,
     4.237328172e-01f, 4.462428093e-01f, 4.631358683e-01f, 4.754156172e-01f,
     4.840617180e-01f, 4.899582565e-01f, 4.938533902e-01f, 4.963456690e-01f,
     4.978902936e-01f, 4.988175035e-01f, 4.993566573e-01f, 4.996603131e-01f,
     4.998259544e-01f, 4.999134839e-01f, 4.999582767e-01f, 4.999804795e-01f,
     4.999911487e-01f, 4.999960959e-01f, 4.999983311e-01f, 4.999993145e-01f,
     4.999997318e-01f, 4.999998808e-01f, 4.999999702e-01f, 5.000000000e-01f},
    {7.134251297e-02f, 7.021083683e-02f, 6.692236662e-02f, 6.178027019e-02f,
     5.523820966e-02f, 4.783444107e-02f, 4.011927173e-02f, 3.258941695e-02f,
     2.563960291e-02f, 1.953696273e-02f, 1.441829372e-02f, 1.030579768e-02f,
     7.134446409e-03f, 4.783543758e-03f, 3.106347052e-03f, 1.953713363e-03f,
     1.190096838e-03f, 7.021247293e-04f, 4.011960409e-04f, 2.220288152e-04f,
     1.190069452e-04f, 6.177964678e-05f, 3.106193981e-05f, 1.512591734e-05f,
     7.133862709e-06f, 3.258649031e-06f, 1.441650966e-06f, 6.177209002e-07f,
     2.563503756e-07f, 1.030350703e-07f, 4.010934163e-08f, 0.000000000e+00f},
    {1.402807129e-06f, -1.121470821e-03f, -2.139353426e-03f, -2.963247243e-03f,
     -3.533157753e-03f, -3.824877786e-03f, -3.849812318e-03f, -3.648601007e-03f,
     -3.280641744e-03f, -2.812241437e-03f, -2.305962378e-03f, -1.812957344e-03f,
     -1.369049540e-03f, -9.943156037e-04f, -6.952667609e-04f, -4.684427113e-04f,
     -3.043167817e-04f, -1.907190162e-04f, -1.153599223e-04f, -6.737074000e-05f,
     -3.799973274e-05f, -2.070618029e-05f, -1.090261230e-05f, -5.548297850e-06f,
     -2.729378821e-06f, -1.298104394e-06f, -5.969751555e-07f, -2.654948048e-07f,
     -1.141972348e-07f, -4.751126426e-08f, -1.912126280e-08f, 0.000000000e+00f},
    {-3.841953003e-04f, -3.656646586e-04f, -3.134446160e-04f, -2.355742472e-04f,
     -1.434928126e-04f, -4.971612361e-05f, 3.449748328e-05f, 1.009443076e-04f,
     1.453931327e-04f, 1.675567619e-04f, 1.703002490e-04f, 1.584218408e-04f,
     1.373719424e-04f, 1.121995956e-04f, 8.688357048e-05f, 6.406906323e-05f,
     4.513108797e-05f, 3.043793549e-05f, 1.968895594e-05f, 1.223172148e-05f,
     7.305991403e-06f, 4.199309387e-06f, 2.324325123e-06f, 1.239645599e-06f,
     6.373828114e-07f, 3.160773190e-07f, 1.512301111e-07f, 6.983535172e-08f,
     3.113344604e-08f, 1.340297917e-08f, 5.573054018e-09f, 0.000000000e+00f},
    {4.520914445e-06f, 1.285561666e-05f, 1.922216325e-05f, 2.277695603e-05f,
     2.324538036e-05f, 2.092710019e-05f, 1.656684253e-05f, 1.114005863e-05f,
     5.620525826e-06f, 7.913897662e-07f, -2.862178690e-06f, -5.170695204e-06f,
     -6.226283858e-06f, -6.288973054e-06f, -5.686791610e-06f, -4.734564754e-06f,
     -3.683507430e-06f, -2.701894118e-06f, -1.879365755e-06f, -1.244594841e-06f,
     -7.870051490e-07f, -4.762181902e-07f, -2.762134841e-07f, -1.537707135e-07f,
     -8.225458714e-08f, -4.231445416e-08f, -2.094978946e-08f, -9.988547767e-09f,
     -4.588679214e-09f, -2.032041424e-09f, -8.677798480e-10f, 0.000000000e+00f}};

/* Scalar form (the portable loop and other ISAs): the same operations as afrt_gelu16_. */
static inline float afrt_gelu1_(float y) {
    const float ay = fabsf(y), s = ay * AFRT_GELU_SCALE;
    /* compares false for NaN: the last piece, and NaN runs through y */
    const float u = s < AFRT_GELU_PIECES - 0.5f ? s : AFRT_GELU_PIECES - 0.5f;
    const int i = (int)u;
    const float t = u - (float)i;
    float p = AFRT_GELU_TAB[AFRT_GELU_DEGREE][i];
    for (int k = AFRT_GELU_DEGREE - 1; k >= 0; --k) p = fmaf(p, t, AFRT_GELU_TAB[k][i]);
    return fmaf(ay, p, 0.5f * y);
}

#if defined(__AVX512F__) && !defined(AFRT_NEON_)
/* 17 operations per 16 values; min returns its second operand when either is NaN, so the
 * constant comes first and NaN runs through (its piece number is cvtt's 0x80000000: piece 0,
 * t NaN). */
static inline __m512 afrt_gelu16_(__m512 y) {
#define AFRT_GELU_C_(K, I)                                                                     \
    _mm512_permutex2var_ps(_mm512_load_ps(AFRT_GELU_TAB[K]), I,                               \
                           _mm512_load_ps(AFRT_GELU_TAB[K] + 16))
    const __m512 ay = _mm512_andnot_ps(_mm512_set1_ps(-0.0f), y);
    const __m512 u = _mm512_min_ps(_mm512_set1_ps(AFRT_GELU_PIECES - 0.5f),
                                   _mm512_mul_ps(ay, _mm512_set1_ps(AFRT_GELU_SCALE)));
    const __m512i i = _mm512_cvttps_epi32(u);
    const __m512 t = _mm512_sub_ps(u, _mm512_cvtepi32_ps(i));
    __m512 p = _mm512_fmadd_ps(AFRT_GELU_C_(4, i), t, AFRT_GELU_C_(3, i));
    p = _mm512_fmadd_ps(p, t, AFRT_GELU_C_(2, i));
    p = _mm512_fmadd_ps(p, t, AFRT_GELU_C_(1, i));
    p = _mm512_fmadd_ps(p, t, AFRT_GELU_C_(0, i));
#undef AFRT_GELU_C_
    return _mm512_fmadd_ps(ay, p, _mm512_mul_ps(_mm512_set1_ps(0.5f), y));
}
#endif

/* y[j] = gelu(y[j] + cb[j]) for j < n (cb NULL: no bias). */
static inline void afrt_gelu_row_(float *y, const float *cb, int64_t n) {
    int64_t j = 0;
#if defined(__AVX512F__) && !defined(AFRT_NEON_)
    for (; j < n; j += 16) {
        const __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, y + j);
        if (cb) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, cb + j));
        _mm512_mask_storeu_ps(y + j, m, afrt_gelu16_(v));
    }
#endif
    for (; j < n; ++j) y[j] = afrt_gelu1_(cb ? y[j] + cb[j] : y[j]);
}

static inline void afrt_epi_gelu_fn(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1,
                                    int64_t c0, int64_t c1, int64_t ld) {
    (void)batch;
    const float *cb = ((const afrt_epi_gelu *)ctx)->cbias;
    if (!cb && c0 == 0 && c1 == ld) { /* whole rows: one run */
        afrt_gelu_row_(out + r0 * ld, NULL, (r1 - r0) * ld);
        return;
    }
    for (int64_t r = r0; r < r1; ++r) afrt_gelu_row_(out + r * ld + c0, cb ? cb + c0 : NULL, c1 - c0);
}

/* The descriptor of the built-in GELU epilogue when epi is it, else NULL. */
static inline const afrt_epi_gelu *afrt_epi_builtin_gelu_(afrt_epilogue epi) {
    return epi.fn == afrt_epi_gelu_fn ? (const afrt_epi_gelu *)epi.ctx : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Threads and strategy.
 * ------------------------------------------------------------------------------------------- */
enum {
    AFRT_GEMM_TILED = 0, /* OpenMP over output tiles, 1-thread OpenBLAS sgemm per tile */
    AFRT_GEMM_WHOLE = 1, /* one OpenBLAS-threaded sgemm per matrix, then an epilogue pass */
    AFRT_GEMM_OWN = 2    /* default: afrt's packed-panel core, OpenMP tiles, cached weights */
};

static int afrt_num_threads_ = 1;
static int afrt_gemm_strategy_ = AFRT_GEMM_OWN;
static int afrt_threads_applied_ = 0;

/* ---------------------------------------------------------------------------------------------
 * Threads under contention.
 *
 * Every parallel loop is an OpenMP region with static shares and a closing barrier: the
 * caller cannot finish a region before every worker has run its share. When another process
 * holds a core, a worker the scheduler has not run yet delays each of a model's 50-300
 * regions by ~110 us to a few ms; two threads then ran MobileNet-V2 9-27x slower than one
 * (docs/runtime.md, "Threads on a busy machine"). So the runtime watches how late the
 * workers start. afrt_threads_now() is every region's num_threads: it judges the previous
 * region (each thread stamps its arrival, afrt_arrive_, at the top of the loop body), and
 * when a worker started more than afrt_lag_limit_ seconds after the caller entered the
 * region and waited longer than it then worked (two threads then lose to one), later
 * regions use only the threads that were on time (at least the caller). A
 * probe region with all afrt_num_threads_ threads follows after a wait that doubles while
 * probes find late workers (AFRT_PROBE_MIN_MS .. AFRT_PROBE_MAX_MS) and starts again from
 * the minimum once the threads have kept time for a while; a probe whose workers are on time
 * restores the full count. Work is still split for afrt_num_threads_ threads (tiles, scratch
 * indexed by omp_get_thread_num()), so outputs do not depend on how many threads ran.
 * Concurrent runs of one library on several caller threads share this estimate.
 * ------------------------------------------------------------------------------------------- */
#ifndef AFRT_LAG_LIMIT_US
#define AFRT_LAG_LIMIT_US 50.0
#endif
#ifndef AFRT_PROBE_MIN_MS
#define AFRT_PROBE_MIN_MS 5.0
#endif
#ifndef AFRT_PROBE_MAX_MS
#define AFRT_PROBE_MAX_MS 320.0
#endif
#define AFRT_TRACKED_THREADS_ 64

typedef struct {
    int epoch;
    double at;
    char pad_[48]; /* one cache line per thread */
} afrt_arrival_;

static afrt_arrival_ afrt_arrivals_[AFRT_TRACKED_THREADS_];
static int afrt_threads_cur_ = 1;        /* threads the next region uses, 1..afrt_num_threads_ */
static double afrt_lag_limit_ = AFRT_LAG_LIMIT_US * 1e-6;
static int afrt_epoch_;                  /* bumped per region */
static double afrt_region_t0_;           /* when the caller entered it */
static int afrt_region_team_;            /* its team size (thread 0 records it), 0: unknown */
static double afrt_probe_at_;            /* no probe with the full count before this time */
static double afrt_probe_wait_;          /* the wait after the last cut */
static double afrt_last_cut_ = -1e30;    /* when threads were last found late */
static long long afrt_cuts_;             /* regions that found late workers, for tests */
static int afrt_late_streak_;            /* regions in a row that found late workers */

/* Called first in every iteration of a parallel loop; does work once per thread and region. */
static inline void afrt_arrive_(void) {
#ifdef _OPENMP
    const int tid = omp_get_thread_num();
    if (tid >= AFRT_TRACKED_THREADS_ || afrt_arrivals_[tid].epoch == afrt_epoch_) return;
    afrt_arrivals_[tid].epoch = afrt_epoch_;
    if (tid == 0)
        afrt_region_team_ = omp_get_num_threads();
    else
        afrt_arrivals_[tid].at = omp_get_wtime();
#endif
}

/* The last region's verdict: cut the thread count to the workers that were on time, or
 * restore it after a probe that found them all on time. */
static inline void afrt_judge_region_(double now) {
    const int team = afrt_region_team_;
    afrt_region_team_ = 0;
    if (team < 2) return; /* serial (its `if` was false) or never entered */
    int late = 0;
    for (int t = 1; t < team && t < AFRT_TRACKED_THREADS_; ++t) {
        if (afrt_arrivals_[t].epoch != afrt_epoch_) continue; /* had no iteration */
        /* Late: it started over the limit after the caller and spent less time working
         * than waiting to start (with two threads, one thread alone is then faster). */
        const double lag = afrt_arrivals_[t].at - afrt_region_t0_;
        if (afrt_lag_limit_ < 0.0 || (lag > afrt_lag_limit_ && lag > now - afrt_arrivals_[t].at))
            ++late;
    }
    /* One late region is not contention: a worker that went to sleep during a serial
     * stretch (libgomp stops spinning after a while) also starts 50-150 us late, and a probe
     * after a cut always wakes a sleeping worker. Counting those cut BERT-base's two threads
     * to one on a quiet machine, and every probe cut them again (133-143 ms against 75). So
     * only a second late region in a row cuts; a worker then spinning is on time. */
    afrt_late_streak_ = afrt_lag_limit_ < 0.0 ? 2 : late ? afrt_late_streak_ + 1 : 0;
    if (late && afrt_late_streak_ < 2) return;
    if (late) {
        const double lo = AFRT_PROBE_MIN_MS * 1e-3, hi = AFRT_PROBE_MAX_MS * 1e-3;
        const double w = 2.0 * afrt_probe_wait_;
        afrt_probe_wait_ = now - afrt_last_cut_ > 4.0 * hi || w < lo ? lo : w > hi ? hi : w;
        afrt_last_cut_ = now;
        afrt_probe_at_ = now + afrt_probe_wait_;
        afrt_threads_cur_ = team - late;
        ++afrt_cuts_;
    } else if (team > afrt_threads_cur_) {
        afrt_threads_cur_ = team;
    }
}

/* The thread count of a region starting at time `now` (seconds, omp_get_wtime's clock):
 * judges the last region, then starts a new epoch. Tests drive it with made-up times. */
static inline int afrt_threads_at_(double now) {
    if (afrt_num_threads_ <= 1) return 1;
    afrt_judge_region_(now);
    int n = afrt_threads_cur_;
    if (n < afrt_num_threads_ && now >= afrt_probe_at_) n = afrt_num_threads_;
    afrt_region_t0_ = now;
    ++afrt_epoch_;
    return n;
}

/* The thread count of the region about to start (every num_threads clause calls it). */
static inline int afrt_threads_now(void) {
#ifdef _OPENMP
    return afrt_threads_at_(omp_get_wtime());
#else
    return afrt_num_threads_;
#endif
}

/* The threads parallel regions use now (a probe region may use all afrt_num_threads_). */
static inline int afrt_threads_active(void) { return afrt_threads_cur_; }

/* How late (microseconds after the caller) a worker may start a region before later regions
 * run without it (default AFRT_LAG_LIMIT_US); a negative value counts every worker of every
 * region as late (a test hook for the contended path), a huge one never cuts. */
static inline void afrt_set_thread_lag_us(double us) { afrt_lag_limit_ = us * 1e-6; }

/* A new thread count (afrt_set_num_threads): all of them, no probe pending. */
static inline void afrt_threads_reset_(void) {
    afrt_threads_cur_ = afrt_num_threads_;
    afrt_probe_wait_ = 0.0;
    afrt_probe_at_ = 0.0;
    afrt_last_cut_ = -1e30;
    afrt_region_team_ = 0;
    afrt_late_streak_ = 0;
}

static inline void afrt_apply_threads_(void) {
    afrt_threads_applied_ = 1;
#ifdef AFRT_OPENBLAS
    scipy_openblas_set_num_threads(afrt_gemm_strategy_ == AFRT_GEMM_WHOLE ? afrt_num_threads_ : 1);
#endif
#ifdef _OPENMP
    omp_set_num_threads(afrt_num_threads_);
#endif
}

/* Use n threads (n <= 0: all cores) for every later call: OpenMP for tiles and elementwise
 * work, and OpenBLAS's threads under AFRT_GEMM_WHOLE. af_create calls this first. */
static inline void afrt_set_num_threads(int n) {
    if (n <= 0) {
#ifdef _OPENMP
        n = omp_get_num_procs();
#else
        n = 1;
#endif
    }
    afrt_num_threads_ = n;
    afrt_threads_reset_();
    afrt_apply_threads_();
}

static inline int afrt_get_num_threads(void) { return afrt_num_threads_; }

/* AFRT_GEMM_OWN (default), AFRT_GEMM_TILED or AFRT_GEMM_WHOLE; for benchmarks. */
static inline void afrt_set_gemm_strategy(int strategy) {
    afrt_gemm_strategy_ = (strategy == AFRT_GEMM_WHOLE || strategy == AFRT_GEMM_TILED)
                              ? strategy : AFRT_GEMM_OWN;
    afrt_apply_threads_();
}

/* Bytes of the working set a tile may use (the L2 of one core here is 2 MiB). */
#ifndef AFRT_TILE_BYTES
#define AFRT_TILE_BYTES (1536 * 1024)
#endif

/* Every entry point calls this: a model that never set a thread count runs on one thread
 * with OpenBLAS configured to match (its own default would be all cores). */
static inline void afrt_init_once_(void) {
    if (!afrt_threads_applied_) afrt_apply_threads_();
}

/* Whether a call with this many multiply-adds is worth waking the other threads for (a
 * parallel region costs microseconds; tiny layers run faster on the calling thread). The
 * figure is GEMM multiply-adds; loops that run several times slower per element pass their
 * count scaled: depthwise convolution by AFRT_SLOW_WORK, pooling through afrt_pool_work_. */
#ifndef AFRT_PARALLEL_MIN_WORK
#define AFRT_PARALLEL_MIN_WORK 524288.0
#endif
static inline int afrt_worth_threads_(double work) { return work >= AFRT_PARALLEL_MIN_WORK; }
/* Depthwise convolution does ~10 GFLOP/s a core against ~150-200 for the GEMM core: one of
 * its taps costs about 8 GEMM multiply-adds of time. */
#ifndef AFRT_SLOW_WORK
#define AFRT_SLOW_WORK 8.0
#endif
/* Packing one element of A (~0.3 ns: a 128 x 768 A in 30 us) costs about 32 GEMM
 * multiply-adds of time, so a pack of >= 16k elements goes parallel. */
#ifndef AFRT_PACK_WORK
#define AFRT_PACK_WORK 32.0
#endif

static inline int64_t afrt_min_(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t afrt_max_(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t afrt_cdiv_(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* First/last+1 window taps k in [0, taps) with 0 <= o*stride - pad + k*dil < size. */
static inline void afrt_tap_range_(int64_t o, int64_t stride, int64_t pad, int64_t dil,
                                   int64_t taps, int64_t size, int64_t *lo, int64_t *hi) {
    const int64_t i0 = o * stride - pad;
    int64_t a = i0 >= 0 ? 0 : afrt_cdiv_(-i0, dil);
    int64_t b = size - 1 - i0 < 0 ? 0 : (size - 1 - i0) / dil + 1;
    if (b > taps) b = taps;
    if (a > b) a = b;
    *lo = a;
    *hi = b;
}


#ifndef AFRT_OPENBLAS
static inline void afrt_sgemm_own_(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                                   const float *a, int64_t lda, const float *b, int64_t ldb,
                                   float beta, float *c, int64_t ldc);
#endif

/* One single-threaded C = alpha * op(A) @ op(B) + beta * C (row-major; beta == 0: C is
 * write-only): OpenBLAS with -DAFRT_OPENBLAS, else afrt's own core. */
static inline void afrt_sgemm_(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                               const float *a, int64_t lda, const float *b, int64_t ldb,
                               float beta, float *c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) { /* C = beta * C, explicitly */
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return;
    }
#ifndef AFRT_OPENBLAS
    afrt_sgemm_own_(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
    scipy_cblas_sgemm(AFRT_CBLAS_ROW_MAJOR, ta ? AFRT_CBLAS_TRANS : AFRT_CBLAS_NO_TRANS,
                      tb ? AFRT_CBLAS_TRANS : AFRT_CBLAS_NO_TRANS, (int)m, (int)n, (int)k, alpha,
                      a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
#endif
}

/* Adds bias[r] to rows [r0, r1) x cols [c0, c1) of out (ld) and runs the epilogue there.
 * With the built-in clamp the bias, the residual and the clamp are one pass, each element's
 * operations in the same order as the two passes (so the same bits): where the GEMM finishes
 * its tiles after their store (every tile without AVX-512, the edge tiles with it), the fused
 * conv's Relu was a second pass over each tile the unfused conv's bias alone did not make
 * (ResNet-50 in an x86-64-v3 build: its 1x1 convs kept ~0.7 ms of R 1.4). */
static inline void afrt_finish_block_(float *out, const float *bias, int64_t batch, int64_t r0,
                                      int64_t r1, int64_t c0, int64_t c1, int64_t ld,
                                      afrt_epilogue epi) {
    if (bias && epi.fn == afrt_epi_clamp_fn) {
        afrt_epi_clamp_rows_((const afrt_epi_clamp *)epi.ctx, bias, out, batch, r0, r1, c0, c1, ld);
        return;
    }
    if (bias) {
        for (int64_t r = r0; r < r1; ++r) {
            float *row = out + r * ld;
            const float bv = bias[r];
            for (int64_t c = c0; c < c1; ++c) row[c] += bv;
        }
    }
    if (epi.fn) epi.fn(epi.ctx, out, batch, r0, r1, c0, c1, ld);
}

/* ---------------------------------------------------------------------------------------------
 * Thread-local scratch: grow-only, 64-byte aligned buffers owned by the calling thread and
 * reused across calls, so hot loops never pay malloc + page faults. Slot 0 is used by the
 * library itself (packing buffers, afrt_conv2d_f32 with scratch == NULL); slots 2 and 3 are
 * free for generated code. A buffer stays valid until the next call with the same slot on the same thread.
 * Returns NULL if the allocation fails.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_SCRATCH_SLOTS 16 /* 4, 5: afrt_sgemm_ without OpenBLAS; 6-8: 16-bit core; 9, 10: gemm_1x1_t; 11: strided 1x1 conv; 12: in-place partial sums; 13: a conv's shared packed B or Winograd's shared V; 14: the second part of a small-map conv chain (afrt_cc_ksplit_run_); 15: the conv rows of afrt_scb_maxpool_f32 */
static AFRT_THREAD_LOCAL void *afrt_tls_buf_[AFRT_SCRATCH_SLOTS];
static AFRT_THREAD_LOCAL size_t afrt_tls_cap_[AFRT_SCRATCH_SLOTS];

static inline void *afrt_thread_scratch(int slot, size_t bytes) {
    if (slot < 0 || slot >= AFRT_SCRATCH_SLOTS) return NULL;
    if (bytes > afrt_tls_cap_[slot]) {
        free(afrt_tls_buf_[slot]);
        const size_t cap = ((bytes + bytes / 4 + 63) / 64) * 64;
        afrt_tls_buf_[slot] = afrt_aligned_alloc_(cap);
        afrt_tls_cap_[slot] = afrt_tls_buf_[slot] ? cap : 0;
    }
    return afrt_tls_buf_[slot];
}

/* Frees this thread's scratch buffers (optional; e.g. from af_destroy). */
/* (Slot 1 holds per-call packed copies of non-constant GEMM operands.) */
static inline void afrt_free_thread_scratch(void) {
    for (int i = 0; i < AFRT_SCRATCH_SLOTS; ++i) {
        free(afrt_tls_buf_[i]);
        afrt_tls_buf_[i] = NULL;
        afrt_tls_cap_[i] = 0;
    }
}

/* Splits [0, total) into blocks of `blk` (last one shorter). */
static inline int64_t afrt_nblocks_(int64_t total, int64_t blk) {
    return total <= 0 ? 0 : afrt_cdiv_(total, blk);
}

/* ---------------------------------------------------------------------------------------------
 * Constant regions and the packed-operand cache.
 *
 * Generated code registers its weights blob once (af_create) with
 * afrt_register_constant_region and unregisters it before freeing (af_destroy). A GEMM or
 * conv operand lying entirely inside a registered region is immutable, so the runtime packs it
 * once into the GEMM core's panel layout and reuses the packed copy on every later call
 * (keyed by address, shape and layout; entries die with their region). Operands outside any
 * region are packed per call, which is always correct. Registration is guarded by an OpenMP
 * critical section (built with -fopenmp) so models on different threads may register.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_MAX_CONST_REGIONS 64
#define AFRT_MAX_PACKED 4096

typedef struct {
    const char *base;
    size_t bytes;
} afrt_region_;

typedef struct {
    const void *src;  /* original operand */
    int64_t rows, cols, ld;
    int trans, side;  /* side 0: packed as A panels, 1: packed as B panels; others below */
    int lp;           /* 0: fp32 panels; AFRT_LP_F16 / AFRT_LP_BF16: 16-bit panels */
    void *packed;
    const void *src2; /* side 6 (afrt_packed_pair_): the second operand joined to src */
} afrt_packed_entry_;

static afrt_region_ afrt_regions_[AFRT_MAX_CONST_REGIONS];
static int afrt_n_regions_ = 0;
static afrt_packed_entry_ afrt_packed_[AFRT_MAX_PACKED];
static int afrt_n_packed_ = 0;

static inline void afrt_register_constant_region(const void *base, size_t bytes) {
    AFRT_OMP(critical(afrt_cache))
    {
        if (base && bytes && afrt_n_regions_ < AFRT_MAX_CONST_REGIONS) {
            afrt_regions_[afrt_n_regions_].base = (const char *)base;
            afrt_regions_[afrt_n_regions_].bytes = bytes;
            ++afrt_n_regions_;
        }
    }
}

/* Forgets the region starting at base and frees every packed copy made from it. */
static inline void afrt_unregister_constant_region(const void *base) {
    AFRT_OMP(critical(afrt_cache))
    {
        for (int i = 0; i < afrt_n_regions_; ++i) {
            if (afrt_regions_[i].base != (const char *)base) continue;
            const char *lo = afrt_regions_[i].base, *hi = lo + afrt_regions_[i].bytes;
            int w = 0;
            for (int e = 0; e < afrt_n_packed_; ++e) {
                const char *s = (const char *)afrt_packed_[e].src;
                const char *s2 = (const char *)afrt_packed_[e].src2;
                if ((s >= lo && s < hi) || (s2 && s2 >= lo && s2 < hi)) free(afrt_packed_[e].packed);
                else afrt_packed_[w++] = afrt_packed_[e];
            }
            afrt_n_packed_ = w;
            afrt_regions_[i] = afrt_regions_[--afrt_n_regions_];
            break;
        }
    }
}

static inline int afrt_in_region_(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    for (int i = 0; i < afrt_n_regions_; ++i)
        if (c >= afrt_regions_[i].base && c + bytes <= afrt_regions_[i].base + afrt_regions_[i].bytes)
            return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * GEMM core: C[M x N] = op(A) @ op(B) on packed panels, MR x NR register tiles.
 *
 * Packed A (M x K): for each k block of AFRT_KC, ceil(M/MR) panels of [kc][MR] floats
 *   (k-major, rows past M are zero); block pc starts at pc * Mp (Mp = M rounded up to MR),
 *   panel ic at + ic * kc.
 * Packed B (K x N): for each k block, ceil(N/NR) panels of [kc][NR] (columns past N zero);
 *   block pc starts at pc * Np, the panel of columns j.. at + j * kc.
 * Direct A (AVX-512, afrt_gemm_direct_a_): a row-major, non-constant A is not packed; the
 *   micro-kernel reads MR rows lda apart (afrt_gemm_tile_a_).
 * Measured on this machine (AVX-512, one core): ~190 GFLOP/s on ResNet/BERT shapes with warm
 * panels, against ~137 for OpenBLAS sgemm; see docs/runtime.md.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_MR 12 /* the largest row tile */
#define AFRT_NR 32
#ifndef AFRT_KC
#define AFRT_KC 256
#endif
#ifndef AFRT_NC
#define AFRT_NC 512
#endif

/* Software prefetch distance of the micro-kernel, in k steps. Weights stream from DRAM (a
 * model's packed weights do not stay in cache between runs) and the packed panels are read
 * sequentially and run on into the next panel, so prefetching this far ahead covers DRAM
 * latency: a cold-weight 512x49x4608 GEMM went from 2.35 to 1.65 ms on one core. */
#ifndef AFRT_PF_K
#define AFRT_PF_K 32
#endif
#ifndef AFRT_PF_HINT
#define AFRT_PF_HINT _MM_HINT_T0
#endif
/* The address OFF floats (AFRT_PF_ADDR) or OFF bytes (AFRT_PF_ADDR_BYTES) past P, computed
 * as an integer: near the end of the packed buffer it lies past the array, where forming it
 * by pointer arithmetic would be undefined behaviour (a prefetch itself never faults). Same
 * instructions as `P + OFF`. */
#define AFRT_PF_ADDR_BYTES(P, OFF) ((const char *)((uintptr_t)(P) + (uintptr_t)(OFF)))
#define AFRT_PF_ADDR(P, OFF) AFRT_PF_ADDR_BYTES(P, (uintptr_t)(OFF) * sizeof(float))

/* c[mr x NR] (ldc) = (acc ? c : 0) + a_panel @ b_panel over kc; one function per mr. */
#if defined(__AVX512F__)
/* The parts the AVX-512 micro-kernels share (fp32 here, 16-bit in the lp core below): an
 * MRV x 32 tile of accumulators c0/c1, one rank-1 update from the MRV floats at AROW, and the
 * tile's accumulate-or-store into c (ldc, acc). B's load (and widening) is each kernel's own. */
/* The zeroing loop is unrolled before GCC's loop distribution sees it: as a loop it became a
 * memset of the accumulator arrays on the stack at every call (-O3), kept beside the registers
 * that hold them: ~3% of a 64 -> 256 1x1 conv on 56x56 with its Relu (perf, issue 16). */
#define AFRT_UK_ZMM_ZERO_(MRV)                                                                 \
    __m512 c0[MRV], c1[MRV];                                                                   \
    _Pragma("GCC unroll 16") for (int i = 0; i < MRV; ++i) {                                   \
        c0[i] = _mm512_setzero_ps();                                                           \
        c1[i] = _mm512_setzero_ps();                                                           \
    }                                                                                          \
    (void)0
#define AFRT_UK_ZMM_RANK1_(MRV, AROW, B0, B1)                                                  \
    for (int i = 0; i < MRV; ++i) {                                                            \
        const __m512 ai = _mm512_set1_ps((AROW)[i]);                                           \
        c0[i] = _mm512_fmadd_ps(ai, B0, c0[i]);                                                \
        c1[i] = _mm512_fmadd_ps(ai, B1, c1[i]);                                                \
    }                                                                                          \
    (void)0
/* Row I of the tile plus what c already holds there (CI), when accumulating (acc). */
#define AFRT_UK_ZMM_ACC_(I, CI)                                                                \
    if (acc) {                                                                                 \
        c0[I] = _mm512_add_ps(c0[I], _mm512_loadu_ps(CI));                                     \
        c1[I] = _mm512_add_ps(c1[I], _mm512_loadu_ps((CI) + 16));                              \
    }                                                                                          \
    (void)0
#define AFRT_UK_ZMM_STORE_(MRV)                                                                \
    for (int i = 0; i < MRV; ++i) {                                                            \
        float *ci = c + i * ldc;                                                               \
        AFRT_UK_ZMM_ACC_(i, ci);                                                               \
        _mm512_storeu_ps(ci, c0[i]);                                                           \
        _mm512_storeu_ps(ci + 16, c1[i]);                                                      \
    }                                                                                          \
    (void)0
/* The k loops run steps [K0, K1) (consecutive ranges: the packed kernel's a and b, and the
 * direct-A kernel's b, advance step by step), the whole loop [0, kc) (KLOOP_). */
#define AFRT_UK_ZMM_KLOOP_(MRV) AFRT_UK_ZMM_KLOOP_R_(MRV, 0, kc)
#define AFRT_UK_ZMM_KLOOP_R_(MRV, K0, K1)                                                      \
    for (int64_t k = (K0); k < (K1); ++k) {                                                    \
        _mm_prefetch(AFRT_PF_ADDR(a, MRV * AFRT_PF_K), AFRT_PF_HINT);                          \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), AFRT_PF_HINT);                      \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K + 16), AFRT_PF_HINT);                 \
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);                    \
        AFRT_UK_ZMM_RANK1_(MRV, a, b0, b1);                                                    \
        a += MRV;                                                                              \
        b += AFRT_NR;                                                                          \
    }                                                                                          \
    (void)0
/* The same k loop reading A unpacked: row i of the tile at a + i * lda (row-major op(A), k
 * contiguous), so a GEMM whose A panels would serve few B panels skips packing A
 * (afrt_gemm_direct_a_). The rows are 12 sequential streams the hardware prefetcher follows;
 * the tile's kc x MRV block of A stays in L1 for the next column panels. Each k step also
 * prefetches into L2 one address of the tile's share of the next packed B block, pf + k * pfs
 * bytes (afrt_next_b_; pfs = 0 with pf = b when there is none): a model's weights come from
 * DRAM, and without it the first row tile of every (k block, column block) waited on them. */
#define AFRT_UK_ZMM_KLOOP_RA_(MRV) AFRT_UK_ZMM_KLOOP_RA_R_(MRV, 0, kc)
#define AFRT_UK_ZMM_KLOOP_RA_R_(MRV, K0, K1)                                                   \
    for (int64_t k = (K0); k < (K1); ++k) {                                                    \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), AFRT_PF_HINT);                      \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K + 16), AFRT_PF_HINT);                 \
        _mm_prefetch(AFRT_PF_ADDR_BYTES(pf, k * pfs), _MM_HINT_T1);                             \
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);                    \
        for (int i = 0; i < MRV; ++i) {                                                        \
            const __m512 ai = _mm512_set1_ps(a[i * lda + k]);                                  \
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);                                            \
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);                                            \
        }                                                                                      \
        b += AFRT_NR;                                                                          \
    }                                                                                          \
    (void)0
/* A's parameters: packed panel ([kc][MRV]) or unpacked rows (lda apart) */
#define AFRT_UK_A_PACKED_ const float *restrict a
#define AFRT_UK_A_ROWS_ const float *restrict a, int64_t lda
/* unpacked rows, and where each k step prefetches (AFRT_UK_ZMM_KLOOP_RA_) */
#define AFRT_UK_A_ROWS_PF_ const float *restrict a, int64_t lda, const char *pf, int64_t pfs
#define AFRT_DEFINE_UKERNEL_(NAME, MRV, APARAMS, KLOOP)                                        \
    static inline void NAME(int64_t kc, APARAMS, const float *restrict b, float *restrict c,   \
                            int64_t ldc, int acc) {                                            \
        AFRT_UK_ZMM_ZERO_(MRV);                                                                \
        KLOOP(MRV);                                                                            \
        AFRT_UK_ZMM_STORE_(MRV);                                                               \
    }
#define AFRT_DEFINE_UKERNEL(NAME, MRV)                                                         \
    AFRT_DEFINE_UKERNEL_(NAME, MRV, AFRT_UK_A_PACKED_, AFRT_UK_ZMM_KLOOP_)
AFRT_DEFINE_UKERNEL_(afrt_ukernel12_ra_, 12, AFRT_UK_A_ROWS_PF_, AFRT_UK_ZMM_KLOOP_RA_)
/* The same kernel finishing the tile before its store (afrt_epi_clamp in registers): v =
 * clamp(((acc ? s : 0) + a @ b) * alpha + bias[i] (+ res)), with alpha, bias and res as in
 * afrt_tile_finish_ and the order of operations of the plain kernel plus afrt_finish_block_.
 * s (row i at s + i * lds) holds the partial sums: c itself, or the in-place scratch, where c
 * is the residual and must keep it until this only store (afrt_gemm_tile_). */
typedef struct {
    float alpha, lo, hi;
    const float *bias;  /* MRV rows, or NULL */
    const float *res;   /* row i at res + i * res_ld, or NULL */
    int64_t res_ld;
    int act;            /* then 1: SiLU, 2: sigmoid (afrt_epi_silu), 3: GELU (afrt_epi_gelu);
                         * 0: nothing */
    __mmask16 skip1;    /* columns 16 + t of the tile not stored (nor res read): an edge of
                         * 17-31 columns; 0 for a whole tile. Then s must hold whole rows. */
    const float *cbias; /* the tile's 32 columns' bias (afrt_epi_bias_clamp), or NULL; added
                         * after bias, before res */
} afrt_uk_epi_;
/* The residual rows of the tile are prefetched AFRT_EPI_PF_LEAD k steps before the end of its
 * k loop: the finish reads them right after the last rank-1 update, and a residual written
 * several kernels earlier has left L2 (12 rows ld apart: 12 streams the hardware prefetcher
 * picks up too late). Issued at the loop's start, as before session 30, the lines were in L1
 * too early: a k block streams kc x 32 floats of B (32 KiB at kc 256, all of L1) through it
 * before the finish, and the residual was read from L2 again. 32 steps of 24 FMAs (~100-250
 * ns) still cover a miss to DRAM; 8 did not (a residual of its own buffer 1.11x the conv
 * without epilogue), 64 is the start of a 64-channel conv's loop. benchmarks/conv_epilogue.py
 * --against none, warm, 1x1 convs with the residual in place: 64 -> 256 on 56x56 1.026 ->
 * 1.005, 256 -> 1024 on 14x14 1.013 -> 1.003; residual_epilogue.py (fc2 + bias + residual):
 * 3136 x 384 x 96 1.026-1.034 -> 1.008-1.015, 3136 x 96 x 96 1.036-1.057 -> 1.007-1.022
 * (issue 16, session 30). --cold unchanged: there the lines come from DRAM either way (the
 * first figures in docs/runtime.md, "The register epilogue's own cost"). AFRT_EPI_PF_RES 0
 * turns it off. Addresses are formed as integers (AFRT_PF_ADDR): rows past the tile's mr lie
 * outside C. */
#ifndef AFRT_EPI_PF_RES
#define AFRT_EPI_PF_RES 1
#endif
#ifndef AFRT_EPI_PF_LEAD
#define AFRT_EPI_PF_LEAD 32
#endif
/* E's residual rows (E->res non-NULL: the kernel's split loop decides) */
#define AFRT_UK_EPI_PREFETCH_(MRV, E)                                                          \
    do {                                                                                       \
        for (int i_ = 0; i_ < MRV; ++i_) {                                                     \
            const int64_t r_ = i_ * (E)->res_ld; /* past mr rows: never faults */            \
            _mm_prefetch(AFRT_PF_ADDR((E)->res, r_), _MM_HINT_T0);                             \
            _mm_prefetch(AFRT_PF_ADDR((E)->res, r_ + 16), _MM_HINT_T0);                        \
            _mm_prefetch(AFRT_PF_ADDR((E)->res, r_ + 31), _MM_HINT_T0);                        \
        }                                                                                      \
    } while (0)
/* The finish is unrolled row by row with every field of e read once before it: a loop over
 * the rows indexing c0[i] / c1[i] made GCC spill all 24 accumulators to the stack (zeroing them
 * there with memset first) and re-read e after each store (c may alias it), ~30 instructions a
 * row; unrolled, the accumulators stay in registers (issue 16: the fused 1x1s of ResNet-50,
 * K = 64-512, spent more in this finish than the separate Relu / Add passes it replaces). The
 * SiLU / sigmoid activation is a second pass over the stored rows (still in L1), so the
 * unrolled body stays small; the values and the order of operations are those of one pass.
 * After a Linear layer's bias (the literal form below) the GELU runs in the registers on rows
 * [0, MRV / 2), after the other half's rows are finished and stored, then over those stored
 * rows (after the general finish: over all rows once stored). As one pass over all the rows
 * read back right after their store it took ~4 ns per 16 values where the same pass over L1
 * takes 2.6 (the fused 3136 x 96 x 384 MatMul 1.13-1.27x the bare one at load ~6, 1.04-1.13x
 * so); on all the rows in the registers the 24 accumulators and the 10 table registers do
 * not fit in 32, and GCC spilled the tables and the bias (1.11x); the first half's 12
 * accumulators, the tables and the constants do (issue 16, session 25).
 * AFRT_UK_EPI_ROWS_'s flags say which steps run (SCALE: alpha != 1, BIAS, CBIAS, RES, BOT: lo >
 * -inf, TOP: hi < +inf, CUT: a column mask); the finish expands it with literal flags for the
 * forms ResNet-style convs take (bias + Relu, bias + residual + Relu, the bias alone), so those
 * rows carry no tests of the flags: with the flags read per row (GCC does not unswitch an
 * unrolled body) the tests were ~11 of the ~20 instructions a row, ~5% of a 64-channel 1x1
 * conv's time (issue 16, session 21). A Linear layer's column bias alone (+ GELU) has its
 * literal form too: Swin-T's 32 MatMul + bias kernels took ~2% less (benchmarks/kernel_ab.py
 * --match matmul_add, both orders; issue 16, session 24), and so has the bias + residual
 * (Swin-T's 8 fc2 kernels 2.6% less, BERT-base's 24 residual kernels within +-1%). Session
 * 24 had seen the residual form cost BERT's kernels 2.6% more: that build had GCC outline
 * the direct-A kernel (afrt_ukernel12_ra_epi_), now always inlined (issue 16, session 25).
 * lo = -inf skips the lower bound, as hi = +inf the upper: either keeps every value, NaN and
 * the infinities included. */
#define AFRT_UK_EPI_ROWS_(MRV, SCALE, BIAS, CBIAS, RES, BOT, TOP, CUT)                         \
    AFRT_UK_EPI_ROWS_IN_(0, MRV, 0, SCALE, BIAS, CBIAS, RES, BOT, TOP, CUT)
/* Rows [I0, I1) of the finish; GELU: then the GELU too, in the registers, before the store. */
#define AFRT_UK_EPI_ROWS_IN_(I0, I1, GELU, SCALE, BIAS, CBIAS, RES, BOT, TOP, CUT)              \
    do {                                                                                       \
    _Pragma("GCC unroll 16") for (int i = I0; i < I1; ++i) {                                   \
        float *ci = c + i * ldc;                                                               \
        AFRT_UK_ZMM_ACC_(i, s + i * lds);                                                      \
        if (SCALE) {                                                                           \
            c0[i] = _mm512_mul_ps(c0[i], al);                                                  \
            c1[i] = _mm512_mul_ps(c1[i], al);                                                  \
        }                                                                                      \
        if (BIAS) {                                                                            \
            const __m512 bv = _mm512_set1_ps(bias[i]);                                         \
            c0[i] = _mm512_add_ps(c0[i], bv);                                                  \
            c1[i] = _mm512_add_ps(c1[i], bv);                                                  \
        }                                                                                      \
        if (CBIAS) {                                                                           \
            c0[i] = _mm512_add_ps(c0[i], cb0);                                                 \
            c1[i] = _mm512_add_ps(c1[i], cb1);                                                 \
        }                                                                                      \
        if (RES) {                                                                             \
            const float *ri = res + i * res_ld;                                                \
            c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(ri));                                 \
            c1[i] = _mm512_add_ps(c1[i], (CUT) ? _mm512_maskz_loadu_ps(m1, ri + 16)            \
                                               : _mm512_loadu_ps(ri + 16));                    \
        }                                                                                      \
        if (BOT) {                                                                             \
            c0[i] = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(c0[i], lo, _CMP_NLE_UQ), c0[i]); \
            c1[i] = _mm512_mask_mov_ps(lo, _mm512_cmp_ps_mask(c1[i], lo, _CMP_NLE_UQ), c1[i]); \
        }                                                                                      \
        if (TOP) {                                                                             \
            c0[i] = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(c0[i], hi, _CMP_NGE_UQ), c0[i]); \
            c1[i] = _mm512_mask_mov_ps(hi, _mm512_cmp_ps_mask(c1[i], hi, _CMP_NGE_UQ), c1[i]); \
        }                                                                                      \
        if (GELU) {                                                                            \
            c0[i] = afrt_gelu16_(c0[i]);                                                       \
            c1[i] = afrt_gelu16_(c1[i]);                                                       \
        }                                                                                      \
        _mm512_storeu_ps(ci, c0[i]);                                                           \
        if (CUT) _mm512_mask_storeu_ps(ci + 16, m1, c1[i]);                                    \
        else _mm512_storeu_ps(ci + 16, c1[i]);                                                 \
    }                                                                                          \
    } while (0)
#define AFRT_DEFINE_UKERNEL_EPI_(NAME, ATTR, MRV, APARAMS, KLOOP)                              \
    static inline ATTR void NAME(int64_t kc, APARAMS, const float *restrict b, float *c,       \
                            int64_t ldc, int acc, const float *s, int64_t lds,                 \
                            const afrt_uk_epi_ *e) {                                           \
        AFRT_UK_ZMM_ZERO_(MRV);                                                                \
        /* a k loop of its own without a residual: with one loop behind a conditional       \
         * prefetch the bias + GELU finish cost 12% of a 3136 x 96 x 384 MatMul, now 7.5%     \
         * (gelu_epilogue.py --against none), and Swin-T's qkv MatMul + bias kernels took     \
         * 4-7% longer (kernel_ab.py): GCC's code around the loop, not the prefetch, which    \
         * moved back to the start kept the gain (session 30) */                              \
        if (AFRT_EPI_PF_RES && e->res) {                                                       \
            const int64_t kp_ = kc > AFRT_EPI_PF_LEAD ? kc - AFRT_EPI_PF_LEAD : 0;             \
            KLOOP(MRV, 0, kp_);                                                                \
            AFRT_UK_EPI_PREFETCH_(MRV, e);                                                     \
            KLOOP(MRV, kp_, kc);                                                               \
        } else {                                                                               \
            KLOOP(MRV, 0, kc);                                                                 \
        }                                                                                      \
        const float alpha = e->alpha, *const bias = e->bias, *const res = e->res;              \
        const int64_t res_ld = e->res_ld;                                                      \
        const int act = e->act, scale = alpha != 1.0f, top = !(e->hi == INFINITY);             \
        const int bot = !(e->lo == -INFINITY);                                                 \
        const __mmask16 m1 = (__mmask16)~e->skip1;                                             \
        const int cut = e->skip1 != 0;                                                         \
        const float *const cbias = e->cbias;                                                   \
        const __m512 cb0 = cbias ? _mm512_loadu_ps(cbias) : _mm512_setzero_ps();               \
        const __m512 cb1 = cbias ? _mm512_maskz_loadu_ps(m1, cbias + 16) : _mm512_setzero_ps(); \
        const __m512 al = _mm512_set1_ps(alpha);                                               \
        const __m512 lo = _mm512_set1_ps(e->lo), hi = _mm512_set1_ps(e->hi);                   \
        if (act == 3 && cbias && !res && !scale && !bias && !bot && !top && !cut) {          \
            /* a Linear layer's bias + GELU: half the rows in the registers (above) */         \
            AFRT_UK_EPI_ROWS_IN_(MRV / 2, MRV, 0, 0, 0, 1, 0, 0, 0, 0);                        \
            AFRT_UK_EPI_ROWS_IN_(0, MRV / 2, 1, 0, 0, 1, 0, 0, 0, 0);                          \
            for (int i = MRV / 2; i < MRV; ++i) {                                              \
                float *ci = c + i * ldc;                                                       \
                _mm512_storeu_ps(ci, afrt_gelu16_(_mm512_loadu_ps(ci)));                       \
                _mm512_storeu_ps(ci + 16, afrt_gelu16_(_mm512_loadu_ps(ci + 16)));             \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        if (cbias && !res && !scale && !bias && !bot && !top && !cut)                          \
            AFRT_UK_EPI_ROWS_(MRV, 0, 0, 1, 0, 0, 0, 0); /* a Linear layer's bias */           \
        else if (cbias && res && !scale && !bias && !bot && !top && !cut) /* + residual */    \
            AFRT_UK_EPI_ROWS_(MRV, 0, 0, 1, 1, 0, 0, 0);                                       \
        else if (scale || cbias || top || cut || !bias || (res && !bot))                     \
            AFRT_UK_EPI_ROWS_(MRV, scale, bias, cbias, res, bot, top, cut);                    \
        else if (res) /* Add + Relu */                                                         \
            AFRT_UK_EPI_ROWS_(MRV, 0, 1, 0, 1, 1, 0, 0);                                       \
        else if (bot) /* Relu */                                                               \
            AFRT_UK_EPI_ROWS_(MRV, 0, 1, 0, 0, 1, 0, 0);                                       \
        else /* the bias alone */                                                              \
            AFRT_UK_EPI_ROWS_(MRV, 0, 1, 0, 0, 0, 0, 0);                                       \
        if (act == 3) { /* after the general finish: over all stored rows */                \
            for (int i = 0; i < MRV; ++i) {                                                    \
                float *ci = c + i * ldc;                                                       \
                _mm512_storeu_ps(ci, afrt_gelu16_(_mm512_loadu_ps(ci)));                       \
                _mm512_mask_storeu_ps(ci + 16, m1,                                             \
                                      afrt_gelu16_(_mm512_maskz_loadu_ps(m1, ci + 16)));       \
            }                                                                                  \
        } else if (act) {                                                                      \
            for (int i = 0; i < MRV; ++i) {                                                    \
                float *ci = c + i * ldc;                                                       \
                _mm512_storeu_ps(ci, afrt_silu16_(_mm512_loadu_ps(ci), act == 2));             \
                _mm512_mask_storeu_ps(ci + 16, m1,                                             \
                                      afrt_silu16_(_mm512_maskz_loadu_ps(m1, ci + 16),         \
                                                   act == 2));                                 \
            }                                                                                  \
        }                                                                                      \
    }
#define AFRT_DEFINE_UKERNEL_EPI(NAME, MRV)                                                     \
    AFRT_DEFINE_UKERNEL_EPI_(NAME, , MRV, AFRT_UK_A_PACKED_, AFRT_UK_ZMM_KLOOP_R_)
AFRT_DEFINE_UKERNEL_EPI(afrt_ukernel12_epi_, 12)
AFRT_DEFINE_UKERNEL_EPI(afrt_ukernel8_epi_, 8)
/* Inlined into its one caller (afrt_gemm_tile_a_) always: GCC's own choice flipped with small
 * changes to the finish (one more literal form outlined it), and the same finish measured
 * 1-7% apart on a MatMul either way (issue 16, session 25). */
AFRT_DEFINE_UKERNEL_EPI_(afrt_ukernel12_ra_epi_, __attribute__((always_inline)), 12,
                         AFRT_UK_A_ROWS_PF_, AFRT_UK_ZMM_KLOOP_RA_R_)
#define AFRT_UK_EPI_ 1
#else
/* Portable C (x86-64-v2, aarch64): passes of AFRT_UK_ROWS rows x 32 columns over the packed
 * panel, so the accumulators (2 x 32 floats: 16 SSE/NEON registers) can stay in registers
 * once GCC vectorises the j loops at -O3; all 12 rows at once spilled them to memory. */
#ifndef AFRT_UK_ROWS
#define AFRT_UK_ROWS 2
#endif
#define AFRT_DEFINE_UKERNEL(NAME, MRV)                                                         \
    static inline void NAME(int64_t kc, const float *restrict a, const float *restrict b,      \
                            float *restrict c, int64_t ldc, int acc) {                         \
        for (int r0 = 0; r0 < MRV; r0 += AFRT_UK_ROWS) {                                       \
            float t[AFRT_UK_ROWS][AFRT_NR];                                                    \
            for (int i = 0; i < AFRT_UK_ROWS; ++i)                                             \
                for (int j = 0; j < AFRT_NR; ++j) t[i][j] = 0.0f;                              \
            const float *ap = a + r0, *bp = b;                                                 \
            for (int64_t k = 0; k < kc; ++k) {                                                 \
                for (int i = 0; i < AFRT_UK_ROWS; ++i)                                         \
                    for (int j = 0; j < AFRT_NR; ++j) t[i][j] += ap[i] * bp[j];                \
                ap += MRV;                                                                     \
                bp += AFRT_NR;                                                                 \
            }                                                                                  \
            for (int i = 0; i < AFRT_UK_ROWS; ++i)                                             \
                for (int j = 0; j < AFRT_NR; ++j)                                              \
                    c[(r0 + i) * ldc + j] = (acc ? c[(r0 + i) * ldc + j] : 0.0f) + t[i][j];    \
        }                                                                                      \
    }
#endif
AFRT_DEFINE_UKERNEL(afrt_ukernel12_, 12)
AFRT_DEFINE_UKERNEL(afrt_ukernel8_, 8)

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
/* AVX2 + FMA (x86-64-v3): 16 ymm registers hold 3 rows x 32 columns of C (12 accumulators)
 * plus the B row and a broadcast, so a kernel of MRV rows makes passes of 3 rows over the
 * packed B panel (kc x 32 floats, 32 KiB at kc = 256: it stays in L1/L2 between passes). */
/* Rows [r0, r0 + nrows) (nrows <= 3) of a packed A panel of mrv rows times the packed B panel
 * at b over kc steps, into the 12 accumulators t[3][4] it declares. */
#define AFRT_UK_AVX2_ROWS3_(t, a, mrv, r0, nrows, b, kc)                                        \
    __m256 t[3][4];                                                                            \
    for (int i_ = 0; i_ < 3; ++i_)                                                             \
        for (int q_ = 0; q_ < 4; ++q_) t[i_][q_] = _mm256_setzero_ps();                        \
    {                                                                                          \
        const float *ap_ = (a) + (r0), *bk_ = (b);                                             \
        for (int64_t k_ = 0; k_ < (kc); ++k_) {                                                \
            const __m256 b0 = _mm256_loadu_ps(bk_), b1 = _mm256_loadu_ps(bk_ + 8);            \
            const __m256 b2 = _mm256_loadu_ps(bk_ + 16), b3 = _mm256_loadu_ps(bk_ + 24);       \
            for (int i_ = 0; i_ < 3; ++i_) {                                                   \
                if (i_ >= (nrows)) break;                                                      \
                const __m256 ai = _mm256_broadcast_ss(ap_ + i_);                               \
                t[i_][0] = _mm256_fmadd_ps(ai, b0, t[i_][0]);                                  \
                t[i_][1] = _mm256_fmadd_ps(ai, b1, t[i_][1]);                                  \
                t[i_][2] = _mm256_fmadd_ps(ai, b2, t[i_][2]);                                  \
                t[i_][3] = _mm256_fmadd_ps(ai, b3, t[i_][3]);                                  \
            }                                                                                  \
            ap_ += (mrv);                                                                      \
            bk_ += AFRT_NR;                                                                    \
        }                                                                                      \
    }                                                                                          \
    (void)0
static inline void afrt_ukernel_avx2_rows_(int64_t kc, const float *restrict a, int64_t mrv,
                                           int64_t r0, int64_t nrows, const float *restrict b,
                                           float *restrict c, int64_t ldc, int acc) {
    AFRT_UK_AVX2_ROWS3_(t, a, mrv, r0, nrows, b, kc);
    for (int i = 0; i < 3 && i < nrows; ++i) {
        float *ci = c + (r0 + i) * ldc;
        for (int q = 0; q < 4; ++q) {
            __m256 v = t[i][q];
            if (acc) v = _mm256_add_ps(v, _mm256_loadu_ps(ci + 8 * q));
            _mm256_storeu_ps(ci + 8 * q, v);
        }
    }
}

static inline void afrt_ukernel_(int64_t mr, int64_t kc, const float *restrict a,
                                 const float *restrict b, float *restrict c, int64_t ldc, int acc) {
    for (int64_t r0 = 0; r0 < mr; r0 += 3)
        afrt_ukernel_avx2_rows_(kc, a, mr, r0, afrt_min_(3, mr - r0), b, c, ldc, acc);
}

/* The AVX2 kernel finishing each 3-row pass in its registers before the store, as AVX-512's
 * register finish does (afrt_ukernel12_epi_): v = clamp(((acc ? c : 0) + a @ b) * alpha +
 * bias[i] (+ res)), the operations and order of the plain kernel plus afrt_tile_finish_piece_,
 * so the same bits. Without it a fused conv's bias and Relu were a pass over each stored row
 * panel (12 x up to 512 floats) after its FMAs: ResNet-50's 1x1 convs in an x86-64-v3 build
 * kept ~1 ms against R 1.5 (benchmarks/fusion_efficiency.py --cpu x86-64-v3; issue 16).
 * res: row i of the tile at res + i * res_ld (NULL: none); lo / hi: -inf / +inf skip them.
 * s (row i at s + i * lds) holds the partial sums when acc: c itself, or, in place (the
 * residual is c, read just before the store over it), the tile's scratch. */
#define AFRT_UK_AVX2_EPI_ 1
typedef struct {
    float alpha, lo, hi;
    const float *bias; /* the tile's rows, or NULL */
    const float *res;
    int64_t res_ld;
} afrt_uk_avx2_epi_;

static inline void afrt_ukernel_avx2_epi_(int64_t mr, int64_t kc, const float *restrict a,
                                          const float *restrict b, float *c, int64_t ldc, int acc,
                                          const float *s, int64_t lds,
                                          const afrt_uk_avx2_epi_ *e) {
    const int scale = e->alpha != 1.0f, bot = !(e->lo == -INFINITY), top = !(e->hi == INFINITY);
    for (int64_t r0 = 0; r0 < mr; r0 += 3) {
        const int64_t nrows = afrt_min_(3, mr - r0);
        AFRT_UK_AVX2_ROWS3_(t, a, mr, r0, nrows, b, kc);
        const __m256 al = _mm256_set1_ps(e->alpha), lo = _mm256_set1_ps(e->lo);
        const __m256 hi = _mm256_set1_ps(e->hi);
        /* unrolled, so the accumulators are indexed by constants: as loops GCC kept them on
         * the stack through the k loop (the kernel 2.4x slower) */
        _Pragma("GCC unroll 3") for (int i = 0; i < 3; ++i) {
            if (i >= nrows) break;
            float *ci = c + (r0 + i) * ldc;
            const float *si = s + (r0 + i) * lds;
            const float *ri = e->res ? e->res + (r0 + i) * e->res_ld : NULL;
            const __m256 bv = _mm256_set1_ps(e->bias ? e->bias[r0 + i] : 0.0f);
            _Pragma("GCC unroll 4") for (int q = 0; q < 4; ++q) {
                __m256 v = t[i][q];
                if (acc) v = _mm256_add_ps(v, _mm256_loadu_ps(si + 8 * q));
                if (scale) v = _mm256_mul_ps(v, al);
                if (e->bias) v = _mm256_add_ps(v, bv);
                if (ri) v = _mm256_add_ps(v, _mm256_loadu_ps(ri + 8 * q));
                if (bot) v = _mm256_blendv_ps(lo, v, _mm256_cmp_ps(v, lo, _CMP_NLE_UQ));
                if (top) v = _mm256_blendv_ps(hi, v, _mm256_cmp_ps(v, hi, _CMP_NGE_UQ));
                _mm256_storeu_ps(ci + 8 * q, v);
            }
        }
    }
}
#elif defined(AFRT_NEON_)
/* NEON (aarch64): 32 128-bit v registers. A strip of ROWS x 4*NQ columns of C (ROWS = 12 or
 * 8, NQ = 2 or 3) keeps ROWS*NQ accumulators (24), ROWS/4 vectors of the packed A column
 * (one vld1q per 4 rows) and NQ vectors of the B row in registers: 29 of 32. Each FMA takes
 * its A factor straight from a lane (vfmaq_laneq_f32, FMLA by element), so no broadcasts.
 * The mr x 32 tile is 4 strips of 12x8 (mr = 12) or 8x12, 8x12, 8x8 (mr = 8) over the same
 * packed panels as every ISA (A: [kc][mr], B: [kc][32]); the A panel (12 KiB at kc = 256)
 * stays in L1 across the strips. */
/* Per group G of 4 rows (lane numbers must be literals, so the row loops are unrolled by
 * hand: GROUPS(M) expands to M(0) M(1) [M(2)]): zero, FMA with one vector of the packed A
 * column, store (adding C when acc). The q loops (NQ = 2 or 3 vectors) are unrolled at -O2
 * as well, so the accumulators are registers rather than arrays in memory. */
#define AFRT_NEON_UNROLL_ _Pragma("GCC unroll 4")
#define AFRT_NEON_G12_(M) M(0) M(1) M(2)
#define AFRT_NEON_G8_(M) M(0) M(1)
#define AFRT_NEON_ZERO4_(G)                                                                        \
    AFRT_NEON_UNROLL_ for (int q = 0; q < NQ; ++q)                                                 \
        t##G##0[q] = t##G##1[q] = t##G##2[q] = t##G##3[q] = vdupq_n_f32(0.0f);
#define AFRT_NEON_FMA4_(G)                                                                         \
    {                                                                                              \
        const float32x4_t av = vld1q_f32(a + 4 * (G));                                             \
        AFRT_NEON_UNROLL_ for (int q = 0; q < NQ; ++q) {                                           \
            t##G##0[q] = vfmaq_laneq_f32(t##G##0[q], bq[q], av, 0);                                \
            t##G##1[q] = vfmaq_laneq_f32(t##G##1[q], bq[q], av, 1);                                \
            t##G##2[q] = vfmaq_laneq_f32(t##G##2[q], bq[q], av, 2);                                \
            t##G##3[q] = vfmaq_laneq_f32(t##G##3[q], bq[q], av, 3);                                \
        }                                                                                          \
    }
#define AFRT_NEON_STORE1_(T, ROW)                                                                  \
    AFRT_NEON_UNROLL_ for (int q = 0; q < NQ; ++q) {                                               \
        float *cq = c + (ROW) * ldc + 4 * q;                                                       \
        vst1q_f32(cq, acc ? vaddq_f32(T[q], vld1q_f32(cq)) : T[q]);                                \
    }
#define AFRT_NEON_STORE4_(G)                                                                       \
    AFRT_NEON_STORE1_(t##G##0, 4 * (G) + 0) AFRT_NEON_STORE1_(t##G##1, 4 * (G) + 1)                \
    AFRT_NEON_STORE1_(t##G##2, 4 * (G) + 2) AFRT_NEON_STORE1_(t##G##3, 4 * (G) + 3)
#define AFRT_NEON_DECL4_(G) float32x4_t t##G##0[NQ], t##G##1[NQ], t##G##2[NQ], t##G##3[NQ];
#define AFRT_NEON_DEFINE_STRIP(NAME, ROWS, NQV, GROUPS)                                            \
    static inline void NAME(int64_t kc, const float *restrict a, const float *restrict b,          \
                            float *restrict c, int64_t ldc, int acc) {                             \
        enum { NQ = NQV };                                                                         \
        GROUPS(AFRT_NEON_DECL4_)                                                                   \
        GROUPS(AFRT_NEON_ZERO4_)                                                                   \
        for (int64_t k = 0; k < kc; ++k) {                                                         \
            __builtin_prefetch(AFRT_PF_ADDR(a, ROWS * AFRT_PF_K), 0, 3);                           \
            __builtin_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), 0, 3);                        \
            float32x4_t bq[NQ];                                                                    \
            AFRT_NEON_UNROLL_ for (int q = 0; q < NQ; ++q) bq[q] = vld1q_f32(b + 4 * q);           \
            GROUPS(AFRT_NEON_FMA4_)                                                                \
            a += ROWS;                                                                             \
            b += AFRT_NR;                                                                          \
        }                                                                                          \
        GROUPS(AFRT_NEON_STORE4_)                                                                  \
    }
AFRT_NEON_DEFINE_STRIP(afrt_neon_12x8_, 12, 2, AFRT_NEON_G12_)
AFRT_NEON_DEFINE_STRIP(afrt_neon_8x12_, 8, 3, AFRT_NEON_G8_)
AFRT_NEON_DEFINE_STRIP(afrt_neon_8x8_, 8, 2, AFRT_NEON_G8_)

static inline void afrt_ukernel_(int64_t mr, int64_t kc, const float *restrict a,
                                 const float *restrict b, float *restrict c, int64_t ldc, int acc) {
    if (mr == 12) {
        for (int q = 0; q < AFRT_NR; q += 8) afrt_neon_12x8_(kc, a, b + q, c + q, ldc, acc);
    } else {
        afrt_neon_8x12_(kc, a, b, c, ldc, acc);
        afrt_neon_8x12_(kc, a, b + 12, c + 12, ldc, acc);
        afrt_neon_8x8_(kc, a, b + 24, c + 24, ldc, acc);
    }
}
#else
#if defined(__AVX512F__)
/* 7 rows: maps of 7 or 14 output positions are whole tiles in gemm_1x1_t (afrt_conv1x1t_mr_) */
AFRT_DEFINE_UKERNEL(afrt_ukernel7_, 7)
/* 4 rows: the last <= 4 rows of a direct-A GEMM (afrt_gemm_tile_a_), e.g. Swin's 49 tokens */
AFRT_DEFINE_UKERNEL(afrt_ukernel4_, 4)
/* The edge of C where at most 16 columns are left (N mod 32 in 1..16: 196 positions of a
 * 14x14 map end in 4, 784 of 28x28 in 16, 169 of 13x13 in 9): half the full tile's FMAs
 * (the left half of the packed B panel) and masked loads/stores of the first mr rows and
 * the mask's columns straight into C, instead of a whole 32-column tile through a copy. */
/* The half kernel (COL16 0): MRV rows x the first 16 columns of a tile, the columns past the
 * edge masked off by m. With COL16 1 (the 17-column edge, below) it also computes column 16
 * and stores the 16 columns whole (m unused); COL16 is a constant, so each kernel's code is
 * that of its own loop. */
#define AFRT_DEFINE_UKERNEL_HALF_(NAME, MRV, COL16)                                            \
    static inline void NAME(int64_t kc, const float *restrict a, int64_t as,                   \
                            const float *restrict b, float *restrict c, int64_t ldc, int acc,  \
                            int64_t mr, __mmask16 m) {                                         \
        __m512 c0[MRV], cx = _mm512_setzero_ps();                                              \
        _Pragma("GCC unroll 16") for (int i = 0; i < MRV; ++i) c0[i] = _mm512_setzero_ps();    \
        for (int64_t k = 0; k < kc; ++k) {                                                     \
            _mm_prefetch(AFRT_PF_ADDR(a, as * AFRT_PF_K), AFRT_PF_HINT);                       \
            _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), AFRT_PF_HINT);                  \
            const __m512 b0 = _mm512_loadu_ps(b);                                              \
            for (int i = 0; i < MRV; ++i)                                                      \
                c0[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, c0[i]);                      \
            if (COL16) cx = _mm512_fmadd_ps(afrt_load_rows_(a, MRV), _mm512_set1_ps(b[16]), cx); \
            a += as;                                                                           \
            b += AFRT_NR;                                                                      \
        }                                                                                      \
        float col[16]; /* column 16: lane i is row i's */                                      \
        if (COL16) _mm512_storeu_ps(col, cx);                                                  \
        for (int i = 0; i < MRV; ++i) {                                                        \
            if (i >= mr) break;                                                                \
            float *ci = c + i * ldc;                                                           \
            if (COL16) {                                                                       \
                if (acc) c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(ci));                    \
                _mm512_storeu_ps(ci, c0[i]);                                                   \
                ci[16] = acc ? col[i] + ci[16] : col[i];                                       \
            } else {                                                                           \
                if (acc) c0[i] = _mm512_add_ps(c0[i], _mm512_maskz_loadu_ps(m, ci));           \
                _mm512_mask_storeu_ps(ci, m, c0[i]);                                           \
            }                                                                                  \
        }                                                                                      \
    }
/* The edge of C where 17 columns are left (N mod 32 = 17: the 49 positions of a 7x7 map,
 * ResNet-50's layer4 and MobileNet's and EfficientNet's last stages): the half kernel's 16
 * columns and the 17th in one more accumulator holding the tile's rows in its lanes (A's k
 * column, its MRV rows loaded plainly, times b[16] broadcast), instead of a whole 32-column
 * tile: MRV + 1 FMAs per k where the full tile has 2 * MRV. Each element's products are summed in the same
 * order (one fmadd per k from zero, then C's added when acc), as in the half kernel. */
/* a[0, n) (n = 4, 8 or 12) in the low lanes, the others zero. Plain loads, not a masked
 * one: GCC keeps the half kernel's accumulators in memory around a masked load (12 stores
 * per k, as slow as the full tile). */
static inline __m512 afrt_load_rows_(const float *a, int n) {
    if (n == 4) return _mm512_zextps128_ps512(_mm_loadu_ps(a));
    const __m512 v = _mm512_zextps256_ps512(_mm256_loadu_ps(a));
    return n == 8 ? v : _mm512_insertf32x4(v, _mm_loadu_ps(a + 8), 2);
}
AFRT_DEFINE_UKERNEL_HALF_(afrt_ukernel12h_, 12, 0)
AFRT_DEFINE_UKERNEL_HALF_(afrt_ukernel8h_, 8, 0)
AFRT_DEFINE_UKERNEL_HALF_(afrt_ukernel4h_, 4, 0)
AFRT_DEFINE_UKERNEL_HALF_(afrt_ukernel12h1_, 12, 1)
AFRT_DEFINE_UKERNEL_HALF_(afrt_ukernel8h1_, 8, 1)
AFRT_DEFINE_UKERNEL_HALF_(afrt_ukernel4h1_, 4, 1)
/* The edge rows of C (M mod MR: ViT's 197 tokens leave 5; a conv's 64 output channels 4)
 * with whole 32-column panels: a kernel of MRV >= mr rows, storing only the first mr rows
 * straight into C (adding C's when acc), instead of the whole tile through a copy in and out
 * of a scratch tile every k block. A's step per k is as: MRV in a panel packed for this
 * kernel, AFRT_MR in the zero-padded last panel of a packed constant (only its first MRV
 * rows are read, so a 4-row edge costs 4 rows' FMAs, not 12). */
#define AFRT_UK_ZMM_KLOOP_AS_(MRV)                                                             \
    for (int64_t k = 0; k < kc; ++k) {                                                         \
        _mm_prefetch(AFRT_PF_ADDR(a, as * AFRT_PF_K), AFRT_PF_HINT);                           \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), AFRT_PF_HINT);                      \
        _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K + 16), AFRT_PF_HINT);                 \
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);                    \
        AFRT_UK_ZMM_RANK1_(MRV, a, b0, b1);                                                    \
        a += as;                                                                               \
        b += AFRT_NR;                                                                          \
    }                                                                                          \
    (void)0
#define AFRT_DEFINE_UKERNEL_ROWS(NAME, MRV)                                                    \
    static inline void NAME(int64_t kc, const float *restrict a, int64_t as,                   \
                            const float *restrict b, float *restrict c, int64_t ldc, int acc,  \
                            int64_t mr) {                                                      \
        AFRT_UK_ZMM_ZERO_(MRV);                                                                \
        AFRT_UK_ZMM_KLOOP_AS_(MRV);                                                            \
        for (int i = 0; i < MRV; ++i) {                                                        \
            if (i >= mr) break;                                                                \
            float *ci = c + i * ldc;                                                           \
            AFRT_UK_ZMM_ACC_(i, ci);                                                           \
            _mm512_storeu_ps(ci, c0[i]);                                                       \
            _mm512_storeu_ps(ci + 16, c1[i]);                                                  \
        }                                                                                      \
    }
AFRT_DEFINE_UKERNEL_ROWS(afrt_ukernel12r_, 12)
AFRT_DEFINE_UKERNEL_ROWS(afrt_ukernel8r_, 8)
AFRT_DEFINE_UKERNEL_ROWS(afrt_ukernel4r_, 4)
#endif
static inline void afrt_ukernel_(int64_t mr, int64_t kc, const float *restrict a,
                                 const float *restrict b, float *restrict c, int64_t ldc, int acc) {
    if (mr == 12) afrt_ukernel12_(kc, a, b, c, ldc, acc);
#if defined(__AVX512F__)
    else if (mr == 7) afrt_ukernel7_(kc, a, b, c, ldc, acc);
    else if (mr == 4) afrt_ukernel4_(kc, a, b, c, ldc, acc);
#endif
    else afrt_ukernel8_(kc, a, b, c, ldc, acc);
}
#endif

/* Row-tile height for an M-row operand: 12 (more accumulators) unless 12 wastes over 5% of
 * the rows and 8 wastes less (64 channels: 72 vs 64 rows). */
static inline int afrt_choose_mr_(int64_t M) {
    const int64_t p12 = (M + 11) / 12 * 12, p8 = (M + 7) / 8 * 8;
    return (p12 - M) * 20 > p12 && p8 < p12 ? 8 : 12;
}

static inline int64_t afrt_round_up_(int64_t v, int64_t m) { return afrt_cdiv_(v, m) * m; }

/* One A panel from a transposed source: o[k*mr + i] = src[k*lda + i] for i < nrow (1 <=
 * nrow <= mr <= 16), zero for nrow <= i < mr, k < kc. */
static inline void afrt_pack_rows_t_(const float *restrict src, int64_t lda, int64_t nrow,
                                     int64_t mr, int64_t kc, float *restrict o) {
#if defined(__AVX512F__)
    const __mmask16 m = (__mmask16)((1u << nrow) - 1u), mo = (__mmask16)((1u << mr) - 1u);
    for (int64_t k = 0; k < kc; ++k)
        _mm512_mask_storeu_ps(o + k * mr, mo, _mm512_maskz_loadu_ps(m, src + k * lda));
#else
    for (int64_t k = 0; k < kc; ++k) {
        for (int64_t i = 0; i < nrow; ++i) o[k * mr + i] = src[k * lda + i];
        for (int64_t i = nrow; i < mr; ++i) o[k * mr + i] = 0.0f;
    }
#endif
}

#if defined(AFRT_NEON_)
/* dst[j*ldd + i] = src[i*lds + j] for a 4 x 4 block: two rounds of TRN (32-, then 64-bit). */
static inline void afrt_neon_transpose4_(const float *src, int64_t lds, float *dst, int64_t ldd) {
    const float32x4_t r0 = vld1q_f32(src), r1 = vld1q_f32(src + lds);
    const float32x4_t r2 = vld1q_f32(src + 2 * lds), r3 = vld1q_f32(src + 3 * lds);
    const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1));
    const float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
    const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3));
    const float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
    vst1q_f32(dst, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2)));
    vst1q_f32(dst + ldd, vreinterpretq_f32_f64(vtrn1q_f64(t1, t3)));
    vst1q_f32(dst + 2 * ldd, vreinterpretq_f32_f64(vtrn2q_f64(t0, t2)));
    vst1q_f32(dst + 3 * ldd, vreinterpretq_f32_f64(vtrn2q_f64(t1, t3)));
}

/* afrt_pack_a_ (same layout and contract as the generic one below) with NEON: row-major A
 * in 4 x 4 transposed blocks, transposed A (rows contiguous per k) as vector copies of whole
 * panel rows; the edges (rows past M, k tails) element by element. */
static inline void afrt_pack_a_panels_(const float *A, int64_t lda, int trans, int64_t M,
                                       int64_t K, float *dst, int64_t ic0, int64_t ic1) {
    const int64_t mr = afrt_choose_mr_(M), Mp = afrt_round_up_(M, mr);
    for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
        const int64_t kc = afrt_min_(AFRT_KC, K - pc);
        for (int64_t ic = ic0; ic < ic1; ic += mr) {
            float *panel = dst + pc * Mp + ic * kc;
            if (trans) {
                const int64_t nrow = afrt_max_(0, afrt_min_(mr, M - ic));
                for (int64_t k = 0; k < kc; ++k) {
                    const float *src = A + (pc + k) * lda + ic;
                    float *o = panel + k * mr;
                    if (nrow == mr) {
                        for (int64_t i = 0; i < mr; i += 4) vst1q_f32(o + i, vld1q_f32(src + i));
                    } else {
                        for (int64_t i = 0; i < nrow; ++i) o[i] = src[i];
                        for (int64_t i = nrow; i < mr; ++i) o[i] = 0.0f;
                    }
                }
                continue;
            }
            for (int64_t i = 0; i < mr; i += 4) {
                if (ic + i + 4 <= M) {
                    const float *src = A + (ic + i) * lda + pc;
                    const int64_t kv = kc - kc % 4;
                    for (int64_t k = 0; k < kv; k += 4)
                        afrt_neon_transpose4_(src + k, lda, panel + k * mr + i, mr);
                    for (int64_t u = 0; u < 4; ++u)
                        for (int64_t k = kv; k < kc; ++k) panel[k * mr + i + u] = src[u * lda + k];
                } else {
                    for (int64_t u = i; u < i + 4; ++u) {
                        const int64_t row = ic + u;
                        for (int64_t k = 0; k < kc; ++k)
                            panel[k * mr + u] = row < M ? A[row * lda + pc + k] : 0.0f;
                    }
                }
            }
        }
    }
}

/* The transposed branch of afrt_pack_b_block_ for one panel (columns j.. of op(B), cnt of
 * them inside N): 4 x 4 transposed blocks, edges element by element. */
static inline void afrt_neon_pack_b_trans_(const float *B, int64_t ldb, int64_t j, int64_t cnt,
                                           int64_t pc, int64_t kc, float *panel) {
    for (int64_t t = 0; t < AFRT_NR; t += 4) {
        if (t + 4 <= cnt) {
            const float *src = B + (j + t) * ldb + pc;
            const int64_t kv = kc - kc % 4;
            for (int64_t k = 0; k < kv; k += 4)
                afrt_neon_transpose4_(src + k, ldb, panel + k * AFRT_NR + t, AFRT_NR);
            for (int64_t u = 0; u < 4; ++u)
                for (int64_t k = kv; k < kc; ++k) panel[k * AFRT_NR + t + u] = src[u * ldb + k];
        } else {
            for (int64_t u = t; u < t + 4; ++u)
                for (int64_t k = 0; k < kc; ++k)
                    panel[k * AFRT_NR + u] = u < cnt ? B[(j + u) * ldb + pc + k] : 0.0f;
        }
    }
}
/* All of op(A)'s panels; afrt_pack_a_panels_ packs the panels starting at rows [ic0, ic1)
 * (multiples of afrt_choose_mr_(M)) of the same layout, so threads can share the work. */
static inline void afrt_pack_a_(const float *A, int64_t lda, int trans, int64_t M, int64_t K,
                                float *dst) {
    afrt_pack_a_panels_(A, lda, trans, M, K, dst, 0, afrt_round_up_(M, afrt_choose_mr_(M)));
}
#else
/* Packs op(A) (M x K; element (i, p) = trans ? A[p*lda + i] : A[i*lda + p]) into dst as
 * panels of mr rows (afrt_choose_mr_(M)): the panels starting at rows [ic0, ic1). */
static inline void afrt_pack_a_panels_(const float *A, int64_t lda, int trans, int64_t M,
                                       int64_t K, float *dst, int64_t ic0, int64_t ic1) {
    const int64_t mr = afrt_choose_mr_(M), Mp = afrt_round_up_(M, mr);
    for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
        const int64_t kc = afrt_min_(AFRT_KC, K - pc);
        for (int64_t ic = ic0; ic < ic1; ic += mr) {
            float *panel = dst + pc * Mp + ic * kc;
            if (trans) {
                /* op(A)'s rows are contiguous per k: one panel row per k, copied whole (a
                 * 1x1 conv's transposed input, afrt_conv1x1t_f32, is packed this way) */
                afrt_pack_rows_t_(A + pc * lda + ic, lda, afrt_min_(mr, M - ic), mr, kc, panel);
                continue;
            }
            for (int64_t i = 0; i < mr; ++i) {
                const int64_t row = ic + i;
                if (row >= M) {
                    for (int64_t k = 0; k < kc; ++k) panel[k * mr + i] = 0.0f;
                } else {
                    const float *src = A + row * lda + pc;
                    for (int64_t k = 0; k < kc; ++k) panel[k * mr + i] = src[k];
                }
            }
        }
    }
}
/* All of op(A)'s panels; afrt_pack_a_panels_ packs the panels starting at rows [ic0, ic1)
 * (multiples of afrt_choose_mr_(M)) of the same layout, so threads can share the work. */
static inline void afrt_pack_a_(const float *A, int64_t lda, int trans, int64_t M, int64_t K,
                                float *dst) {
    afrt_pack_a_panels_(A, lda, trans, M, K, dst, 0, afrt_round_up_(M, afrt_choose_mr_(M)));
}
#endif /* AFRT_NEON_ */

/* Packs the k block [pc, pc+kc) x columns [j0, j0+nc) of op(B) (K x N; element (p, j) =
 * trans ? B[j*ldb + p] : B[p*ldb + j]) into nc/NR panels of [kc][NR] at dst (panel stride kc*NR). */
static inline void afrt_pack_b_block_(const float *B, int64_t ldb, int trans, int64_t N,
                                      int64_t pc, int64_t kc, int64_t j0, int64_t nc, float *dst) {
    for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
        float *panel = dst + jr * kc;
        const int64_t j = j0 + jr, cnt = afrt_max_(0, afrt_min_(AFRT_NR, N - j));
        if (!trans) {
#if defined(__AVX512F__)
            /* two (masked) 16-lane copies per row: no libc call per 128 bytes. Masked-off lanes
             * are never read, and the second half's address is formed only when it has lanes
             * (cnt > 16): src + 16 past the end of B would be undefined pointer arithmetic,
             * which gcc reports as -Warray-bounds when B is a small static const weight. */
            const __mmask16 m0 = (__mmask16)(cnt >= 16 ? 0xffffu : (1u << cnt) - 1u);
            const __mmask16 m1 = (__mmask16)(cnt >= 32 ? 0xffffu : cnt > 16 ? (1u << (cnt - 16)) - 1u : 0u);
            const int64_t hi = cnt > 16 ? 16 : 0;
            for (int64_t k = 0; k < kc; ++k) {
                float *o = panel + k * AFRT_NR;
                const float *src = B + (pc + k) * ldb + j;
                _mm512_storeu_ps(o, _mm512_maskz_loadu_ps(m0, src));
                _mm512_storeu_ps(o + 16, _mm512_maskz_loadu_ps(m1, src + hi));
            }
#else
            for (int64_t k = 0; k < kc; ++k) {
                float *o = panel + k * AFRT_NR;
                const float *src = B + (pc + k) * ldb + j;
                if (cnt == AFRT_NR) memcpy(o, src, AFRT_NR * sizeof(float));
                else {
                    for (int64_t t = 0; t < cnt; ++t) o[t] = src[t];
                    for (int64_t t = cnt; t < AFRT_NR; ++t) o[t] = 0.0f;
                }
            }
#endif
        } else {
#if defined(AFRT_NEON_)
            afrt_neon_pack_b_trans_(B, ldb, j, cnt, pc, kc, panel);
#else
            for (int64_t t = 0; t < AFRT_NR; ++t) {
                if (t < cnt) {
                    const float *src = B + (j + t) * ldb + pc;
                    for (int64_t k = 0; k < kc; ++k) panel[k * AFRT_NR + t] = src[k];
                } else {
                    for (int64_t k = 0; k < kc; ++k) panel[k * AFRT_NR + t] = 0.0f;
                }
            }
#endif
        }
    }
}

/* The whole of op(B), block by block, in the packed-B layout. */
static inline void afrt_pack_b_full_(const float *B, int64_t ldb, int trans, int64_t K, int64_t N,
                                     float *dst) {
    const int64_t Np = afrt_round_up_(N, AFRT_NR);
    for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
        const int64_t kc = afrt_min_(AFRT_KC, K - pc);
        afrt_pack_b_block_(B, ldb, trans, N, pc, kc, 0, Np, dst + pc * Np);
    }
}

/* afrt_alloc_big_ for a kernel's packed-operand cache (a kernel allocation, which
 * AFRT_TEST_FAIL_ALLOC counts; af_create's weights and arena are not). */
static inline void *afrt_alloc_pack_(size_t bytes) {
    return AFRT_ALLOC_FAILS_() ? NULL : afrt_alloc_big_(bytes);
}

/* A packed copy of a constant operand (side 0: A panels of rows x cols; side 1: B panels),
 * from the cache, made on first use; NULL if src is not constant or memory is short. */
static inline const float *afrt_packed_const_(const float *src, int64_t rows, int64_t cols,
                                              int64_t ld, int trans, int side) {
    const size_t span = (size_t)((trans ? cols : rows) - 1) * (size_t)ld * sizeof(float) +
                        (size_t)(trans ? rows : cols) * sizeof(float);
    const float *found = NULL;
    AFRT_OMP(critical(afrt_cache))
    {
        if (afrt_in_region_(src, span)) {
            for (int e = 0; e < afrt_n_packed_ && !found; ++e) {
                const afrt_packed_entry_ *q = &afrt_packed_[e];
                if (q->src == src && q->rows == rows && q->cols == cols && q->ld == ld &&
                    q->trans == trans && q->side == side && q->lp == 0)
                    found = (const float *)q->packed;
            }
            if (!found && afrt_n_packed_ < AFRT_MAX_PACKED) {
                const size_t n = side == 0 ? (size_t)(afrt_round_up_(rows, afrt_choose_mr_(rows)) * cols)
                                           : (size_t)(rows * afrt_round_up_(cols, AFRT_NR));
                float *buf = (float *)afrt_alloc_pack_(n * sizeof(float));
                if (buf) {
                    if (side == 0) afrt_pack_a_(src, ld, trans, rows, cols, buf);
                    else afrt_pack_b_full_(src, ld, trans, rows, cols, buf);
                    afrt_packed_entry_ e = {src, rows, cols, ld, trans, side, 0, buf, NULL};
                    afrt_packed_[afrt_n_packed_++] = e;
                    found = buf;
                }
            }
        }
    }
    return found;
}

/* pas[i] = op(A_i) in packed-A layout for i < n, A_i = A + i*stride (M x K, lda, trans): the
 * cached copy for constant operands, else packed now into this thread's scratch slot 1.
 * 0 if out of memory. */
static inline int afrt_pack_a_all_(const float *A, int64_t stride, int64_t n, int64_t M,
                                   int64_t K, int64_t lda, int trans, const float **pas) {
    const int64_t Mp = afrt_round_up_(M, afrt_choose_mr_(M));
    int need = 0;
    for (int64_t i = 0; i < n; ++i) {
        pas[i] = afrt_packed_const_(A + i * stride, M, K, lda, trans, 0);
        need |= pas[i] == NULL;
    }
    if (!need) return 1;
    float *abuf = (float *)afrt_thread_scratch(1, (size_t)(n * Mp * K) * sizeof(float));
    if (!abuf) return 0;
    if (n == 1) {
        /* one matrix (batch 1: every dense layer of a transformer): its panels split over the
         * threads. Packed on the calling thread alone, a 128 x 3072 A took 180 us of a 1.9 ms
         * two-thread GEMM, and the idle worker went to sleep meanwhile (docs/runtime.md) */
        const int64_t mr = afrt_choose_mr_(M), np = Mp / mr;
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (np > 1 && afrt_worth_threads_(AFRT_PACK_WORK * (double)M * K)))
        for (int64_t q = 0; q < np; ++q) {
            afrt_arrive_();
            afrt_pack_a_panels_(A, lda, trans, M, K, abuf, q * mr, (q + 1) * mr);
        }
        pas[0] = abuf;
        return 1;
    }
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()))
    for (int64_t i = 0; i < n; ++i) {
        afrt_arrive_();
        if (!pas[i]) {
            afrt_pack_a_(A + i * stride, lda, trans, M, K, abuf + i * Mp * K);
            pas[i] = abuf + i * Mp * K;
        }
    }
    return 1;
}

/* How op(B) reaches the core: prepacked, dense (row-major with ldb, maybe transposed), or
 * an im2col view of a convolution input (packed straight into panels). */
typedef struct {
    const float *packed;          /* full packed-B layout, or NULL */
    const float *B;               /* dense source */
    int64_t ldb;
    int trans;
    const struct afrt_conv_params_s *conv; /* im2col source: x of one image/group */
    const float *conv_x;
    int blocked; /* B (not transposed) in 16-row blocks, NCHW16c: element (p, j) at
                  * B[(p / 16) * ldb * 16 + j * 16 + p % 16] (afrt_pack_b_nc_) */
    /* a second dense source below the first (afrt_conv1x1_pair_f32): rows p >= k2 of B are
     * rows p - k2 of B2, same ldb, not transposed; B2 NULL: B alone */
    const float *B2;
    int64_t k2;
    /* a 3-d conv's im2col source (afrt_conv3d_f32), x of one image/group at conv_x; conv is
     * then NULL */
    const struct afrt_conv3d_params_s *conv3;
} afrt_bsrc_;

static inline void afrt_pack_b_conv_(const struct afrt_conv_params_s *p, const float *xg,
                                     int64_t N, int64_t pc, int64_t kc, int64_t j0, int64_t nc,
                                     float *dst);
static inline void afrt_pack_b_nc_(const float *B, int64_t ld, int64_t N, int64_t pc, int64_t kc,
                                   int64_t j0, int64_t nc, float *dst);
static inline void afrt_pack_b_conv3_(const struct afrt_conv3d_params_s *p, const float *xg,
                                      int64_t N, int64_t pc, int64_t kc, int64_t j0, int64_t nc,
                                      float *dst);

/* Packs the k block [pc, pc+kc) x columns [j0, j0+nc) of an unpacked B source (bs->packed
 * is NULL) into nc/NR panels of [kc][NR] at dst, whichever view it is. */
static inline void afrt_pack_b_src_(const afrt_bsrc_ *bs, int64_t N, int64_t pc, int64_t kc,
                                    int64_t j0, int64_t nc, float *dst) {
    if (bs->conv) afrt_pack_b_conv_(bs->conv, bs->conv_x, N, pc, kc, j0, nc, dst);
    else if (bs->conv3) afrt_pack_b_conv3_(bs->conv3, bs->conv_x, N, pc, kc, j0, nc, dst);
    else if (bs->blocked) afrt_pack_b_nc_(bs->B, bs->ldb, N, pc, kc, j0, nc, dst);
    else if (bs->B2 && pc + kc > bs->k2) { /* panel by panel: the rows of each source */
        const int64_t k1 = afrt_max_(0, bs->k2 - pc); /* rows from B */
        for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
            float *panel = dst + jr * kc;
            if (k1 > 0) afrt_pack_b_block_(bs->B, bs->ldb, 0, N, pc, k1, j0 + jr, AFRT_NR, panel);
            afrt_pack_b_block_(bs->B2, bs->ldb, 0, N, pc + k1 - bs->k2, kc - k1, j0 + jr,
                               AFRT_NR, panel + k1 * AFRT_NR);
        }
    } else afrt_pack_b_block_(bs->B, bs->ldb, bs->trans, N, pc, kc, j0, nc, dst);
}

/* What afrt_gemm_tile_ does to each piece of C as soon as its last k block is stored: C *=
 * alpha, then bias and the epilogue (afrt_finish_block_) in the epilogue's coordinates, where
 * C's element (i, j) is element (row0 + i, col0 + j) of the matrix at `out` (same ld). A piece
 * is one row panel (at most AFRT_MR rows) by one column block (at most AFRT_NC columns), at
 * most 24 KiB and just written, so it is still in L1: finishing the whole tile afterwards read
 * a C block of up to AFRT_TILE_BYTES back from L2/L3 once for the bias and once for the
 * epilogue, which cost about as much as the unfused passes it replaced (docs/runtime.md). */
typedef struct {
    float *out;
    const float *bias; /* bias[row] in the epilogue's rows, or NULL */
    float alpha;
    int64_t batch, row0, col0;
    afrt_epilogue epi;
} afrt_tile_finish_;

static inline void afrt_tile_finish_piece_(const afrt_tile_finish_ *fin, float *C, int64_t ldc,
                                           int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (fin->alpha != 1.0f)
        for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j) C[i * ldc + j] *= fin->alpha;
    afrt_finish_block_(fin->out, fin->bias, fin->batch, fin->row0 + i0, fin->row0 + i1,
                       fin->col0 + j0, fin->col0 + j1, ldc, fin->epi);
}

/* Whether fin's epilogue is the built-in clamp with a residual that is C itself, element for
 * element (the memory plan wrote the output over the residual it adds: plan-buffers'
 * memory.residual_inplace). Then every element must be final before its only store to C, which
 * is also the only read of its residual (afrt_gemm_tile_). Element (i, j) of C is element
 * (row0 + i, col0 + j) of fin->out; a residual overlapping C any other way is not supported. */
static inline int afrt_tile_inplace_(const afrt_tile_finish_ *fin, const float *C, int64_t ldc) {
    if (!fin || fin->epi.fn != afrt_epi_clamp_fn) return 0;
    const afrt_epi_clamp *e = (const afrt_epi_clamp *)fin->epi.ctx;
    return e->res && e->res_ld == ldc &&
           e->res + fin->batch * e->res_stride + fin->row0 * e->res_ld + fin->col0 == C;
}

/* In place: c[i * ldc + j] = clamp(s[i * lds + j] * alpha + bias[i] + c[i * ldc + j]) for the
 * mr x nr valid elements, each residual element read just before its element is stored; the
 * operations and their order of afrt_tile_finish_piece_ + afrt_epi_clamp_fn. */
static inline void afrt_finish_store_inplace_(const afrt_tile_finish_ *fin, float *c, int64_t ldc,
                                              const float *s, int64_t lds, int64_t row,
                                              int64_t mr, int64_t nr) {
    const afrt_epi_clamp *e = (const afrt_epi_clamp *)fin->epi.ctx;
    const float lo = e->lo, hi = e->hi, al = fin->alpha;
    /* branch-free inner loops (they vectorise): a third of a 7x7 map's columns come here */
    for (int64_t i = 0; i < mr; ++i) {
        float *ci = c + i * ldc;
        const float *si = s + i * lds;
        if (al == 1.0f && fin->bias) {
            const float bv = fin->bias[row + i];
            for (int64_t j = 0; j < nr; ++j) ci[j] = afrt_epi_clamp1_((si[j] + bv) + ci[j], lo, hi);
        } else if (al == 1.0f) {
            for (int64_t j = 0; j < nr; ++j) ci[j] = afrt_epi_clamp1_(si[j] + ci[j], lo, hi);
        } else if (fin->bias) {
            const float bv = fin->bias[row + i];
            for (int64_t j = 0; j < nr; ++j)
                ci[j] = afrt_epi_clamp1_((si[j] * al + bv) + ci[j], lo, hi);
        } else {
            for (int64_t j = 0; j < nr; ++j) ci[j] = afrt_epi_clamp1_(si[j] * al + ci[j], lo, hi);
        }
    }
}

/* C tile rows [i0, i1) x cols [j0, j1) of C[M x N] (+ batch handled by caller) from packed A
 * (pa, whole matrix layout) and B source; kbuf: per-thread space for one packed B block
 * (AFRT_KC * AFRT_NC floats). Accumulates over all of K (> 0) into C, which is overwritten
 * (acc0 == 0) or added to (acc0 != 0); fin (or NULL) finishes each piece of the tile right
 * after its last k block, so every element of the tile is finished exactly once.
 *
 * In place (afrt_tile_inplace_, acc0 == 0): C holds the residual until each element's only
 * store. Partial sums of k blocks before the last go to this thread's scratch slot 12 (the
 * column block's rows rounded up to MR x its padded columns: whole micro-tiles, no edges), not
 * to C; the last k block finishes full tiles in the AVX-512 registers (partial sums read from
 * the scratch), and every other tile (edges, half tiles, other ISAs) into the scratch or tmp
 * and then through afrt_finish_store_inplace_. Without that scratch, or without kbuf (NULL:
 * out of memory; only in place or with prepacked B), each micro-tile runs all its k blocks in
 * tmp, its B panel packed a few k rows at a time on the stack (slow, but needs no memory and
 * never stores a partial sum into C). */
#ifndef AFRT_LEAN_KS
#define AFRT_LEAN_KS 16 /* k rows of B per stack panel on the out-of-memory path: 2 KiB */
#endif
/* afrt_ukernel_ for the in-place path's micro-tiles (whole MR x NR tiles in a scratch, c):
 * where at most 16 columns are real (the N mod 32 edge of 28x28 and 14x14 maps: 784 and 196
 * positions), the half kernel, half the FMAs, storing only those columns; the in-place
 * finish reads no others. The products and their order are the full kernel's. */
static inline void afrt_ukernel_cols_(int64_t mr, int64_t kc, const float *restrict a,
                                      const float *restrict b, float *restrict c, int64_t ldc,
                                      int acc, int64_t nr) {
#if defined(__AVX512F__) && !defined(AFRT_NEON_)
    if (nr <= 16 && (mr == 12 || mr == 8)) {
        const __mmask16 m = (__mmask16)((1u << nr) - 1u);
        if (mr == 12) afrt_ukernel12h_(kc, a, 12, b, c, ldc, acc, 12, m);
        else afrt_ukernel8h_(kc, a, 8, b, c, ldc, acc, 8, m);
        return;
    }
    if (nr == 17 && (mr == 12 || mr == 8)) { /* 16 columns and one (afrt_ukernel12h1_) */
        if (mr == 12) afrt_ukernel12h1_(kc, a, 12, b, c, ldc, acc, 12, (__mmask16)0xffff);
        else afrt_ukernel8h1_(kc, a, 8, b, c, ldc, acc, 8, (__mmask16)0xffff);
        return;
    }
#else
    (void)nr;
#endif
    afrt_ukernel_(mr, kc, a, b, c, ldc, acc);
}

/* One edge panel of row-major A for the direct-A path: o[k*mr + i] = src[i*lda + k] for
 * i < nrow, zero for nrow <= i < mr, k < kc (afrt_pack_a_panels_'s layout). */
static inline void afrt_pack_rows_n_(const float *restrict src, int64_t lda, int64_t nrow,
                                     int64_t mr, int64_t kc, float *restrict o) {
    for (int64_t i = 0; i < mr; ++i) {
        const float *si = src + i * lda;
        if (i < nrow)
            for (int64_t k = 0; k < kc; ++k) o[k * mr + i] = si[k];
        else
            for (int64_t k = 0; k < kc; ++k) o[k * mr + i] = 0.0f;
    }
}

/* afrt_pf_next_: 1 (default) has the direct-A micro-kernels prefetch the next block of a
 * prepacked B (below), 0 not (benchmarks/gemm_pf_next.py compares the two in one binary). */
static int afrt_pf_next_ = 1;

/* Where the direct-A micro-kernel of full row tile t (from the tile's first, 0) and 32-column
 * panel p of a (k block, column block) prefetches (*pf, step *pfs bytes per k step, kc steps):
 * its share of the next block of prepacked B (bs->packed) in afrt_gemm_tile_a_'s order over
 * the tile's columns [jc, j1) and K, split over the row tiles after the first (nt full ones)
 * and the block's np whole panels. The first row tile reads the current block from DRAM at the
 * bandwidth it can draw; the others run from L2 and leave the memory idle: a 128 x 3072 x 768
 * GEMM (BERT's fc2) with its weights cold took 1.13x its warm time. No next block, the first
 * tile, or off: *pf = b, *pfs = 0 (one prefetch of a line already in L1). */
static inline void afrt_next_b_(const afrt_bsrc_ *bs, int64_t Np, int64_t K, int64_t jc,
                                int64_t j1, int64_t pc, int64_t kc, int64_t nt, int64_t np,
                                int64_t t, int64_t p, const float *b, const char **pf,
                                int64_t *pfs) {
    *pf = (const char *)b;
    *pfs = 0;
    int64_t npc = pc + AFRT_KC, njc = jc;
    if (npc >= K) {
        npc = 0;
        njc = jc + AFRT_NC;
    }
    if (!afrt_pf_next_ || !bs->packed || t < 1 || nt < 2 || np < 1 || njc >= j1) return;
    const int64_t nkc = afrt_min_(AFRT_KC, K - npc);
    const int64_t bytes = nkc * afrt_round_up_(afrt_min_(AFRT_NC, j1 - njc), AFRT_NR) *
                          (int64_t)sizeof(float);
    const int64_t share = (bytes + (nt - 1) * np - 1) / ((nt - 1) * np);
    *pf = (const char *)(bs->packed + npc * Np + njc * nkc) + ((t - 1) * np + p) * share;
    *pfs = afrt_min_((share + kc - 1) / kc, 64); /* at most one step per cache line */
}

/* afrt_gemm_tile_a_ in place (afrt_tile_inplace_) with K > AFRT_KC, the column block
 * [jc, jc + nc) of row tiles [i0, i1): B's k blocks all prepacked (bs->packed) or packed here
 * into kbuf one after another (k block pc at kbuf + pc * ncp: K * ncp floats must fit), then
 * each row tile runs its k blocks back to back over the block's column panels, its partial
 * sums in a stack tile (MR x ncp, in L1 at the 64 columns of a 7x7 map; the k block's A
 * panel is reused across the column panels as in the k-block-outer loop), and the last k
 * block finishes each micro-tile before its only store, the only read of its residual. The
 * products and their order per element are those of the k-block-outer loop, which kept the
 * partial sums of a whole column block in a scratch between k blocks (2048 x 64 floats for
 * ResNet-50's layer4 residual convs: 512 KiB, back from L3 once the streamed weights had
 * pushed them out of L2; issue 16, session 22). */
static inline void afrt_gemm_tile_kall_(const float *pa, int64_t MR, int64_t Mp, int64_t Np,
                                        int64_t N, int64_t K, const afrt_bsrc_ *bs, float *C,
                                        int64_t ldc, int64_t i0, int64_t i1, int64_t jc,
                                        int64_t nc, float *kbuf, const afrt_tile_finish_ *fin) {
    const int64_t ncp = afrt_round_up_(nc, AFRT_NR);
    if (!bs->packed)
        for (int64_t pc = 0; pc < K; pc += AFRT_KC)
            afrt_pack_b_src_(bs, N, pc, afrt_min_(AFRT_KC, K - pc), jc, ncp, kbuf + pc * ncp);
    /* one row tile's partial sums over the block's columns: whole MR x NR micro-tiles */
    float part[AFRT_MR * AFRT_NC];
#if defined(AFRT_UK_EPI_)
    const afrt_epi_clamp *clamp = (const afrt_epi_clamp *)fin->epi.ctx;
#endif
    for (int64_t ic = i0; ic < i1; ic += MR) {
        const int64_t mr = afrt_min_(MR, i1 - ic);
        for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
            const int64_t kc = afrt_min_(AFRT_KC, K - pc);
            const float *a = pa + pc * Mp + ic * kc;
            const float *bk = bs->packed ? bs->packed + pc * Np + jc * kc : kbuf + pc * ncp;
            for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
                const int64_t nr = afrt_min_(AFRT_NR, nc - jr);
                float *c = C + ic * ldc + jc + jr, *pt = part + jr;
                if (pc + kc < K) {
                    afrt_ukernel_cols_(MR, kc, a, bk + jr * kc, pt, ncp, pc > 0, nr);
                    continue;
                }
#if defined(AFRT_UK_EPI_)
                if (mr == MR && nr > 17) { /* whole rows; 18-31 columns masked */
                    const afrt_uk_epi_ e = {fin->alpha, clamp->lo, clamp->hi,
                                            fin->bias ? fin->bias + fin->row0 + ic : NULL, c, ldc,
                                            0, (__mmask16)~((1u << (nr - 16)) - 1u), NULL};
                    if (MR == 12) afrt_ukernel12_epi_(kc, a, bk + jr * kc, c, ldc, 1, pt, ncp, &e);
                    else afrt_ukernel8_epi_(kc, a, bk + jr * kc, c, ldc, 1, pt, ncp, &e);
                    continue;
                }
#endif
                afrt_ukernel_cols_(MR, kc, a, bk + jr * kc, pt, ncp, 1, nr);
                afrt_finish_store_inplace_(fin, c, ldc, pt, ncp, fin->row0 + ic, mr, nr);
            }
        }
    }
}

#if defined(AFRT_UK_AVX2_EPI_)
/* The AVX2 register finish of fin for a tile whose first row is r (in the epilogue's rows):
 * cl's bounds (none without cl), fin's alpha and bias; res / res_ld: the tile's residual. */
static inline afrt_uk_avx2_epi_ afrt_uk_avx2_epi_of_(const afrt_tile_finish_ *fin,
                                                     const afrt_epi_clamp *cl, int64_t r,
                                                     const float *res, int64_t res_ld) {
    const afrt_uk_avx2_epi_ e = {fin->alpha, cl ? cl->lo : -INFINITY, cl ? cl->hi : INFINITY,
                                 fin->bias ? fin->bias + r : NULL, res, res_ld};
    return e;
}
#endif

/* afrt_gemm_tile_ with A packed (pa) or, pa == NULL, unpacked (direct A: row-major op(A) at
 * ra, ld lda; only where AFRT_UK_EPI_ has the direct-A kernels, never in place). Direct A:
 * whole MR-row tiles read the rows straight from ra; the edge rows (M mod MR) and tiles
 * with fewer than NR columns pack their rows' kc block into a panel on the stack first. */
static inline void afrt_gemm_tile_a_(const float *pa, const float *ra, int64_t lda, int64_t M,
                                     int64_t N, int64_t K, const afrt_bsrc_ *bs, float *C,
                                     int64_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                     float *kbuf, int acc0, const afrt_tile_finish_ *fin) {
    /* direct A has no panel layout to match: 12-row tiles whatever M, the rest in 4 or 8 */
    const int64_t MR = pa ? afrt_choose_mr_(M) : 12;
    const int64_t Mp = afrt_round_up_(M, MR), Np = afrt_round_up_(N, AFRT_NR);
    float tmp[AFRT_MR * AFRT_NR];
    const int inpl = !acc0 && afrt_tile_inplace_(fin, C, ldc);
    const int64_t ldp = afrt_round_up_(afrt_min_(AFRT_NC, j1 - j0), AFRT_NR);
    /* in place with K > AFRT_KC: the partial sums of a column block between k blocks in a
     * scratch (part), or, where the tile has more rows than K (the scratch would be larger
     * than all of K's B) and all of K's B can be had at once, afrt_gemm_tile_kall_. With
     * fewer rows the scratch stays in L2 and the k-block-outer loop was the faster one
     * (EfficientNet-B0's 1152 -> 192 on 7x7: 1.04-1.06x with kall, kernel_ab) */
    const int kall = inpl && K > AFRT_KC && K <= afrt_round_up_(i1 - i0, MR) &&
                     (bs->packed || (kbuf && K * ldp <= AFRT_KC * AFRT_NC));
    float *part = NULL;
    if (inpl && K > AFRT_KC && !kall)
        part = (float *)afrt_thread_scratch(
            12, (size_t)(afrt_round_up_(i1 - i0, MR) * ldp) * sizeof(float));
    if (inpl && ((K > AFRT_KC && !kall && !part) || (!kbuf && !bs->packed))) {
        /* out of memory: each micro-tile runs all its k blocks in tmp, its B panel packed
         * AFRT_LEAN_KS rows at a time into a buffer on the stack (slow, but needs no memory,
         * and no partial sum ever reaches C: the residual is read just before its store) */
        float panel[AFRT_LEAN_KS * AFRT_NR];
        for (int64_t ic = i0; ic < i1; ic += MR)
            for (int64_t jc = j0; jc < j1; jc += AFRT_NR) {
                for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
                    const int64_t kc = afrt_min_(AFRT_KC, K - pc);
                    for (int64_t k0 = 0; k0 < kc; k0 += AFRT_LEAN_KS) {
                        const int64_t ks = afrt_min_(AFRT_LEAN_KS, kc - k0);
                        const float *bp = panel;
                        if (bs->packed) bp = bs->packed + pc * Np + jc * kc + k0 * AFRT_NR;
                        else afrt_pack_b_src_(bs, N, pc + k0, ks, jc, AFRT_NR, panel);
                        afrt_ukernel_(MR, ks, pa + pc * Mp + ic * kc + k0 * MR, bp, tmp, AFRT_NR,
                                      pc > 0 || k0 > 0);
                    }
                }
                afrt_finish_store_inplace_(fin, C + ic * ldc + jc, ldc, tmp, AFRT_NR, fin->row0 + ic,
                                           afrt_min_(MR, i1 - ic), afrt_min_(AFRT_NR, j1 - jc));
            }
        return;
    }
#if defined(AFRT_UK_EPI_)
    /* the built-in clamp, SiLU and GELU epilogues: in the micro-kernel's registers (edge tiles:
     * right after their store); other epilogues (and every epilogue without AFRT_UK_EPI_)
     * once per piece */
    const afrt_epi_bias_clamp *bclamp = fin && fin->epi.fn == afrt_epi_bias_clamp_fn
                                            ? (const afrt_epi_bias_clamp *)fin->epi.ctx
                                            : NULL;
    const afrt_epi_clamp *clamp = bclamp ? &bclamp->cl
                                  : fin && fin->epi.fn == afrt_epi_clamp_fn
                                      ? (const afrt_epi_clamp *)fin->epi.ctx
                                      : NULL;
    const afrt_epi_silu *silu = fin ? afrt_epi_builtin_silu_(fin->epi) : NULL;
    const afrt_epi_gelu *gelu = fin ? afrt_epi_builtin_gelu_(fin->epi) : NULL;
    /* a bias with no epilogue (a conv whose BatchNorm was folded, nothing else fused) also
     * finishes in the registers: as a pass over each stored row panel it cost a 64 -> 256 1x1
     * conv on 56x56 ~10% over the conv without bias (benchmarks/conv_epilogue.py --against
     * bare), where the unfused build's BatchNorm is a kernel of its own */
    const int reg = clamp || silu || gelu || (fin && fin->bias && !fin->epi.fn);
#elif defined(AFRT_UK_AVX2_EPI_)
    /* the built-in clamp (+ residual) and a bias alone: whole micro-tiles in the AVX2
     * kernel's registers (afrt_uk_avx2_epi_of_), edge tiles right after their store */
    const afrt_epi_clamp *clamp = fin && fin->epi.fn == afrt_epi_clamp_fn
                                      ? (const afrt_epi_clamp *)fin->epi.ctx
                                      : NULL;
    const int reg = clamp || (fin && fin->bias && !fin->epi.fn);
#else
    const int reg = 0;
#endif
    for (int64_t jc = j0; jc < j1; jc += AFRT_NC) {
        const int64_t nc = afrt_min_(AFRT_NC, j1 - jc);
        const int64_t ncp = afrt_round_up_(nc, AFRT_NR);
        if (kall) {
            afrt_gemm_tile_kall_(pa, MR, Mp, Np, N, K, bs, C, ldc, i0, i1, jc, nc, kbuf, fin);
            continue;
        }
        for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
            const int64_t kc = afrt_min_(AFRT_KC, K - pc);
            const float *bp;
            if (bs->packed) {
                bp = bs->packed + pc * Np + jc * kc;
            } else {
                afrt_pack_b_src_(bs, N, pc, kc, jc, ncp, kbuf);
                bp = kbuf;
            }
            const float *ap = pa ? pa + pc * Mp : NULL;
            /* direct A's full row tiles and whole panels, which prefetch the next B block */
            const int64_t nt = (i1 - i0) / MR, np = nc / AFRT_NR;
            for (int64_t ic = i0; ic < i1; ic += MR) {
                const int64_t mr = afrt_min_(MR, i1 - ic);
                /* direct A: the whole tile's rows (ar), or this edge panel packed (a) of er
                 * rows: 4 or 8 when at most that many are left (fewer FMAs), else MR */
                const float *a = ap ? ap + ic * kc : NULL;
#if defined(AFRT_UK_EPI_)
                const float *ar = !ap && mr == MR ? ra + ic * lda + pc : NULL;
                /* edge rows: a 4-, 8- or MR-row kernel, whichever is the least that covers
                 * them; A's step per k (as) is er in a panel packed here, MR in a packed
                 * constant's zero-padded last panel (4 of 64 conv channels: 4 rows of FMAs) */
                const int64_t er = mr > 8 ? MR : mr > 4 ? 8 : 4;
                const int64_t as = ap ? MR : er;
                float apanel[AFRT_MR * AFRT_KC];
#define AFRT_TILE_A_()                                                                         \
    (a ? a : (afrt_pack_rows_n_(ra + ic * lda + pc, lda, mr, er, kc, apanel), a = apanel))
#else
                (void)ra;
                (void)lda;
                (void)nt;
                (void)np;
                const int64_t as = MR;
#define AFRT_TILE_A_() a
#endif
                const int last = fin && pc + kc >= K;
                if (inpl) {
                    for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
                        const int64_t nr = afrt_min_(AFRT_NR, nc - jr);
                        float *c = C + ic * ldc + jc + jr;
                        /* this micro-tile's partial sums (whole MR x NR; padded rows/columns) */
                        float *pt = part ? part + (ic - i0) * ldp + jr : tmp;
                        const int64_t ldt = part ? ldp : AFRT_NR;
                        if (!last) {
                            afrt_ukernel_cols_(MR, kc, a, bp + jr * kc, pt, ldt, pc > 0, nr);
                            continue;
                        }
#if defined(AFRT_UK_EPI_)
                        if (mr == MR && nr > 17) { /* whole rows; 18-31 columns masked */
                            const int64_t r = fin->row0 + ic;
                            const afrt_uk_epi_ e = {fin->alpha, clamp->lo, clamp->hi,
                                                    fin->bias ? fin->bias + r : NULL, c, ldc, 0,
                                                    (__mmask16)~((1u << (nr - 16)) - 1u), NULL};
                            if (MR == 12)
                                afrt_ukernel12_epi_(kc, a, bp + jr * kc, c, ldc, pc > 0, pt, ldt, &e);
                            else afrt_ukernel8_epi_(kc, a, bp + jr * kc, c, ldc, pc > 0, pt, ldt, &e);
                            continue;
                        }
#elif defined(AFRT_UK_AVX2_EPI_)
                        if (mr == MR && nr == AFRT_NR) { /* whole tiles; the residual is c */
                            const afrt_uk_avx2_epi_ e =
                                afrt_uk_avx2_epi_of_(fin, clamp, fin->row0 + ic, c, ldc);
                            afrt_ukernel_avx2_epi_(MR, kc, a, bp + jr * kc, c, ldc, pc > 0, pt, ldt,
                                                   &e);
                            continue;
                        }
#endif
                        afrt_ukernel_cols_(MR, kc, a, bp + jr * kc, pt, ldt, pc > 0, nr);
                        afrt_finish_store_inplace_(fin, c, ldc, pt, ldt, fin->row0 + ic, mr, nr);
                    }
                    continue;
                }
                for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
                    const int64_t nr = afrt_min_(AFRT_NR, nc - jr);
                    float *c = C + ic * ldc + jc + jr;
                    const int acc = pc > 0 || acc0;
                    if (mr == MR && nr == AFRT_NR) {
#if defined(AFRT_UK_EPI_)
                        if (last && reg) {
                            const int64_t r = fin->row0 + ic, col = fin->col0 + jc + jr;
                            const afrt_uk_epi_ e = {
                                fin->alpha, clamp ? clamp->lo : -INFINITY,
                                clamp ? clamp->hi : INFINITY, fin->bias ? fin->bias + r : NULL,
                                clamp && clamp->res
                                    ? afrt_epi_clamp_res_(clamp, fin->batch, r) + col
                                    : NULL,
                                clamp ? clamp->res_ld : 0, silu ? 1 + silu->gate : gelu ? 3 : 0, 0,
                                bclamp ? bclamp->cbias + col
                                : gelu && gelu->cbias ? gelu->cbias + col
                                                      : NULL};
                            if (ar) { /* direct A: MR is 12 */
                                const char *pf;
                                int64_t pfs;
                                afrt_next_b_(bs, Np, K, jc, j1, pc, kc, nt, np, (ic - i0) / MR,
                                             jr / AFRT_NR, bp + jr * kc, &pf, &pfs);
                                afrt_ukernel12_ra_epi_(kc, ar, lda, pf, pfs, bp + jr * kc, c, ldc,
                                                       acc, c, ldc, &e);
                            }
                            else if (MR == 12)
                                afrt_ukernel12_epi_(kc, a, bp + jr * kc, c, ldc, acc, c, ldc, &e);
                            else afrt_ukernel8_epi_(kc, a, bp + jr * kc, c, ldc, acc, c, ldc, &e);
                            continue;
                        }
                        if (ar) {
                            const char *pf;
                            int64_t pfs;
                            afrt_next_b_(bs, Np, K, jc, j1, pc, kc, nt, np, (ic - i0) / MR,
                                         jr / AFRT_NR, bp + jr * kc, &pf, &pfs);
                            afrt_ukernel12_ra_(kc, ar, lda, pf, pfs, bp + jr * kc, c, ldc, acc);
                        } else
#endif
#if defined(AFRT_UK_AVX2_EPI_)
                        if (last && reg) {
                            const int64_t r = fin->row0 + ic, col = fin->col0 + jc + jr;
                            const float *res = clamp ? afrt_epi_clamp_res_(clamp, fin->batch, r)
                                                     : NULL;
                            const afrt_uk_avx2_epi_ e = afrt_uk_avx2_epi_of_(
                                fin, clamp, r, res ? res + col : NULL, clamp ? clamp->res_ld : 0);
                            afrt_ukernel_avx2_epi_(MR, kc, a, bp + jr * kc, c, ldc, acc, c, ldc, &e);
                            continue;
                        }
#endif
                        afrt_ukernel_(MR, kc, a, bp + jr * kc, c, ldc, acc);
#if defined(__AVX512F__) && !defined(AFRT_NEON_)
                    } else if (nr <= 16 && (MR == 12 || MR == 8)) {
                        const __mmask16 m = (__mmask16)((1u << nr) - 1u);
                        if (er == 12) afrt_ukernel12h_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr, m);
                        else if (er == 8) afrt_ukernel8h_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr, m);
                        else afrt_ukernel4h_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr, m);
                    } else if (nr == 17 && (MR == 12 || MR == 8)) { /* 16 columns and one */
                        if (er == 12) afrt_ukernel12h1_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr, (__mmask16)0xffff);
                        else if (er == 8) afrt_ukernel8h1_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr, (__mmask16)0xffff);
                        else afrt_ukernel4h1_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr, (__mmask16)0xffff);
                    } else if (nr == AFRT_NR && (MR == 12 || MR == 8)) {
                        if (er == 12) afrt_ukernel12r_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr);
                        else if (er == 8) afrt_ukernel8r_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr);
                        else afrt_ukernel4r_(kc, AFRT_TILE_A_(), as, bp + jr * kc, c, ldc, acc, mr);
#endif
                    } else {
                        if (acc)
                            for (int64_t i = 0; i < mr; ++i)
                                for (int64_t j = 0; j < nr; ++j) tmp[i * AFRT_NR + j] = c[i * ldc + j];
                        afrt_ukernel_(as, kc, AFRT_TILE_A_(), bp + jr * kc, tmp, AFRT_NR, acc);
                        for (int64_t i = 0; i < mr; ++i)
                            for (int64_t j = 0; j < nr; ++j) c[i * ldc + j] = tmp[i * AFRT_NR + j];
                    }
                    if (last && reg) afrt_tile_finish_piece_(fin, C, ldc, ic, ic + mr, jc + jr, jc + jr + nr);
                }
                if (last && !reg) afrt_tile_finish_piece_(fin, C, ldc, ic, ic + mr, jc, jc + nc);
            }
        }
    }
#undef AFRT_TILE_A_
}

static inline void afrt_gemm_tile_(const float *pa, int64_t M, int64_t N, int64_t K,
                                  const afrt_bsrc_ *bs, float *C, int64_t ldc, int64_t i0,
                                  int64_t i1, int64_t j0, int64_t j1, float *kbuf, int acc0,
                                  const afrt_tile_finish_ *fin) {
    afrt_gemm_tile_a_(pa, NULL, 0, M, N, K, bs, C, ldc, i0, i1, j0, j1, kbuf, acc0, fin);
}

/* Whether afrt_matmul_own_ reads a row-major, non-constant A unpacked (direct A) rather than
 * packing it. Packing costs a pass over A (read, scattered write, read back) shared by the
 * ceil(N / NR) column panels each A panel serves, and direct A's edge rows take 4-, 8- or
 * 12-row tiles where packed panels pad to MR: measured (benchmarks/gemm_direct_a.py, one
 * core, warm and cold) direct A is 1.0-1.45x faster on every shape tried, from 1x2048x1000 to
 * 256x1024x8192, most at small N or K (3136x96x96 1.45x, 197x768x192 1.25x), so with AVX-512
 * it is always taken. afrt_direct_a_: -1 that, 0 never, 1 always (where it can run at all),
 * for benchmarks and tests comparing the two paths. */
static int afrt_direct_a_ = -1;
static inline int afrt_gemm_direct_a_(void) {
#if defined(AFRT_UK_EPI_)
    return afrt_direct_a_ != 0;
#else
    (void)afrt_direct_a_;
    return 0;
#endif
}

/* Row/column split of an M x N output into tasks: row blocks of MR multiples, column blocks
 * of NC multiples, enough tasks for the threads. */
static inline void afrt_gemm_split_(int64_t M, int64_t N, int64_t batch_tasks, int64_t *mb,
                                    int64_t *nb) {
    const int64_t nth = afrt_num_threads_;
    const int64_t MR = afrt_choose_mr_(M);
    int64_t m = afrt_round_up_(M, MR), n = afrt_round_up_(N, AFRT_NR);
    /* keep a C block within the tile budget so the epilogue finds it in L2 */
    while (m * n * 4 > AFRT_TILE_BYTES && n > AFRT_NC) n = afrt_round_up_(afrt_cdiv_(n, 2), AFRT_NR);
    while (m * n * 4 > AFRT_TILE_BYTES && m > 8 * MR) m = afrt_round_up_(afrt_cdiv_(m, 2), MR);
    while (batch_tasks * afrt_nblocks_(M, m) * afrt_nblocks_(N, n) < nth) {
        if (n >= 2 * AFRT_NR * 4 && n >= m) n = afrt_round_up_(afrt_cdiv_(n, 2), AFRT_NR);
        else if (m >= 2 * MR) m = afrt_round_up_(afrt_cdiv_(m, 2), MR);
        else if (n >= 2 * AFRT_NR) n = afrt_round_up_(afrt_cdiv_(n, 2), AFRT_NR);
        else break;
    }
    *mb = m;
    *nb = n;
}

/* Micro-kernel work of [i0, i1) along a dimension of `total` in units of u (a row panel of MR
 * rows, a column panel of 32): whole units, and a last partial unit of the dimension as the
 * kernel that runs it (`small` rows or columns: the 4- and 8-row kernels for rows, the
 * half-width kernel for at most 16 columns with AVX-512; else a whole unit). */
static inline int64_t afrt_split_work_(int64_t total, int64_t u, int small, int64_t i0,
                                       int64_t i1) {
    const int64_t part = (i1 - i0) % u;
    int64_t w = (i1 - i0) - part;
    if (part) {
        if (i1 != total) w += u;
        else if (small == 2) w += part <= 4 ? 4 : part <= 8 ? 8 : u; /* rows */
        else if (small == 1) w += part <= 16 ? 16 : u;                 /* AVX-512 columns */
        else w += u;
    }
    return w;
}

/* Block size for `count` blocks of [0, total) in units of u, the last block taking the rest:
 * of the cdiv-based size (blk, what the halving gave) and the sizes around total / count,
 * the one whose largest block has least micro-kernel work (ties keep blk). */
static inline int64_t afrt_split_even_(int64_t total, int64_t u, int small, int64_t count,
                                       int64_t blk) {
    int64_t best = blk, best_w = 0;
    const int64_t down = (total / count) / u * u, up = afrt_round_up_(afrt_cdiv_(total, count), u);
    const int64_t cand[3] = {blk, up, down};
    for (int c = 0; c < 3; ++c) {
        const int64_t b = cand[c];
        if (b < u || (count - 1) * b >= total) continue;
        const int64_t last = afrt_split_work_(total, u, small, (count - 1) * b, total);
        const int64_t w = afrt_max_(b, last);
        if (c == 0 || w < best_w) best = b, best_w = w;
    }
    return best;
}

/* afrt_split_balance_: 0 keeps the thread split as it was before the blocks were evened out
 * (afrt_gemm_split_even_: cdiv blocks; afrt_conv_own_: the shared B packed in whole k
 * blocks), for benchmarks comparing the two. */
static int afrt_split_balance_ = 1;

/* afrt_gemm_split_ and the block counts, for one task (one image and group, batch_tasks 1)
 * split among the threads with one block per thread: then the blocks are evened out, the
 * last taking the rest (block b of nm covers [b*mb, b + 1 == nm ? M : (b + 1)*mb)). Halving
 * alone left one thread most of the work: 128 output channels in 12-row panels as 72 rows
 * against 56 (now 60 and 68), 784 positions as 416 columns against 368 (now 384 and 400).
 * The split keeps its direction and its count of blocks, so the threads share the same data
 * as before; any split gives the same bits (each output element is one tile's). */
static inline void afrt_gemm_split_even_(int64_t M, int64_t N, int64_t batch_tasks, int64_t *mb,
                                         int64_t *nb, int64_t *nm, int64_t *nn) {
    afrt_gemm_split_(M, N, batch_tasks, mb, nb);
    *nm = afrt_nblocks_(M, *mb);
    *nn = afrt_nblocks_(N, *nb);
    if (!afrt_split_balance_ || batch_tasks != 1 || *nm * *nn != afrt_num_threads_ ||
        *nm * *nn < 2)
        return;
#if defined(__AVX512F__)
    const int cols_small = 1;
#else
    const int cols_small = 0;
#endif
    if (*nm > 1) *mb = afrt_split_even_(M, afrt_choose_mr_(M), 2, *nm, *mb);
    if (*nn > 1) *nb = afrt_split_even_(N, AFRT_NR, cols_small, *nn, *nb);
}

/* afrt_gemm_split_even_'s block b of nblk blocks of size blk over [0, total): its end. */
static inline int64_t afrt_split_end_(int64_t b, int64_t nblk, int64_t blk, int64_t total) {
    return b + 1 == nblk ? total : afrt_min_(total, (b + 1) * blk);
}

/* A matrix-vector multiply-add streams its weight from memory (a model's weights are not in
 * cache): about 16 GEMM multiply-adds of time (1152 -> 48 in a model, 221 KB of weights: 16
 * us on one thread, ~3.5 G multiply-adds/s against the core's ~50), so EfficientNet-B0's
 * 1152-channel SE convs split over two threads and its 672-channel ones do not. */
#ifndef AFRT_GEMV_WORK
#define AFRT_GEMV_WORK 16.0
#endif
/* y[k] = sum_c w[k * ldw + c] x[c] for the rows k of [k0, k1) (no bias): four rows share
 * each load of x, 16 lanes of partial sums per row, summed in a fixed order (the same bits
 * for a row whichever block it is in). Used by the 1x1 conv on a one-position map
 * (afrt_conv_gemv_f32_) and by a one-row matmul against a transposed B (afrt_matmul_gemv_). */
static inline void afrt_gemv_rows_(const float *restrict w, int64_t ldw, const float *restrict x,
                                   int64_t C, int64_t k0, int64_t k1, float *restrict y) {
    int64_t k = k0;
#if defined(__AVX512F__)
    for (; k + 4 <= k1; k += 4) {
        const float *w0 = w + k * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t c = 0; c < C; c += 16) {
            const __mmask16 m = C - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (C - c)) - 1u);
            const __m512 xv = _mm512_maskz_loadu_ps(m, x + c);
            /* the next four rows' line at c: the rows stream from memory, and the hardware
             * prefetcher alone left ~10% of the bandwidth unused (1000 x 1280 cold) */
            for (int r = 4; r < 8; ++r) _mm_prefetch(AFRT_PF_ADDR(w0, r * ldw + c), _MM_HINT_T0);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + c), xv, a0);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w1 + c), xv, a1);
            a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w2 + c), xv, a2);
            a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w3 + c), xv, a3);
        }
        y[k] = _mm512_reduce_add_ps(a0);
        y[k + 1] = _mm512_reduce_add_ps(a1);
        y[k + 2] = _mm512_reduce_add_ps(a2);
        y[k + 3] = _mm512_reduce_add_ps(a3);
    }
    for (; k < k1; ++k) {
        const float *wk = w + k * ldw;
        __m512 a = _mm512_setzero_ps();
        for (int64_t c = 0; c < C; c += 16) {
            const __mmask16 m = C - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (C - c)) - 1u);
            a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wk + c), _mm512_maskz_loadu_ps(m, x + c), a);
        }
        y[k] = _mm512_reduce_add_ps(a);
    }
#else
    /* 16 lanes of partial sums per row (a loop the compiler can vectorise without
     * reassociating), then the lanes summed in order */
    for (; k < k1; ++k) {
        const float *wk = w + k * ldw;
        float a[16] = {0};
        int64_t c = 0;
        for (; c + 16 <= C; c += 16)
            for (int l = 0; l < 16; ++l) a[l] += wk[c + l] * x[c + l];
        for (int l = 0; c + l < C; ++l) a[l] += wk[c + l] * x[c + l];
        float s = 0.0f;
        for (int l = 0; l < 16; ++l) s += a[l];
        y[k] = s;
    }
#endif
}

/* ---------------------------------------------------------------------------------------------
 * Matmul.
 *
 * For b in [0, batch): C_b = alpha * op(A_b) @ op(B_b) + beta * C_b, then the epilogue on C_b.
 *   op(A_b) is [M, K]: A_b = A + b*stride_a, element (i, p) = trans_a ? A_b[p*lda + i]
 *                                                                    : A_b[i*lda + p];
 *   op(B_b) is [K, N]: B_b = B + b*stride_b, element (p, j) = trans_b ? B_b[j*ldb + p]
 *                                                                    : B_b[p*ldb + j];
 *   C_b = C + b*stride_c, element (i, j) = C_b[i*ldc + j].
 * stride_a / stride_b may be 0 (broadcast one matrix over the batch). With beta == 0, C is
 * write-only (may hold garbage/NaN). Used for nn.matmul, nn.gemm and attention pieces.
 * ------------------------------------------------------------------------------------------- */
/* One row of A against a transposed B (a classifier's Gemm at batch 1: x [1, K] times its
 * weight [N, K] as it lies) is N dot products. The GEMM core ran it as one row of an MR-row
 * tile over B packed into NR-wide panels: MobileNet-V2's 1280 -> 1000 took 0.38 ms on one
 * thread (5 MB of weights read once, ~13 GB/s) against OpenVINO's 0.20 (docs/runtime.md,
 * "MobileNet-V2 at two threads (session 21)"). Here afrt_gemv_rows_ reads the rows in place,
 * 64 at a time into a local buffer, then C = alpha * dot + beta * C (C not read when beta is
 * 0) and the epilogue on each finished block. Above the parallel threshold (AFRT_GEMV_WORK)
 * each thread takes one block of columns (a multiple of 16) per batch item; every output has
 * the same bits at any thread count. */
static inline int afrt_matmul_gemv_applies(int64_t M, int64_t K, int trans_a, int trans_b) {
    return M == 1 && K > 0 && !trans_a && trans_b;
}

static inline void afrt_matmul_gemv_(int64_t batch, int64_t N, int64_t K, float alpha,
                                     const float *A, int64_t stride_a, const float *B,
                                     int64_t ldb, int64_t stride_b, float beta, float *C,
                                     int64_t ldc, int64_t stride_c, afrt_epilogue epi) {
    const int par = afrt_num_threads_ > 1 &&
                    afrt_worth_threads_(AFRT_GEMV_WORK * (double)batch * N * K);
    const int64_t cb = par ? 16 * afrt_cdiv_(afrt_cdiv_(N, 16), afrt_num_threads_) : N;
    const int64_t ncb = afrt_cdiv_(N, cb), tasks = batch * ncb;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        const int64_t b = t / ncb, j0 = (t % ncb) * cb, j1 = afrt_min_(N, j0 + cb);
        const float *Ab = A + b * stride_a, *Bb = B + b * stride_b;
        float *Cb = C + b * stride_c;
        float dots[64];
        for (int64_t j = j0; j < j1; j += 64) {
            const int64_t n = afrt_min_(64, j1 - j);
            afrt_gemv_rows_(Bb + j * ldb, ldb, Ab, K, 0, n, dots);
            for (int64_t i = 0; i < n; ++i)
                Cb[j + i] = beta == 0.0f ? alpha * dots[i] : alpha * dots[i] + beta * Cb[j + i];
        }
        if (epi.fn) epi.fn(epi.ctx, Cb, b, 0, 1, j0, j1, ldc);
    }
}

/* The afrt core for afrt_matmul_f32 (alpha != 0); returns 0 (caller falls back to
 * OpenBLAS) if it cannot get memory. */
static inline int afrt_matmul_own_(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                                   const float *A, int64_t lda, int64_t stride_a, int trans_a,
                                   const float *B, int64_t ldb, int64_t stride_b, int trans_b,
                                   float beta, float *C, int64_t ldc, int64_t stride_c,
                                   afrt_epilogue epi) {
    const int64_t na = stride_a == 0 ? 1 : batch, nb = stride_b == 0 ? 1 : batch;
    const float **pas = (const float **)afrt_malloc_((size_t)(na + nb) * sizeof(float *));
    if (!pas) return 0;
    const float **pbs = pas + na;
    for (int64_t b = 0; b < nb; ++b)
        pbs[b] = afrt_packed_const_(B + b * stride_b, K, N, ldb, trans_b, 1);
    /* direct A (pas[i] NULL: A read unpacked), unless A is constant (packed once, cached) or
     * some batch item's output is its residual, computed in place (afrt_tile_inplace_, as the
     * tiles below will see it: afrt_gemm_tile_a_ needs A packed there) */
    int direct = !trans_a && afrt_gemm_direct_a_();
    for (int64_t b = 0; b < batch && direct && beta == 0.0f && epi.fn == afrt_epi_clamp_fn; ++b) {
        const afrt_tile_finish_ fin = {C + b * stride_c, NULL, alpha, b, 0, 0, epi};
        direct = !afrt_tile_inplace_(&fin, C + b * stride_c, ldc);
    }
    for (int64_t i = 0; i < na && direct; ++i)
        direct = afrt_packed_const_(A + i * stride_a, M, K, lda, trans_a, 0) == NULL;
    if (direct) {
        for (int64_t i = 0; i < na; ++i) pas[i] = NULL;
    } else if (!afrt_pack_a_all_(A, stride_a, na, M, K, lda, trans_a, pas)) {
        free(pas);
        return 0;
    }
    int64_t mb, nbk;
    afrt_gemm_split_(M, N, batch, &mb, &nbk);
    const int64_t nmb = afrt_nblocks_(M, mb), nnb = afrt_nblocks_(N, nbk);
    const int64_t ntiles = batch * nmb * nnb;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntiles > 1 && afrt_worth_threads_((double)batch * M * N * K)))
    for (int64_t t = 0; t < ntiles; ++t) {
        afrt_arrive_();
        const int64_t b = t / (nmb * nnb), rest = t % (nmb * nnb);
        const int64_t i0 = (rest / nnb) * mb, j0 = (rest % nnb) * nbk;
        const int64_t i1 = afrt_min_(M, i0 + mb), j1 = afrt_min_(N, j0 + nbk);
        float *Cb = C + b * stride_c;
        float *kbuf = (float *)afrt_thread_scratch(0, (size_t)AFRT_KC * AFRT_NC * sizeof(float));
        const afrt_tile_finish_ fin = {Cb, NULL, alpha, b, 0, 0, epi};
        /* out of memory for packing: this tile through afrt_sgemm_ (its own fallback needs
         * none), unless C holds the residual: afrt_sgemm_ would overwrite it before the
         * epilogue reads it, and afrt_gemm_tile_ has an in-place path that needs no kbuf */
        if (!kbuf && (beta != 0.0f || !afrt_tile_inplace_(&fin, Cb, ldc))) {
            const float *Ab = A + b * stride_a, *Bb = B + b * stride_b;
            afrt_sgemm_(trans_a, trans_b, i1 - i0, j1 - j0, K, alpha,
                        trans_a ? Ab + i0 : Ab + i0 * lda, lda,
                        trans_b ? Bb + j0 * ldb : Bb + j0, ldb, beta, Cb + i0 * ldc + j0, ldc);
        } else {
            afrt_bsrc_ bs = {pbs[stride_b == 0 ? 0 : b], B + b * stride_b, ldb, trans_b, NULL, NULL, 0, NULL, 0, NULL};
            if (beta != 0.0f && beta != alpha) /* alpha * (AB + (beta/alpha) C) */
                for (int64_t i = i0; i < i1; ++i)
                    for (int64_t j = j0; j < j1; ++j) Cb[i * ldc + j] *= beta / alpha;
            afrt_gemm_tile_a_(pas[stride_a == 0 ? 0 : b], A + b * stride_a, lda, M, N, K, &bs, Cb,
                              ldc, i0, i1, j0, j1, kbuf, beta != 0.0f, &fin);
            continue;
        }
        if (epi.fn) epi.fn(epi.ctx, Cb, b, i0, i1, j0, j1, ldc);
    }
    free(pas);
    return 1;
}

#ifndef AFRT_OPENBLAS
/* afrt_sgemm_ without OpenBLAS: op(A) packed into this thread's slot 4, B blocks packed into
 * slot 5, the whole C through afrt_gemm_tile_ on the calling thread (callers run it inside
 * their own parallel loops). Plain loops if the scratch cannot be had. */
static inline void afrt_sgemm_own_(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                                   const float *a, int64_t lda, const float *b, int64_t ldb,
                                   float beta, float *c, int64_t ldc) {
    const int64_t Mp = afrt_round_up_(m, afrt_choose_mr_(m));
    float *pa = (float *)afrt_thread_scratch(4, (size_t)(Mp * k) * sizeof(float));
    float *kbuf = (float *)afrt_thread_scratch(5, (size_t)AFRT_KC * AFRT_NC * sizeof(float));
    if (!pa || !kbuf) {
        for (int64_t i = 0; i < m; ++i) {
            float *ci = c + i * ldc;
            for (int64_t j = 0; j < n; ++j) ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
            for (int64_t p = 0; p < k; ++p) {
                const float av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
                for (int64_t j = 0; j < n; ++j) ci[j] += av * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            }
        }
        return;
    }
    afrt_pack_a_(a, lda, ta, m, k, pa);
    if (beta != 0.0f && beta != alpha) /* alpha * (AB + (beta/alpha) C), as afrt_matmul_own_ */
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= beta / alpha;
    afrt_bsrc_ bs = {NULL, b, ldb, tb, NULL, NULL, 0, NULL, 0, NULL};
    afrt_gemm_tile_(pa, m, n, k, &bs, c, ldc, 0, m, 0, n, kbuf, beta != 0.0f, NULL);
    if (alpha != 1.0f)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] *= alpha;
}
#endif

static inline void afrt_matmul_any_f32_(int64_t batch, int64_t M, int64_t N, int64_t K,
                                        float alpha, const float *A, int64_t lda, int64_t stride_a,
                                        int trans_a, const float *B, int64_t ldb, int64_t stride_b,
                                        int trans_b, float beta, float *C, int64_t ldc,
                                        int64_t stride_c, afrt_epilogue epi) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    afrt_init_once_();
    if (afrt_matmul_gemv_applies(M, K, trans_a, trans_b)) {
        afrt_matmul_gemv_(batch, N, K, alpha, A, stride_a, B, ldb, stride_b, beta, C, ldc,
                          stride_c, epi);
        return;
    }
    if (afrt_gemm_strategy_ == AFRT_GEMM_OWN && alpha != 0.0f && K > 0 &&
        afrt_matmul_own_(batch, M, N, K, alpha, A, lda, stride_a, trans_a, B, ldb, stride_b,
                         trans_b, beta, C, ldc, stride_c, epi))
        return;
    if (afrt_gemm_strategy_ == AFRT_GEMM_WHOLE) {
        for (int64_t b = 0; b < batch; ++b)
            afrt_sgemm_(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b,
                        ldb, beta, C + b * stride_c, ldc);
        if (epi.fn) {
            const int64_t rb = afrt_max_(1, afrt_min_(M, 16));
            const int64_t nrb = afrt_nblocks_(M, rb);
            AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()))
            for (int64_t t = 0; t < batch * nrb; ++t) {
                afrt_arrive_();
                const int64_t b = t / nrb, r0 = (t % nrb) * rb;
                epi.fn(epi.ctx, C + b * stride_c, b, r0, afrt_min_(M, r0 + rb), 0, N, ldc);
            }
        }
        return;
    }
    /* Tiled: enough tiles for every thread, each tile's C within the tile budget. */
    const int64_t nth = afrt_num_threads_;
    int64_t nb = N, mb = M;
    const int64_t budget = AFRT_TILE_BYTES / 4; /* floats of C per tile */
    while (mb * nb > budget && nb > 64) nb = afrt_cdiv_(nb, 2);
    while (mb * nb > budget && mb > 64) mb = afrt_cdiv_(mb, 2);
    while (batch * afrt_nblocks_(M, mb) * afrt_nblocks_(N, nb) < nth) {
        if (nb >= mb && nb > 32) nb = afrt_cdiv_(nb, 2);
        else if (mb > 16) mb = afrt_cdiv_(mb, 2);
        else break;
    }
    if (nb < N) nb = afrt_min_(N, afrt_cdiv_(nb, 16) * 16);
    const int64_t nmb = afrt_nblocks_(M, mb), nnb = afrt_nblocks_(N, nb);
    const int64_t ntiles = batch * nmb * nnb;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntiles > 1))
    for (int64_t t = 0; t < ntiles; ++t) {
        afrt_arrive_();
        const int64_t b = t / (nmb * nnb), rest = t % (nmb * nnb);
        const int64_t i0 = (rest / nnb) * mb, j0 = (rest % nnb) * nb;
        const int64_t i1 = afrt_min_(M, i0 + mb), j1 = afrt_min_(N, j0 + nb);
        const float *Ab = A + b * stride_a, *Bb = B + b * stride_b;
        float *Cb = C + b * stride_c;
        const float *Ai = trans_a ? Ab + i0 : Ab + i0 * lda;
        const float *Bj = trans_b ? Bb + j0 * ldb : Bb + j0;
        afrt_sgemm_(trans_a, trans_b, i1 - i0, j1 - j0, K, alpha, Ai, lda, Bj, ldb, beta,
                    Cb + i0 * ldc + j0, ldc);
        if (epi.fn) epi.fn(epi.ctx, Cb, b, i0, i1, j0, j1, ldc);
    }
}

/* The output may be the residual of a built-in clamp epilogue (afrt_epi_aliases_, beta 0):
 * afrt's own GEMM core computes it in place; the other strategies get a copy of it. */
static inline void afrt_matmul_f32(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                                   const float *A, int64_t lda, int64_t stride_a, int trans_a,
                                   const float *B, int64_t ldb, int64_t stride_b, int trans_b,
                                   float beta, float *C, int64_t ldc, int64_t stride_c,
                                   afrt_epilogue epi) {
    if (batch > 0 && M > 0 && N > 0 && afrt_epi_aliases_(epi, C, stride_c, ldc)) {
        afrt_init_once_();
        /* (a one-row product against a transposed B takes afrt_matmul_gemv_ on a copy) */
        if (afrt_gemm_strategy_ == AFRT_GEMM_OWN && alpha != 0.0f && K > 0 && beta == 0.0f &&
            !afrt_matmul_gemv_applies(M, K, trans_a, trans_b) &&
            afrt_matmul_own_(batch, M, N, K, alpha, A, lda, stride_a, trans_a, B, ldb, stride_b,
                             trans_b, beta, C, ldc, stride_c, epi))
            return;
        afrt_epi_clamp local;
        float *copy;
        epi = afrt_epi_detach_(epi, &local, &copy,
                               (size_t)((batch - 1) * stride_c + (M - 1) * ldc + N));
        if (!copy) { /* C still holds the residual, untouched: no result without memory */
            afrt_nomem_("afrt_matmul_f32");
            return;
        }
        afrt_matmul_any_f32_(batch, M, N, K, alpha, A, lda, stride_a, trans_a, B, ldb, stride_b,
                             trans_b, beta, C, ldc, stride_c, epi);
        free(copy);
        return;
    }
    afrt_matmul_any_f32_(batch, M, N, K, alpha, A, lda, stride_a, trans_a, B, ldb, stride_b,
                         trans_b, beta, C, ldc, stride_c, epi);
}

/* ---------------------------------------------------------------------------------------------
 * 2-d convolution, NCHW, ONNX semantics.
 *
 *   x: [N, C, H, W]   w: [K, C/group, R, S]   bias: [K] or NULL   y: [N, K, OH, OW]
 *   y[n,k,oh,ow] = bias[k] + sum_{c,r,s} w[k,c,r,s] *
 *                  x[n, g*C/group + c, oh*stride_h - pad_top + r*dil_h,
 *                                      ow*stride_w - pad_left + s*dil_w]     (0 outside)
 *   with g = k / (K/group). pad_bottom/pad_right only define OH/OW (given explicitly):
 *   OH = (H + pad_top + pad_bottom - dil_h*(R-1) - 1) / stride_h + 1, likewise OW.
 *
 * Paths: depthwise (C/group == 1) is afrt_dwconv2d_f32 (afrt_dwconv.h), or a direct loop per
 * output channel when that cannot run (out of memory, negative pads); group 1 with at most
 * AFRT_DC_MAX_C input channels is afrt_dconv_smallc_f32 (the same header); 3x3 stride-1
 * group-1 convs where afrt_winograd_applies are afrt_winograd_f32 (afrt_winograd.h); 1x1,
 * stride 1, no padding feeds x to sgemm directly; everything else goes through im2col in
 * column blocks
 * sized so the column buffer plus the output block stay in L2. The epilogue then runs on each
 * finished [Kg rows, block columns] piece (depthwise: one channel row at a time).
 *
 * scratch: at least afrt_conv2d_scratch_bytes(p) bytes (64-byte aligned is best), or NULL
 * to use the calling thread's reusable scratch (afrt_thread_scratch slot 0). The size depends on the thread count: compute
 * it after afrt_set_num_threads.
 * ------------------------------------------------------------------------------------------- */
typedef struct afrt_conv_params_s {
    int64_t N, C, H, W, K, R, S, OH, OW;
    int64_t stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dil_h, dil_w, group;
} afrt_conv_params;

/* A 3-d convolution (NCDHW, afrt_conv3d_f32): depth D, kernel depth T, output depth OD, with
 * its stride, front/back pads and dilation beside the 2-d fields. */
typedef struct afrt_conv3d_params_s {
    int64_t N, C, D, H, W, K, T, R, S, OD, OH, OW;
    int64_t stride_d, stride_h, stride_w, pad_front, pad_top, pad_left, pad_back, pad_bottom,
        pad_right, dil_d, dil_h, dil_w, group;
} afrt_conv3d_params;

/* Plan shared by scratch sizing and execution. */
typedef struct {
    int kind;        /* 0 = depthwise direct, 1 = 1x1 direct GEMM, 2 = im2col GEMM */
    int64_t cg, kg;  /* channels per group (input, output) */
    int64_t crs;     /* GEMM inner dimension */
    int64_t pb, npb; /* column block size and count per image/group */
    int64_t kb, nkb; /* row block size and count per group */
} afrt_conv_plan_;

static inline afrt_conv_plan_ afrt_conv_plan(const afrt_conv_params *p) {
    afrt_conv_plan_ q;
    const int64_t g = p->group > 0 ? p->group : 1;
    const int64_t ohw = p->OH * p->OW;
    q.cg = p->C / g;
    q.kg = p->K / g;
    q.crs = q.cg * p->R * p->S;
    if (q.cg == 1 && q.crs <= 64) q.kind = 0;
    else if (p->R == 1 && p->S == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
             p->pad_left == 0 && p->OH == p->H && p->OW == p->W)
        q.kind = 1;
    else q.kind = 2;
    /* Column block: (col buffer + output block) within the tile budget, but never narrower
     * than 256 columns (narrow panels cost OpenBLAS more than the cache misses they save);
     * blocks balanced so the last one is not a sliver. */
    const int64_t per_col = (q.kind == 2 ? q.crs : 0) + q.kg;
    int64_t pb = AFRT_TILE_BYTES / 4 / afrt_max_(1, per_col);
    pb = afrt_max_(256, pb);
    if (pb >= ohw) pb = ohw;
    q.npb = afrt_nblocks_(ohw, afrt_max_(1, pb));
    pb = afrt_cdiv_(ohw, q.npb);
    if (q.npb > 1) pb = afrt_cdiv_(pb, 16) * 16;
    q.pb = afrt_max_(1, pb);
    q.npb = afrt_nblocks_(ohw, q.pb);
    /* Row blocks only when there are fewer column tasks than threads. */
    q.kb = q.kg;
    const int64_t tasks = p->N * g * q.npb;
    const int64_t nth = afrt_num_threads_;
    if (q.kind != 0 && tasks < nth && q.kg >= 32) {
        const int64_t split = afrt_min_(afrt_cdiv_(nth, tasks), q.kg / 16);
        q.kb = afrt_cdiv_(afrt_cdiv_(q.kg, split), 16) * 16;
    }
    q.nkb = afrt_nblocks_(q.kg, q.kb);
    return q;
}

static inline size_t afrt_conv2d_scratch_bytes(const afrt_conv_params *p) {
    afrt_init_once_();
    const afrt_conv_plan_ q = afrt_conv_plan(p);
    if (q.kind != 2 || afrt_gemm_strategy_ == AFRT_GEMM_OWN) return 0;
    if (afrt_gemm_strategy_ == AFRT_GEMM_WHOLE)
        return (size_t)(q.crs * p->OH * p->OW) * sizeof(float) + 64;
    return (size_t)afrt_num_threads_ * (size_t)(q.crs * q.pb) * sizeof(float) + 64;
}

/* Direct depthwise convolution (afrt_dwconv2d_f32): its own header, copied beside this one. */
#include "afrt_dwconv.h"
/* Winograd F(4x4, 3x3) for 3x3 stride-1 convs (afrt_winograd_f32): likewise. */
#include "afrt_winograd.h"
/* Direct 1x1 / 3x3 convolution in blocked channels (afrt_nchwc_f32): likewise. */
#include "afrt_nchwc.h"

/* Packs the k block [pc, pc+kc) x columns [j0, j0+nc) of a B held in 16-row blocks (a 1x1
 * conv's NCHW16c input: element (p, j) at B[(p / 16) * ld * 16 + j * 16 + p % 16], the rows
 * of the last block past the matrix zero) into nc/NR panels of [kc][NR], as
 * afrt_pack_b_block_ packs a dense one. AVX-512, k blocks starting on a block: per 16 rows
 * and 16 columns, 16 position vectors loaded whole and transposed in registers
 * (afrt_dwl_transpose16_), so the panel's rows are whole vector stores; elsewhere scalar. */
static inline void afrt_pack_b_nc_(const float *B, int64_t ld, int64_t N, int64_t pc, int64_t kc,
                                   int64_t j0, int64_t nc, float *dst) {
    for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
        float *panel = dst + jr * kc;
        const int64_t j = j0 + jr, cnt = afrt_max_(0, afrt_min_(AFRT_NR, N - j));
#if defined(__AVX512F__)
        if (pc % 16 == 0) {
            for (int64_t k0 = 0; k0 < kc; k0 += 16) {
                const int64_t kk = afrt_min_(16, kc - k0);
                const float *blk = B + ((pc + k0) / 16) * ld * 16;
                for (int64_t h = 0; h < AFRT_NR; h += 16) {
                    const int64_t ch = afrt_max_(0, afrt_min_(16, cnt - h));
                    __m512 r[16];
                    for (int64_t t = 0; t < 16; ++t)
                        r[t] = t < ch ? _mm512_loadu_ps(blk + (j + h + t) * 16) : _mm512_setzero_ps();
                    afrt_dwl_transpose16_(r);
                    for (int64_t i = 0; i < kk; ++i) _mm512_storeu_ps(panel + (k0 + i) * AFRT_NR + h, r[i]);
                }
            }
            continue;
        }
#endif
        for (int64_t k = 0; k < kc; ++k) {
            const int64_t row = pc + k;
            const float *src = B + (row / 16) * ld * 16 + row % 16;
            for (int64_t t = 0; t < AFRT_NR; ++t)
                panel[k * AFRT_NR + t] = t < cnt ? src[(j + t) * 16] : 0.0f;
        }
    }
}

/* Fills col[crs, pcount] with the im2col matrix of positions [p0, p0+pcount) of one image and
 * group (xg points at its first channel). */
static inline void afrt_im2col_(const float *xg, const afrt_conv_params *p, int64_t cg,
                                int64_t p0, int64_t pcount, float *col) {
    const int64_t H = p->H, W = p->W, OW = p->OW, R = p->R, S = p->S;
    const int64_t sh = p->stride_h, sw = p->stride_w, dh = p->dil_h, dw = p->dil_w;
    const int64_t pt = p->pad_top, pl = p->pad_left;
    for (int64_t c = 0; c < cg; ++c) {
        const float *xc = xg + c * H * W;
        for (int64_t r = 0; r < R; ++r) {
            for (int64_t s = 0; s < S; ++s) {
                float *dst = col + ((c * R + r) * S + s) * pcount;
                /* valid ow range: 0 <= ow*sw - pl + s*dw < W */
                const int64_t off = s * dw - pl;
                int64_t ow_lo = off >= 0 ? 0 : afrt_cdiv_(-off, sw);
                int64_t ow_hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
                if (ow_hi > OW) ow_hi = OW;
                if (ow_lo > ow_hi) ow_lo = ow_hi;
                int64_t pp = p0;
                const int64_t pend = p0 + pcount;
                while (pp < pend) {
                    const int64_t oh = pp / OW, ow0 = pp % OW;
                    const int64_t ow1 = afrt_min_(OW, ow0 + (pend - pp));
                    const int64_t ih = oh * sh - pt + r * dh;
                    float *d = dst + (pp - p0); /* d[ow - ow0] is position (oh, ow) */
                    if (ih < 0 || ih >= H) {
                        for (int64_t ow = ow0; ow < ow1; ++ow) d[ow - ow0] = 0.0f;
                    } else {
                        const float *xr = xc + ih * W; /* input row; column of ow: ow*sw + off */
                        const int64_t lo = afrt_max_(ow0, afrt_min_(ow_lo, ow1));
                        const int64_t hi = afrt_max_(lo, afrt_min_(ow_hi, ow1));
                        for (int64_t ow = ow0; ow < lo; ++ow) d[ow - ow0] = 0.0f;
                        if (sw == 1) {
                            if (hi > lo)
                                memcpy(d + (lo - ow0), xr + (lo + off),
                                       (size_t)(hi - lo) * sizeof(float));
                        } else {
                            for (int64_t ow = lo; ow < hi; ++ow) d[ow - ow0] = xr[ow * sw + off];
                        }
                        for (int64_t ow = hi; ow < ow1; ++ow) d[ow - ow0] = 0.0f;
                    }
                    pp += ow1 - ow0;
                }
            }
        }
    }
}

/* Depthwise-style conv (one input channel per group), output channel k of image n, tap by
 * tap with bounds checks: the fallback when no padded buffer can be had. */
static inline void afrt_conv_dw_direct_(const float *xc, const float *wk, float *yk,
                                        const afrt_conv_params *p) {
    for (int64_t oh = 0; oh < p->OH; ++oh) {
        int64_t r_lo, r_hi;
        afrt_tap_range_(oh, p->stride_h, p->pad_top, p->dil_h, p->R, p->H, &r_lo, &r_hi);
        const int64_t ih0 = oh * p->stride_h - p->pad_top;
        for (int64_t ow = 0; ow < p->OW; ++ow) {
            int64_t s_lo, s_hi;
            afrt_tap_range_(ow, p->stride_w, p->pad_left, p->dil_w, p->S, p->W, &s_lo, &s_hi);
            const int64_t iw0 = ow * p->stride_w - p->pad_left;
            float acc = 0.0f;
            for (int64_t r = r_lo; r < r_hi; ++r) {
                const float *xr = xc + (ih0 + r * p->dil_h) * p->W;
                for (int64_t s = s_lo; s < s_hi; ++s) acc += wk[r * p->S + s] * xr[iw0 + s * p->dil_w];
            }
            yk[oh * p->OW + ow] = acc;
        }
    }
}

/* Depthwise-style conv (one input channel per group): output channel k of image n. The input
 * plane is first copied into a zero-padded per-thread buffer covering exactly what the
 * outputs read, so every output, borders included, takes one vectorised path: 16 outputs
 * per AVX-512 vector at stride 1 (stride 2: the even lanes of 31 inputs), masked tails. */
static inline void afrt_conv_dw_channel_(const float *x, const float *w, float *y,
                                         const afrt_conv_params *p, int64_t kg, int64_t n,
                                         int64_t k) {
    const int64_t H = p->H, W = p->W, OH = p->OH, OW = p->OW, R = p->R, S = p->S;
    const int64_t sh = p->stride_h, sw = p->stride_w, dh = p->dil_h, dw = p->dil_w;
    const int64_t pt = p->pad_top, pl = p->pad_left;
    const float *restrict xc = x + (n * p->C + k / kg) * H * W;
    const float *restrict wk = w + k * R * S;
    float *restrict yk = y + (n * p->K + k) * OH * OW;
    /* padded rows [-pt, Hp - pt) and columns [-pl, Wp - pl) of the input */
    const int64_t Hp = (OH - 1) * sh + (R - 1) * dh + 1, Wp = (OW - 1) * sw + (S - 1) * dw + 1;
    float *restrict xp = pt >= 0 && pl >= 0
        ? (float *)afrt_thread_scratch(0, (size_t)(Hp * Wp) * sizeof(float)) : NULL;
    if (!xp) {
        afrt_conv_dw_direct_(xc, wk, yk, p);
        return;
    }
    const int64_t lo = afrt_min_(pl, Wp), hi = afrt_max_(lo, afrt_min_(pl + W, Wp));
    for (int64_t i = 0; i < Hp; ++i) {
        float *restrict d = xp + i * Wp;
        const int64_t ih = i - pt;
        if (ih < 0 || ih >= H) {
            for (int64_t j = 0; j < Wp; ++j) d[j] = 0.0f;
            continue;
        }
        for (int64_t j = 0; j < lo; ++j) d[j] = 0.0f; /* pads are a few columns: no calls */
        memcpy(d + lo, xc + ih * W + (lo - pl), (size_t)(hi - lo) * sizeof(float));
        for (int64_t j = hi; j < Wp; ++j) d[j] = 0.0f;
    }
    for (int64_t oh = 0; oh < OH; ++oh) {
        float *restrict yr = yk + oh * OW;
        const float *restrict xr0 = xp + oh * sh * Wp;
#if defined(__AVX512F__)
        if (sw == 1 || sw == 2) {
            const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8,
                                                  6, 4, 2, 0);
            for (int64_t ow = 0; ow < OW; ow += 16) {
                const int64_t cnt = afrt_min_(16, OW - ow), need = sw * cnt - (sw - 1);
                const __mmask16 mo = (__mmask16)(cnt == 16 ? 0xffffu : (1u << cnt) - 1u);
                const __mmask16 mlo = (__mmask16)(need >= 16 ? 0xffffu : (1u << need) - 1u);
                const __mmask16 mhi = (__mmask16)(need > 16 ? (1u << (need - 16)) - 1u : 0u);
                /* the second half's address only when it has lanes (need > 16): b + 16 past
                 * the end of the padded rows would be undefined pointer arithmetic */
                const int64_t hi16 = need > 16 ? 16 : 0;
                __m512 acc = _mm512_setzero_ps();
                for (int64_t r = 0; r < R; ++r) {
                    const float *restrict xr = xr0 + r * dh * Wp + ow * sw;
                    for (int64_t s = 0; s < S; ++s) {
                        const float *b = xr + s * dw;
                        const __m512 v = sw == 1 ? _mm512_maskz_loadu_ps(mo, b)
                                                 : _mm512_permutex2var_ps(
                                                       _mm512_maskz_loadu_ps(mlo, b), even,
                                                       _mm512_maskz_loadu_ps(mhi, b + hi16));
                        acc = _mm512_fmadd_ps(_mm512_set1_ps(wk[r * S + s]), v, acc);
                    }
                }
                _mm512_mask_storeu_ps(yr + ow, mo, acc);
            }
            continue;
        }
#endif
#if defined(AFRT_NEON_)
        if (sw == 1 || sw == 2) {
            /* 4 outputs per vector; stride 2 takes the even lanes of 8 inputs (vld2q). Its
             * 8th input lies before the first input of output ow + 4, so it is inside the
             * padded plane while ow + 4 < OW; the rest goes element by element. */
            int64_t ow = 0;
            for (; ow + 4 <= OW && (sw == 1 || ow + 4 < OW); ow += 4) {
                float32x4_t acc = vdupq_n_f32(0.0f);
                for (int64_t r = 0; r < R; ++r) {
                    const float *restrict xr = xr0 + r * dh * Wp + ow * sw;
                    for (int64_t s = 0; s < S; ++s) {
                        const float *b = xr + s * dw;
                        const float32x4_t v = sw == 1 ? vld1q_f32(b) : vld2q_f32(b).val[0];
                        acc = vfmaq_n_f32(acc, v, wk[r * S + s]);
                    }
                }
                vst1q_f32(yr + ow, acc);
            }
            for (; ow < OW; ++ow) {
                float acc = 0.0f;
                for (int64_t r = 0; r < R; ++r) {
                    const float *restrict xr = xr0 + r * dh * Wp + ow * sw;
                    for (int64_t s = 0; s < S; ++s) acc += wk[r * S + s] * xr[s * dw];
                }
                yr[ow] = acc;
            }
            continue;
        }
#endif
        for (int64_t ow = 0; ow < OW; ++ow) {
            float acc = 0.0f;
            for (int64_t r = 0; r < R; ++r) {
                const float *restrict xr = xr0 + r * dh * Wp + ow * sw;
                for (int64_t s = 0; s < S; ++s) acc += wk[r * S + s] * xr[s * dw];
            }
            yr[ow] = acc;
        }
    }
}

/* o[t] = (0 <= iw0 + t*sw < W) ? xr[iw0 + t*sw] : 0 for t in [0, n): one strided input row
 * segment of an im2col panel row, zero where it runs into the padding. AVX-512: masked loads
 * (lanes outside the row are neither read nor kept), 16 outputs a step at stride 1 and 2. */
static inline void afrt_im2col_seg_(float *restrict o, const float *restrict xr, int64_t iw0,
                                    int64_t n, int64_t sw, int64_t W) {
#if defined(__AVX512F__)
    if (sw == 1 || sw == 2) {
        const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6,
                                              4, 2, 0);
        for (int64_t t = 0; t < n; t += 16) {
            const int64_t m = afrt_min_(16, n - t), base = iw0 + t * sw, span = sw * m - (sw - 1);
            /* input elements base + [lo, hi) are inside the row */
            const int64_t lo = afrt_min_(span, afrt_max_(0, -base));
            const int64_t hi = afrt_max_(lo, afrt_min_(span, W - base));
            const uint32_t in = (uint32_t)(((uint64_t)1 << hi) - ((uint64_t)1 << lo));
            const __mmask16 mout = (__mmask16)(((uint32_t)1 << m) - 1u);
            if (lo > 0 || hi == 0) {
                /* the step starts in the left padding or lies wholly in the right padding:
                 * xr + base would point outside the row (undefined pointer arithmetic, and
                 * before the buffer for the first row), so no vector address is formed */
                for (int64_t u = 0; u < m; ++u) {
                    const int64_t iw = base + u * sw;
                    o[t + u] = (iw >= 0 && iw < W) ? xr[iw] : 0.0f;
                }
                continue;
            }
            /* base is inside the row here; the second half's address (src + 16) is formed
             * only when it has lanes (hi > 16) */
            const float *src = xr + base;
            __m512 v;
            if (sw == 1) v = _mm512_maskz_loadu_ps((__mmask16)in, src);
            else
                v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)(in & 0xffffu), src),
                                           even,
                                           _mm512_maskz_loadu_ps((__mmask16)(in >> 16),
                                                                 src + (hi > 16 ? 16 : 0)));
            _mm512_mask_storeu_ps(o + t, mout, v);
        }
        return;
    }
#endif
#if defined(AFRT_NEON_)
    if (sw == 1 || sw == 2) {
        /* 4 outputs a step where the 4 * sw inputs they span are inside the row (stride 2:
         * the even lanes of vld2q), element by element at the padding */
        for (int64_t t = 0; t < n;) {
            const int64_t iw = iw0 + t * sw;
            if (t + 4 <= n && iw >= 0 && iw + 4 * sw <= W) {
                vst1q_f32(o + t, sw == 1 ? vld1q_f32(xr + iw) : vld2q_f32(xr + iw).val[0]);
                t += 4;
            } else {
                o[t++] = (iw >= 0 && iw < W) ? xr[iw] : 0.0f;
            }
        }
        return;
    }
#endif
    for (int64_t t = 0; t < n; ++t) {
        const int64_t iw = iw0 + t * sw;
        o[t] = (iw >= 0 && iw < W) ? xr[iw] : 0.0f;
    }
}

#if defined(__AVX512F__)
#define AFRT_CONV_RUNS 4  /* output-row runs per panel (a 32-column panel over rows of >= 11) */
#define AFRT_CONV_TAPS 64 /* R * S */
/* One panel (kc rows from tap (c, r, sx) on) of a stride-1 im2col matrix, given its runs of
 * consecutive output columns within one output row (run u: panel lanes [run_j, run_j+run_n),
 * first input row run_ih + r*dh, column run_iw + s*dw). In a stride-1 row segment lane t reads
 * x[c][ih][t + off], so each run of a panel row is one or two masked loads whose lanes land
 * where they belong, from offsets and lane masks computed once per panel and tap (r, s)
 * rather than per channel: the generic per-segment path spent about as long packing as the
 * micro-kernel computing on Inception's 5x5 convs (64 output channels). */
static inline void afrt_pack_b_conv_s1_(const struct afrt_conv_params_s *p, const float *xg,
                                        const int64_t *run_ih, const int64_t *run_iw,
                                        const int64_t *run_j, const int64_t *run_n, int64_t nrun,
                                        int64_t c, int64_t r, int64_t sx, int64_t kc,
                                        float *restrict panel) {
    const int64_t H = p->H, W = p->W, S = p->S, RS = p->R * p->S, hw = H * W;
    int64_t off[AFRT_CONV_TAPS][AFRT_CONV_RUNS];
    uint32_t mk[AFRT_CONV_TAPS][AFRT_CONV_RUNS];
    for (int64_t rs = 0; rs < RS; ++rs) {
        const int64_t rr = rs / S, ss = rs % S;
        for (int64_t u = 0; u < nrun; ++u) {
            const int64_t ih = run_ih[u] + rr * p->dil_h, iw = run_iw[u] + ss * p->dil_w;
            const int64_t lo = afrt_min_(run_n[u], afrt_max_(0, -iw));
            const int64_t hi = afrt_max_(lo, afrt_min_(run_n[u], W - iw));
            const int valid = ih >= 0 && ih < H && hi > lo;
            mk[rs][u] = valid ? (uint32_t)((((uint64_t)1 << hi) - ((uint64_t)1 << lo)) << run_j[u]) : 0u;
            off[rs][u] = ih * W + iw - run_j[u];
        }
    }
    int64_t rs = r * S + sx;
    const float *xc = xg + c * hw;
    for (int64_t k = 0; k < kc; ++k) {
        __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
        for (int64_t u = 0; u < nrun; ++u) {
            const uint32_t m = mk[rs][u];
            if (!m) continue;
            /* lane t at xc + off + t; masked-off lanes are never read (no fault), and the
             * address is formed as an integer: xc + off may lie before the plane */
            const uintptr_t a = (uintptr_t)xc + (uintptr_t)(off[rs][u] * (int64_t)sizeof(float));
            v0 = _mm512_mask_loadu_ps(v0, (__mmask16)(m & 0xffffu), (const void *)a);
            if (m >> 16) v1 = _mm512_mask_loadu_ps(v1, (__mmask16)(m >> 16), (const void *)(a + 64));
        }
        _mm512_storeu_ps(panel + k * AFRT_NR, v0);
        _mm512_storeu_ps(panel + k * AFRT_NR + 16, v1);
        if (++rs == RS) {
            rs = 0;
            xc += hw;
        }
    }
}
#endif

/* Packs the k block [pc, pc+kc) x positions [j0, j0+nc) of the im2col matrix of one image and
 * group (xg: its first channel) straight into B panels: per panel, the runs of consecutive
 * output columns within one output row are found once, then each tap (c, r, s) copies one
 * input row segment per run. */
static inline void afrt_pack_b_conv_(const struct afrt_conv_params_s *p, const float *xg,
                                     int64_t N, int64_t pc, int64_t kc, int64_t j0, int64_t nc,
                                     float *dst) {
    const int64_t H = p->H, W = p->W, OW = p->OW, R = p->R, S = p->S, RS = R * S, hw = H * W;
    const int64_t sh = p->stride_h, sw = p->stride_w, dh = p->dil_h, dw = p->dil_w;
    const int64_t pt = p->pad_top, pl = p->pad_left;
    int64_t run_ih[AFRT_NR], run_iw[AFRT_NR], run_j[AFRT_NR], run_n[AFRT_NR];
    for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
        float *panel = dst + jr * kc;
        const int64_t pos0 = j0 + jr, cnt = afrt_max_(0, afrt_min_(AFRT_NR, N - pos0));
        int64_t nrun = 0;
        for (int64_t j = 0, oh = cnt > 0 ? pos0 / OW : 0, ow = cnt > 0 ? pos0 % OW : 0; j < cnt;
             ow = 0, ++oh) {
            const int64_t len = afrt_min_(cnt - j, OW - ow);
            run_ih[nrun] = oh * sh - pt;
            run_iw[nrun] = ow * sw - pl;
            run_j[nrun] = j;
            run_n[nrun++] = len;
            j += len;
        }
        int64_t c = pc / RS, r = (pc % RS) / S, sx = pc % S;
#if defined(__AVX512F__)
        if (sw == 1 && nrun <= AFRT_CONV_RUNS && RS <= AFRT_CONV_TAPS) {
            afrt_pack_b_conv_s1_(p, xg, run_ih, run_iw, run_j, run_n, nrun, c, r, sx, kc, panel);
            continue;
        }
#endif
        for (int64_t k = 0; k < kc; ++k) {
            const float *xc = xg + c * hw;
            float *o = panel + k * AFRT_NR;
            for (int64_t u = 0; u < nrun; ++u) {
                const int64_t ih = run_ih[u] + r * dh;
                if (ih < 0 || ih >= H) {
                    for (int64_t t = 0; t < run_n[u]; ++t) o[run_j[u] + t] = 0.0f;
                } else {
                    afrt_im2col_seg_(o + run_j[u], xc + ih * W, run_iw[u] + sx * dw, run_n[u], sw,
                                     W);
                }
            }
            for (int64_t t = cnt; t < AFRT_NR; ++t) o[t] = 0.0f;
            if (++sx == S) {
                sx = 0;
                if (++r == R) {
                    r = 0;
                    ++c;
                }
            }
        }
    }
}

/* afrt_pack_b_conv_ for a 3-d conv (afrt_conv3d_f32): the k block [pc, pc+kc) (rows (c, t, r,
 * s)) x positions [j0, j0+nc) (columns (od, oh, ow)) of the im2col matrix of one image and
 * group (xg: its first channel) into B panels. Per panel the runs of consecutive output
 * columns within one output row are found once; each tap then copies one input row segment
 * per run (afrt_im2col_seg_), or zeros where the run's input plane or row is padding. */
static inline void afrt_pack_b_conv3_(const struct afrt_conv3d_params_s *p, const float *xg,
                                      int64_t N, int64_t pc, int64_t kc, int64_t j0, int64_t nc,
                                      float *dst) {
    const int64_t D = p->D, H = p->H, W = p->W, OH = p->OH, OW = p->OW, R = p->R, S = p->S;
    const int64_t hw = H * W, dhw = D * hw, ohw = OH * OW, RS = R * S, TRS = p->T * RS;
    int64_t run_id[AFRT_NR], run_ih[AFRT_NR], run_iw[AFRT_NR], run_j[AFRT_NR], run_n[AFRT_NR];
    for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
        float *panel = dst + jr * kc;
        const int64_t pos0 = j0 + jr, cnt = afrt_max_(0, afrt_min_(AFRT_NR, N - pos0));
        int64_t nrun = 0;
        for (int64_t j = 0; j < cnt; ++nrun) {
            const int64_t pos = pos0 + j, ow = pos % OW;
            const int64_t len = afrt_min_(cnt - j, OW - ow);
            run_id[nrun] = (pos / ohw) * p->stride_d - p->pad_front;
            run_ih[nrun] = ((pos % ohw) / OW) * p->stride_h - p->pad_top;
            run_iw[nrun] = ow * p->stride_w - p->pad_left;
            run_j[nrun] = j;
            run_n[nrun] = len;
            j += len;
        }
        for (int64_t k = 0; k < kc; ++k) {
            const int64_t row = pc + k, c = row / TRS, t = (row % TRS) / RS;
            const int64_t r = (row % RS) / S, sx = row % S;
            float *o = panel + k * AFRT_NR;
            for (int64_t u = 0; u < nrun; ++u) {
                const int64_t id = run_id[u] + t * p->dil_d, ih = run_ih[u] + r * p->dil_h;
                if (id < 0 || id >= D || ih < 0 || ih >= H) {
                    for (int64_t v = 0; v < run_n[u]; ++v) o[run_j[u] + v] = 0.0f;
                } else {
                    afrt_im2col_seg_(o + run_j[u], xg + c * dhw + id * hw + ih * W,
                                     run_iw[u] + sx * p->dil_w, run_n[u], p->stride_w, W);
                }
            }
            for (int64_t v = cnt; v < AFRT_NR; ++v) o[v] = 0.0f;
        }
    }
}

/* A 1x1 conv that reads every stride-th input row and column and no padding (ResNet's
 * stride-2 downsampling convs): an im2col kind whose B matrix is a plain subsampling of x. */
static inline int afrt_conv_1x1_strided_(const afrt_conv_params *p, const afrt_conv_plan_ *q) {
    return q->kind == 2 && p->R == 1 && p->S == 1 && p->pad_top == 0 && p->pad_left == 0 &&
           p->stride_h > 0 && p->stride_w > 0 && (p->OH - 1) * p->stride_h < p->H &&
           (p->OW - 1) * p->stride_w < p->W;
}

/* xs[n][c][oh*OW + ow] = x[n][c][oh*sh][ow*sw]: the B matrix of a strided 1x1 conv, dense.
 * Gathering it once costs one pass over the output-sized copy; packing it through im2col
 * panel by panel instead (a strided, masked segment per output row and channel) made ResNet-50's
 * 1x1 stride-2 convs 10-75% slower than the same GEMM on a dense input (docs/runtime.md). */
static inline void afrt_gather_1x1_strided_(const float *x, const afrt_conv_params *p,
                                            float *xs) {
    const int64_t rows = p->N * p->C, ohw = p->OH * p->OW, hw = p->H * p->W;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (rows > 1 && rows * ohw >= 65536))
    for (int64_t rc = 0; rc < rows; ++rc) {
        afrt_arrive_();
        for (int64_t oh = 0; oh < p->OH; ++oh)
            afrt_im2col_seg_(xs + rc * ohw + oh * p->OW, x + rc * hw + oh * p->stride_h * p->W, 0,
                             p->OW, p->stride_w, p->W);
    }
}

/* Bytes a conv's B may take to be packed once and shared by its tiles (afrt_conv_own_): within
 * the tile budget, so the packed B stays in L2 while the tiles read it. */
#ifndef AFRT_SHARED_B_BYTES
#define AFRT_SHARED_B_BYTES AFRT_TILE_BYTES
#endif
/* k rows of one panel the threads pack at a time into the shared B (a divisor of AFRT_KC,
 * else whole k blocks) */
#ifndef AFRT_SHARED_B_ROWS
#define AFRT_SHARED_B_ROWS 64
#endif
/* afrt_shared_b_dis_: 1 turns the shared B off (every tile packs its own), for benchmarks and
 * tests comparing the two. */
static int afrt_shared_b_dis_ = 0;
/* Whether afrt_conv_own_ packs B once for all its tiles: several row blocks (nmb) share B,
 * one B matrix (one image and group: tasks == 1) and K x Np floats within
 * AFRT_SHARED_B_BYTES. */
static inline int afrt_shared_b_(int64_t nmb, int64_t tasks, int64_t K, int64_t Np) {
    return !afrt_shared_b_dis_ && nmb > 1 && tasks == 1 &&
           (double)K * (double)Np * sizeof(float) <= (double)AFRT_SHARED_B_BYTES;
}

/* The afrt core for kinds 1 (1x1) and 2 (im2col, fused into B packing; a strided 1x1 conv
 * gathers its input first and is then kind 1's GEMM); 0 if out of memory. xb: x is NCHW16c
 * (kind 1, group 1 only: gemm_1x1_xb, afrt_conv1x1xb_f32), B packed from its blocks. p3: a
 * 3-d conv (afrt_conv3d_f32), p its 2-d view (rows D * H, output rows OD * OH, so planes and
 * maps have its sizes) and q kind 2 with its crs; B is packed by afrt_pack_b_conv3_. */
static inline int afrt_conv_own2_(const float *x, const float *w, const float *bias, float *y,
                                  const afrt_conv_params *p, const afrt_conv_plan_ *q,
                                  afrt_epilogue epi, int xb, const float *x2,
                                  const afrt_conv_params *p2, const float *pa,
                                  const struct afrt_conv3d_params_s *p3) {
    const int64_t G = p->group > 0 ? p->group : 1;
    const int64_t ohw = p->OH * p->OW;
    const int64_t Kg = q->kg, crs = q->crs;
    int64_t hw = p->H * p->W; /* per-channel plane of the B source */
    int im2col = q->kind == 2;
    if (xb && (im2col || G != 1)) return 0;
    /* x2: the last p2->C of p's channels come from x2, read as conv p2 reads it */
    const int64_t c2 = x2 ? p2->C : 0;
    if ((x2 || pa) && (im2col || xb || G != 1)) return 0;
    if (x2 && (p2->stride_h != 1 || p2->stride_w != 1)) {
        const afrt_conv_plan_ q2 = afrt_conv_plan(p2);
        float *xs = afrt_conv_1x1_strided_(p2, &q2)
                        ? (float *)afrt_thread_scratch(11, (size_t)(p->N * c2 * ohw) * sizeof(float))
                        : NULL;
        if (!xs) return 0;
        afrt_gather_1x1_strided_(x2, p2, xs);
        x2 = xs;
    }
    if (!p3 && afrt_conv_1x1_strided_(p, q)) {
        float *xs = (float *)afrt_thread_scratch(11, (size_t)(p->N * p->C * ohw) * sizeof(float));
        if (xs) { /* else packed through im2col, which needs no memory */
            afrt_gather_1x1_strided_(x, p, xs);
            x = xs;
            hw = ohw;
            im2col = 0;
        }
    }
    /* floats per image of x (after a gather): blocked, the last block's channels past C
     * are padding */
    const int64_t xn = xb ? afrt_round_up_(p->C, 16) * hw : (p->C - c2) * hw;
    const float **pas = (const float **)afrt_malloc_((size_t)G * sizeof(float *));
    if (!pas) return 0;
    if (pa) pas[0] = pa; /* packed by the caller (G is 1) */
    else if (!afrt_pack_a_all_(w, Kg * crs, G, Kg, crs, crs, 0, pas)) {
        free(pas);
        return 0;
    }
    int64_t mb, nb, nmb, nnb;
    afrt_gemm_split_even_(Kg, ohw, p->N * G, &mb, &nb, &nmb, &nnb);
    const int64_t per_img = G * nmb * nnb, ntiles = p->N * per_img;
    /* B shared: with the output split into row blocks (nmb > 1: output channels, which is
     * how two threads share a conv on a small map, e.g. ResNet-50's 14x14 and 7x7 1x1 convs)
     * every row block's tile packed the same B, so each thread packed all of it. Then B is
     * packed once, its (k block, panel) pieces split over the threads, before the tiles in
     * the same parallel region (afrt_shared_b_: one image and group, at most
     * AFRT_SHARED_B_BYTES); out of memory, each tile packs its own as before. */
    const int64_t Np = afrt_round_up_(ohw, AFRT_NR), npan = Np / AFRT_NR;
    float *bsh = afrt_shared_b_(nmb, p->N * G, crs, Np)
                     ? (float *)afrt_thread_scratch(13, (size_t)(crs * Np) * sizeof(float))
                     : NULL;
    /* pieces of up to AFRT_SHARED_B_ROWS k rows of one panel, inside one k block: packing
     * by whole k blocks split K = 528 as 11 blocks of 256 rows against 3 of 256 and 7 of 16 */
    const int64_t sub = AFRT_KC % AFRT_SHARED_B_ROWS == 0 && afrt_split_balance_
                            ? AFRT_SHARED_B_ROWS : AFRT_KC;
    const int64_t units = bsh ? afrt_cdiv_(crs, sub) * npan : 0;
    int failed = 0;
    AFRT_OMP(parallel num_threads(afrt_threads_now()) if (ntiles > 1 && afrt_worth_threads_((double)p->N * p->K * ohw * crs)))
    {
    if (units) {
        AFRT_OMP(for schedule(static))
        for (int64_t u = 0; u < units; ++u) {
            afrt_arrive_();
            const int64_t ps = (u / npan) * sub, ks = afrt_min_(sub, crs - ps);
            const int64_t pc = ps / AFRT_KC * AFRT_KC, kc = afrt_min_(AFRT_KC, crs - pc);
            const int64_t jc = (u % npan) * AFRT_NR;
            float *dst = bsh + pc * Np + jc * kc + (ps - pc) * AFRT_NR;
            if (im2col && p3) afrt_pack_b_conv3_(p3, x, ohw, ps, ks, jc, AFRT_NR, dst);
            else if (im2col) afrt_pack_b_conv_(p, x, ohw, ps, ks, jc, AFRT_NR, dst);
            else if (xb) afrt_pack_b_nc_(x, hw, ohw, ps, ks, jc, AFRT_NR, dst);
            else if (x2) {
                const afrt_bsrc_ b2 = {NULL, x, hw, 0, NULL, NULL, 0, x2, crs - c2, NULL};
                afrt_pack_b_src_(&b2, ohw, ps, ks, jc, AFRT_NR, dst);
            } else afrt_pack_b_block_(x, hw, 0, ohw, ps, ks, jc, AFRT_NR, dst);
        }
    }
    AFRT_OMP(for schedule(static))
    for (int64_t t = 0; t < ntiles; ++t) {
        afrt_arrive_();
        const int64_t n = t / per_img, rest = t % per_img;
        const int64_t g = rest / (nmb * nnb), tile = rest % (nmb * nnb);
        const int64_t i0 = (tile / nnb) * mb, j0 = (tile % nnb) * nb;
        const int64_t i1 = afrt_split_end_(tile / nnb, nmb, mb, Kg);
        const int64_t j1 = afrt_split_end_(tile % nnb, nnb, nb, ohw);
        float *kbuf = bsh ? NULL
                          : (float *)afrt_thread_scratch(0, (size_t)AFRT_KC * AFRT_NC * sizeof(float));
        const float *xg = x + n * xn + g * q->cg * hw;
        afrt_bsrc_ bs = {bsh, xg, hw, 0, im2col && !p3 ? p : NULL, xg, xb,
                         x2 ? x2 + n * c2 * ohw : NULL, crs - c2, im2col ? p3 : NULL};
        float *yn = y + n * p->K * ohw;
        const afrt_tile_finish_ fin = {yn, bias, 1.0f, n, g * Kg, 0, epi};
        /* Out of memory for packing: the caller computes the conv another way, unless y
         * holds the residual (tiles already stored have consumed theirs, so no other way
         * could start over): then afrt_gemm_tile_'s in-place path, which needs no kbuf. */
        if (!kbuf && !bsh && !afrt_tile_inplace_(&fin, yn + g * Kg * ohw, ohw)) {
            afrt_flag_set_(&failed);
            continue;
        }
        afrt_gemm_tile_(pas[g], Kg, ohw, crs, &bs, yn + g * Kg * ohw, ohw, i0, i1, j0, j1, kbuf, 0,
                        &fin);
    }
    } /* the parallel region */
    free(pas);
    return !failed;
}

static inline int afrt_conv_own_(const float *x, const float *w, const float *bias, float *y,
                                 const afrt_conv_params *p, const afrt_conv_plan_ *q,
                                 afrt_epilogue epi, int xb) {
    return afrt_conv_own2_(x, w, bias, y, p, q, epi, xb, NULL, NULL, NULL, NULL);
}

/* Whether afrt_conv1x1_pair_f32 takes p (the joined conv) and p2 (the second input's conv):
 * both 1x1, unpadded, group 1, dilation 1, the same N, K and output map, p stride 1 with
 * more channels than p2, p2 any stride whose rows and columns lie inside its input. */
static inline int afrt_conv1x1_pair_applies(const afrt_conv_params *p, const afrt_conv_params *p2) {
    const afrt_conv_params *v[2] = {p, p2};
    for (int i = 0; i < 2; ++i)
        if (v[i]->R != 1 || v[i]->S != 1 || v[i]->group != 1 || v[i]->dil_h != 1 ||
            v[i]->dil_w != 1 || v[i]->pad_top || v[i]->pad_left || v[i]->pad_bottom ||
            v[i]->pad_right || v[i]->stride_h < 1 || v[i]->stride_w < 1)
            return 0;
    return p->stride_h == 1 && p->stride_w == 1 && p->H == p->OH && p->W == p->OW &&
           p2->N == p->N && p2->K == p->K && p2->OH == p->OH && p2->OW == p->OW &&
           p2->C >= 1 && p->C > p2->C && (p2->OH - 1) * p2->stride_h < p2->H &&
           (p2->OW - 1) * p2->stride_w < p2->W && p->N >= 1 && p->K >= 1 && p->OH * p->OW >= 1;
}

/* [w | w2] (M x (k1 + k2), w M x k1 and w2 M x k2 row-major) in packed-A layout, then the
 * M floats bias + bias2 (either NULL: zeros), into dst (afrt_pack_a_'s Mp x K floats + M).
 * 0 if out of memory. */
static inline int afrt_pack_pair_(const float *w, int64_t k1, const float *w2, int64_t k2,
                                  const float *bias, const float *bias2, int64_t M, float *dst) {
    const int64_t K = k1 + k2, Mp = afrt_round_up_(M, afrt_choose_mr_(M));
    /* calloc: gcc cannot see that the loop below writes every element */
    float *joined = AFRT_ALLOC_FAILS_() ? NULL : (float *)calloc((size_t)(M * K), sizeof(float));
    if (!joined) return 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
            joined[i * K + k] = k < k1 ? w[i * k1 + k] : w2[i * k2 + k - k1];
    afrt_pack_a_(joined, K, 0, M, K, dst);
    free(joined);
    for (int64_t i = 0; i < M; ++i)
        dst[Mp * K + i] = (bias ? bias[i] : 0.0f) + (bias2 ? bias2[i] : 0.0f);
    return 1;
}

/* The joined weights and bias of a conv pair (afrt_pack_pair_), from the packed-operand cache
 * (side 6, keyed by both weights), made on first use; NULL if either weight is not constant,
 * the cache is full or memory is short. */
static inline const float *afrt_packed_pair_(const float *w, int64_t k1, const float *w2,
                                             int64_t k2, const float *bias, const float *bias2,
                                             int64_t M) {
    const float *found = NULL;
    AFRT_OMP(critical(afrt_cache))
    {
        if (afrt_in_region_(w, (size_t)(M * k1) * sizeof(float)) &&
            afrt_in_region_(w2, (size_t)(M * k2) * sizeof(float))) {
            for (int e = 0; e < afrt_n_packed_ && !found; ++e) {
                const afrt_packed_entry_ *q = &afrt_packed_[e];
                if (q->side == 6 && q->src == w && q->src2 == w2 && q->rows == M &&
                    q->cols == k1 + k2 && q->ld == k1)
                    found = (const float *)q->packed;
            }
            if (!found && afrt_n_packed_ < AFRT_MAX_PACKED) {
                const int64_t Mp = afrt_round_up_(M, afrt_choose_mr_(M));
                float *buf = (float *)afrt_alloc_pack_((size_t)(Mp * (k1 + k2) + M) * sizeof(float));
                if (buf && afrt_pack_pair_(w, k1, w2, k2, bias, bias2, M, buf)) {
                    afrt_packed_entry_ e = {w, M, k1 + k2, k1, 0, 6, 0, buf, w2};
                    afrt_packed_[afrt_n_packed_++] = e;
                    found = buf;
                } else free(buf);
            }
        }
    }
    return found;
}

/* Two 1x1 convs whose outputs are added, as one GEMM (fuse-conv-pair: ResNet's conv3 and the
 * downsample of a stage's first block): y = epi(w . x + bias + w2 . x2' + bias2), x the
 * p->C - p2->C input channels of w (NCHW on the output map), x2' the p2->C channels of x2
 * read at p2's stride (gathered first when strided, as the strided 1x1 conv does), w and w2
 * the two convs' K x C weights, either bias NULL. One GEMM over [x; x2'] with A = [w | w2]
 * (packed once and cached with the biases summed, for constant weights) and B's k blocks
 * packed from the two sources (afrt_bsrc_'s B2): the second conv's output is never stored,
 * and every output tile sums over both inputs' channels before its epilogue (in registers
 * where the core has one). y must not be the epilogue's residual. Out of memory:
 * afrt_nomem_, y incomplete. */
static inline void afrt_conv1x1_pair_f32(const float *x, const float *x2, const float *w,
                                         const float *bias, const float *w2,
                                         const float *bias2, float *y, const afrt_conv_params *p,
                                         const afrt_conv_params *p2, afrt_epilogue epi) {
    afrt_init_once_();
    const afrt_conv_plan_ q = afrt_conv_plan(p);
    const int64_t M = p->K, k2 = p2->C, k1 = p->C - k2;
    const int64_t Mp = afrt_round_up_(M, afrt_choose_mr_(M));
    const float *pa = afrt_packed_pair_(w, k1, w2, k2, bias, bias2, M);
    float *own = NULL; /* not cached: packed for this call */
    if (!pa) {
        own = (float *)afrt_malloc_((size_t)(Mp * p->C + M) * sizeof(float));
        if (!own || !afrt_pack_pair_(w, k1, w2, k2, bias, bias2, M, own)) {
            free(own);
            afrt_nomem_("afrt_conv1x1_pair_f32");
            return;
        }
        pa = own;
    }
    if (!afrt_conv_own2_(x, NULL, pa + Mp * p->C, y, p, &q, epi, 0, x2, p2, pa, NULL))
        afrt_nomem_("afrt_conv1x1_pair_f32");
    free(own);
}

/* ---------------------------------------------------------------------------------------------
 * 1x1 convolution on small maps, operands swapped (algo gemm_1x1_t).
 *
 * gemm_1x1 computes Y[K x HW] = W[K x C] @ X[C x HW] with the output positions along the
 * 32-wide column panels: a 7x7 map (49 = 32 + 17 columns) fills 49 of 64 lanes, a 4x4 map 16
 * of 32. Here the GEMM is transposed, Y^T[HW x K] = X^T[HW x C] @ W^T[C x K], so the vector
 * dimension is K (output channels, a multiple of 32 on such layers) and the positions are the
 * MR-row tiles (16 = 2 tiles of 8 rows). W^T is packed once as B panels (cached like every
 * constant operand), X^T per call as A panels, a k block at a time; each thread computes a [positions x channels] tile into
 * its own padded scratch (whole MR x NR register tiles, no edge handling), transposes it into
 * the NCHW output adding the bias, and then runs the epilogue on that finished block (rows =
 * channels, cols = positions, ld = OH*OW: the epilogue contract is unchanged), the built-in
 * clamp epilogue too (in the transposing store, when it was scalar, it was slower: below).
 *
 * The rule (clib.conv_algo holds the same; a test compares them): a 1x1 stride-1 unpadded
 * conv with at least AFRT_1X1T_MIN_C input and AFRT_1X1T_MIN_K output channels per group,
 * whose map has AFRT_1X1T_MIN_HW to AFRT_1X1T_MAX_HW positions (at most half a panel) and
 * where the padded work of the swapped GEMM, round_up(HW, mr(HW)) x round_up(Kg, 32), is
 * below that of gemm_1x1, round_up(Kg, mr(Kg)) x round_up(HW, 32), with mr = afrt_choose_mr_
 * (the ISA-independent figure).
 * Measured with benchmarks/conv1x1_small.py and per kernel inside whole models
 * (docs/runtime.md): with warm caches 3-20% faster on 7x7 maps and 1.3-3x on 1x1 and 4x4
 * maps; inside models, the weights cold, 10-22% faster on 4x4 maps from 576 input channels,
 * but about even to 30% slower on 7x7 maps, 1x1 maps (GEMVs) and fewer input channels,
 * hence the thresholds.
 * ------------------------------------------------------------------------------------------- */
#ifndef AFRT_1X1T_MIN_HW
#define AFRT_1X1T_MIN_HW 2
#endif
#ifndef AFRT_1X1T_MAX_HW
#define AFRT_1X1T_MAX_HW 16
#endif
#ifndef AFRT_1X1T_KSEG
#define AFRT_1X1T_KSEG 32
#endif
/* Input channels per group: below this, inside whole models (MobileNet-V2: weights cold,
 * streamed from DRAM) gemm_1x1_t measured slower than gemm_1x1 even where it was faster
 * with warm caches; the transposed store and X^T packing weigh more per MAC (docs/runtime.md). */
#ifndef AFRT_1X1T_MIN_C
#define AFRT_1X1T_MIN_C 512
#endif
#ifndef AFRT_1X1T_MIN_K
#define AFRT_1X1T_MIN_K 16
#endif

/* Row-tile height of gemm_1x1_t for a map of hw positions: with AVX-512, whichever of 12, 8
 * and 7 rows pads hw least (16 = 2 x 8, 14 = 2 x 7, 12 = 1 x 12), else afrt_choose_mr_. */
static inline int afrt_conv1x1t_mr_(int64_t hw) {
#if defined(__AVX512F__)
    int best = 12;
    if (afrt_round_up_(hw, 8) < afrt_round_up_(hw, best)) best = 8;
    if (afrt_round_up_(hw, 7) < afrt_round_up_(hw, best)) best = 7;
    return best;
#else
    return afrt_choose_mr_(hw);
#endif
}

static inline int afrt_conv1x1t_applies(const afrt_conv_params *p) {
    const int64_t g = p->group > 0 ? p->group : 1;
    const int64_t hw = p->OH * p->OW, kg = p->K / g, cg = p->C / g;
    if (!(p->R == 1 && p->S == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
          p->pad_left == 0 && p->OH == p->H && p->OW == p->W))
        return 0;
    if (hw < AFRT_1X1T_MIN_HW || hw > AFRT_1X1T_MAX_HW || cg < AFRT_1X1T_MIN_C ||
        kg < AFRT_1X1T_MIN_K)
        return 0;
    const int64_t swapped = afrt_round_up_(hw, afrt_choose_mr_(hw)) * afrt_round_up_(kg, AFRT_NR);
    const int64_t direct = afrt_round_up_(kg, afrt_choose_mr_(kg)) * afrt_round_up_(hw, AFRT_NR);
    return swapped < direct;
}

/* y[j*ld + i] = t[i*ldt + j] (+ bias[j]) for i < m, j < n: a tile of a transposed GEMM's
 * output (positions x channels) into the NCHW rows it belongs to (the tile is still in
 * L1/L2). t has mr >= m rows readable and its rows are readable up to n rounded up to 16.
 * AVX-512: 16 positions x 16 channels per in-register transpose (afrt_dwl_transpose16_),
 * masked stores for the tails (rows past mr are zero vectors, dropped by the mask); used by
 * gemm_1x1_t and the conv chain's blocked band (afrt_convchain.h). Elsewhere scalar loops,
 * 16 channels at a time. */
static inline void afrt_store_transposed_(const float *restrict t, int64_t ldt, int64_t m,
                                          int64_t mr, int64_t n, const float *bias,
                                          float *restrict y, int64_t ld) {
#if defined(__AVX512F__)
    for (int64_t i0 = 0; i0 < m; i0 += 16) {
        const int64_t mi = afrt_min_(16, m - i0);
        const __mmask16 km = (__mmask16)((1u << mi) - 1u);
        for (int64_t j0 = 0; j0 < n; j0 += 16) {
            __m512 r[16];
            for (int64_t i = 0; i < 16; ++i)
                r[i] = i0 + i < mr ? _mm512_loadu_ps(t + (i0 + i) * ldt + j0) : _mm512_setzero_ps();
            afrt_dwl_transpose16_(r);
            const int64_t nj = afrt_min_(16, n - j0);
            for (int64_t j = 0; j < nj; ++j) {
                __m512 v = r[j];
                if (bias) v = _mm512_add_ps(v, _mm512_set1_ps(bias[j0 + j]));
                _mm512_mask_storeu_ps(y + (j0 + j) * ld + i0, km, v);
            }
        }
    }
#else
    (void)mr;
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int64_t j1 = afrt_min_(n, j0 + 16);
        for (int64_t i = 0; i < m; ++i) {
            const float *ti = t + i * ldt;
            if (bias) {
                for (int64_t j = j0; j < j1; ++j) y[j * ld + i] = ti[j] + bias[j];
            } else {
                for (int64_t j = j0; j < j1; ++j) y[j * ld + i] = ti[j];
            }
        }
    }
#endif
}

/* The gemm_1x1_t path (above); 0 if out of memory (the caller falls back). */
static inline int afrt_conv1x1t_f32(const float *x, const float *w, const float *bias, float *y,
                                    const afrt_conv_params *p, afrt_epilogue epi) {
    const int64_t G = p->group > 0 ? p->group : 1;
    const int64_t hw = p->OH * p->OW, kg = p->K / G, cg = p->C / G;
    const int64_t MR = afrt_conv1x1t_mr_(hw);
    const int64_t Np = afrt_round_up_(kg, AFRT_NR);
    const float **pbs = (const float **)afrt_malloc_((size_t)G * sizeof(float *));
    if (!pbs) return 0;
    /* W_g^T (cg x kg): element (c, k) = w[(g*kg + k)*cg + c], i.e. transposed with ld cg */
    int need = 0;
    for (int64_t g = 0; g < G; ++g) {
        pbs[g] = afrt_packed_const_(w + g * kg * cg, cg, kg, cg, 1, 1);
        need |= pbs[g] == NULL;
    }
    if (need) { /* weights that are not constants: packed on this call */
        float *bbuf = (float *)afrt_thread_scratch(9, (size_t)(G * cg * Np) * sizeof(float));
        if (!bbuf) {
            free(pbs);
            return 0;
        }
        for (int64_t g = 0; g < G; ++g)
            if (!pbs[g]) {
                afrt_pack_b_full_(w + g * kg * cg, cg, 1, cg, kg, bbuf + g * cg * Np);
                pbs[g] = bbuf + g * cg * Np;
            }
    }
    int64_t mb, nb;
    afrt_gemm_split_(hw, kg, p->N * G, &mb, &nb);
    const int64_t nmb = afrt_nblocks_(hw, mb), nnb = afrt_nblocks_(kg, nb);
    const int64_t per_img = G * nmb * nnb, ntiles = p->N * per_img;
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntiles > 1 && afrt_worth_threads_((double)p->N * p->K * hw * cg)))
    for (int64_t t = 0; t < ntiles; ++t) {
        afrt_arrive_();
        const int64_t n = t / per_img, rest = t % per_img;
        const int64_t g = rest / (nmb * nnb), tile = rest % (nmb * nnb);
        const int64_t i0 = (tile / nnb) * mb, j0 = (tile % nnb) * nb;
        const int64_t i1 = afrt_min_(hw, i0 + mb), j1 = afrt_min_(kg, j0 + nb);
        /* whole MR x NR register tiles: rows past i1 (inside the map or zero padding) are
         * computed and not stored; j0 is a multiple of NR, Np covers jp1 */
        const int64_t mt = afrt_round_up_(i1 - i0, MR), ip1 = i0 + mt;
        const int64_t jp1 = afrt_round_up_(j1, AFRT_NR), ldt = jp1 - j0;
        /* this thread's packed X^T block (mt x kc) and output tile (mt x ldt) */
        float *abuf = (float *)afrt_thread_scratch(10, (size_t)(mt * (AFRT_KC + ldt)) * sizeof(float));
        if (!abuf) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *tmp = abuf + mt * AFRT_KC;
        /* X_(n,g)^T (hw x cg): element (i, c) = xg[c*hw + i], packed a k block at a time */
        const float *xg = x + (n * p->C + g * cg) * hw, *pb = pbs[g];
        for (int64_t pc = 0; pc < cg; pc += AFRT_KC) {
            const int64_t kc = afrt_min_(AFRT_KC, cg - pc);
            for (int64_t ic = i0; ic < ip1; ic += MR)
                afrt_pack_rows_t_(xg + pc * hw + ic, hw, afrt_min_(MR, hw - ic), MR, kc,
                                  abuf + (ic - i0) * kc);
            /* A B panel (32 output channels of the weights, from DRAM in a model) is read
             * AFRT_1X1T_KSEG k steps at a time by every row tile in turn, so the weights
             * stream at an even rate; a whole panel per row tile drained it in one burst,
             * then idled (the accumulators reload from the L1-resident tile per segment). */
            for (int64_t jr = j0; jr < jp1; jr += AFRT_NR)
                for (int64_t k0 = 0; k0 < kc; k0 += AFRT_1X1T_KSEG) {
                    const int64_t ks = afrt_min_(AFRT_1X1T_KSEG, kc - k0);
                    for (int64_t ic = i0; ic < ip1; ic += MR)
                        afrt_ukernel_(MR, ks, abuf + (ic - i0) * kc + k0 * MR,
                                      pb + pc * Np + jr * kc + k0 * AFRT_NR,
                                      tmp + (ic - i0) * ldt + (jr - j0), ldt, pc > 0 || k0 > 0);
                }
        }
        float *yn = y + n * p->K * hw;
        const int64_t k0 = g * kg + j0;
        /* the bias on the way into y, then the epilogue on the stored block (in L1): the
         * built-in clamp applied in this transposing store instead (then scalar, the
         * residual read across its rows) measured 9-17% slower on 3x3 and 4x4 maps
         * (benchmarks/conv_epilogue.py, docs/runtime.md); the store is 16x16 in-register
         * transposes on AVX-512 since, the clamp not re-measured there */
        afrt_store_transposed_(tmp, ldt, i1 - i0, mt, j1 - j0, bias ? bias + k0 : NULL,
                               yn + k0 * hw + i0, hw);
        afrt_finish_block_(yn, NULL, n, k0, g * kg + j1, i0, i1, hw, epi);
    }
    free(pbs);
    return !failed;
}

/* ---------------------------------------------------------------------------------------------
 * gemm_1x1_b: a 1x1 stride-1 unpadded group-1 conv from NCHW x into NCHW16c y
 * ([N][ceil(K/16)][OH][OW][16], channels past K zero): the expand conv of an inverted
 * residual block whose reader, the conv chain (afrt_dwpw_ex_f32 with AFRT_NC_IN_BLOCKED),
 * takes its depthwise input in blocks (assign-layout chooses it; docs/c-backend.md).
 * gemm_1x1_t's transposed GEMM, Y^T[HW x K] = X^T[HW x C] . W^T[C x K]: the output channels
 * along the 32-wide B panels, so every vector lane is full at any map size (a 7x7 map fills
 * 49 of gemm_1x1's 64 lanes), and a 32-channel row of Y^T is two blocked vectors. Per thread
 * tile (positions x channels) X^T is packed whole (all k blocks: at most ~200 KiB on the maps
 * assign-layout sends here), then for each 32-channel B panel and each row tile the whole
 * k loop runs into a row tile in L1, which is stored at once as whole vectors into its two
 * blocks with the bias (and the built-in clamp without a residual) -- no transposes, no
 * output tile in L2. Any other epilogue runs in its flat form on the thread's finished
 * blocks (afrt_nc_epilogue_blocked_). Row tiles: afrt_conv1x1b_mr_.
 * ------------------------------------------------------------------------------------------- */
/* Row-tile height for a map of hw positions: 12 unless 8- or 7-row tiles (whichever pads less)
 * compute more than 8% fewer rows -- the conv chain's blocked band's rule (afrt_cc_mr_): a 7x7
 * map in 7 tiles of 7, a 14x14 map in 17 tiles of 12. */
static inline int afrt_conv1x1b_mr_(int64_t hw) {
#if defined(__AVX512F__)
    const int64_t r7 = afrt_round_up_(hw, 7), r8 = afrt_round_up_(hw, 8);
    const int mr = r7 < r8 ? 7 : 8;
    return 25 * afrt_round_up_(hw, 12) > 27 * afrt_min_(r7, r8) ? mr : 12;
#else
    return afrt_choose_mr_(hw);
#endif
}

/* y := t (m positions x n <= 32 channels, ldt apart; + bias[j]) into NCHW16c storage: y at
 * the block of the tile's first channel and its first position, blocks plane floats apart.
 * Lanes past n (the zero columns of the padded B panel) are stored as zeros, so a block's
 * channel padding stays zero. cl (the built-in clamp without a residual, or NULL) is applied
 * before the only store, in afrt_epi_clamp1_'s order (NaN kept). */
static inline void afrt_store_blocked_(const float *restrict t, int64_t ldt, int64_t m,
                                       int64_t n, const float *bias, float *restrict y,
                                       int64_t plane, const afrt_epi_clamp *cl) {
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int64_t nj = afrt_min_(16, n - j0);
        float *yb = y + (j0 / 16) * plane;
#if defined(__AVX512F__)
        const __mmask16 km = (__mmask16)((1u << nj) - 1u);
        const __m512 bv = bias ? _mm512_maskz_loadu_ps(km, bias + j0) : _mm512_setzero_ps();
        const __m512 lo = _mm512_set1_ps(cl ? cl->lo : 0.0f);
        const __m512 hi = _mm512_set1_ps(cl ? cl->hi : 0.0f);
        for (int64_t i = 0; i < m; ++i) {
            __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(km, t + i * ldt + j0), bv);
            if (cl) { /* an unordered compare is false: NaN stays */
                v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), v, lo);
                v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), v, hi);
            }
            _mm512_storeu_ps(yb + i * 16, v);
        }
#else
        for (int64_t i = 0; i < m; ++i)
            for (int64_t l = 0; l < 16; ++l) {
                float v = l < nj ? t[i * ldt + j0 + l] + (bias ? bias[j0 + l] : 0.0f) : 0.0f;
                if (cl && l < nj) v = afrt_epi_clamp1_(v, cl->lo, cl->hi);
                yb[i * 16 + l] = v;
            }
#endif
    }
}

static inline int afrt_conv1x1b_fits(const afrt_conv_params *p) {
    return p->R == 1 && p->S == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
           p->pad_left == 0 && p->pad_bottom == 0 && p->pad_right == 0 && p->OH == p->H &&
           p->OW == p->W && p->group <= 1 && p->dil_h == 1 && p->dil_w == 1;
}

/* The gemm_1x1_b conv (above). Returns 0 without a complete y if the conv does not fit or
 * memory runs out (the generated code then runs afrt_nchwc_naive_f32, AFRT_NC_OUT_BLOCKED). */
static inline int afrt_conv1x1b_f32(const float *x, const float *w, const float *bias, float *y,
                                    const afrt_conv_params *p, afrt_epilogue epi) {
    if (!afrt_conv1x1b_fits(p)) return 0;
    if (p->N <= 0 || p->K <= 0 || p->OH * p->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t hw = p->OH * p->OW, K = p->K, C = p->C, kb = afrt_cdiv_(K, 16);
    const int64_t MR = afrt_conv1x1b_mr_(hw), Np = afrt_round_up_(K, AFRT_NR), plane = hw * 16;
    /* W^T (C x K): element (c, k) = w[k*C + c]; constant weights are packed once */
    const float *pb = afrt_packed_const_(w, C, K, C, 1, 1);
    if (!pb) {
        float *bbuf = (float *)afrt_thread_scratch(9, (size_t)(C * Np) * sizeof(float));
        if (!bbuf) return 0;
        afrt_pack_b_full_(w, C, 1, C, K, bbuf);
        pb = bbuf;
    }
    const afrt_epi_clamp *cl = afrt_epi_builtin_clamp_(epi);
    if (cl && cl->res) cl = NULL; /* a residual: the flat form after the store */
    int64_t mb, nb;
    afrt_gemm_split_(hw, K, p->N, &mb, &nb);
    const int64_t nmb = afrt_nblocks_(hw, mb), nnb = afrt_nblocks_(K, nb);
    const int64_t per_img = nmb * nnb, ntiles = p->N * per_img;
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntiles > 1 && afrt_worth_threads_((double)p->N * K * hw * C)))
    for (int64_t t = 0; t < ntiles; ++t) {
        afrt_arrive_();
        const int64_t n = t / per_img, tile = t % per_img;
        const int64_t i0 = (tile / nnb) * mb, j0 = (tile % nnb) * nb;
        const int64_t i1 = afrt_min_(hw, i0 + mb), j1 = afrt_min_(K, j0 + nb);
        const int64_t mt = afrt_round_up_(i1 - i0, MR), jp1 = afrt_round_up_(j1, AFRT_NR);
        /* this thread's packed X^T (k block pc at abuf + pc * mt) and one register tile */
        float *abuf = (float *)afrt_thread_scratch(10, (size_t)(mt * C + MR * AFRT_NR) * sizeof(float));
        if (!abuf) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *ct = abuf + mt * C;
        const float *xn = x + n * C * hw;
        for (int64_t pc = 0; pc < C; pc += AFRT_KC) {
            const int64_t kc = afrt_min_(AFRT_KC, C - pc);
            for (int64_t ic = i0; ic < i0 + mt; ic += MR)
                afrt_pack_rows_t_(xn + pc * hw + ic, hw, afrt_min_(MR, hw - ic), MR, kc,
                                  abuf + pc * mt + (ic - i0) * kc);
        }
        float *yn = y + n * kb * plane;
        for (int64_t jr = j0; jr < jp1; jr += AFRT_NR)
            for (int64_t ic = i0; ic < i0 + mt; ic += MR) {
                for (int64_t pc = 0; pc < C; pc += AFRT_KC) {
                    const int64_t kc = afrt_min_(AFRT_KC, C - pc);
                    afrt_ukernel_(MR, kc, abuf + pc * mt + (ic - i0) * kc, pb + pc * Np + jr * kc,
                                  ct, AFRT_NR, pc > 0);
                }
                afrt_store_blocked_(ct, AFRT_NR, afrt_min_(MR, i1 - ic), afrt_min_(AFRT_NR, j1 - jr),
                                    bias ? bias + jr : NULL, yn + (jr / 16) * plane + ic * 16,
                                    plane, cl);
            }
        if (!cl && epi.fn) /* the epilogue's flat form on each finished block */
            for (int64_t b = j0 / 16; b < afrt_cdiv_(j1, 16); ++b)
                afrt_nc_epilogue_blocked_(epi, y, (n * kb + b) * plane + i0 * 16,
                                          (n * kb + b) * plane + i1 * 16, hw);
    }
    return !failed;
}

/* ---------------------------------------------------------------------------------------------
 * A 1x1 conv on a one-position map (group 1, stride 1, no padding: a squeeze-excite block's
 * two convs after its global pool, e.g. EfficientNet-B0's 1152 -> 48 -> 1152) is a
 * matrix-vector product, y[n][k] = bias[k] + sum_c w[k][c] x[n][c]: OIHW weights are its rows
 * as they lie. The GEMM core ran it as a 12 x 32 tile with one useful column of the 32 and
 * packed x into a panel first (at two threads twice, once per row block, on one thread since
 * such a conv is below the parallel threshold): 28 us for 1152 -> 48, slower at two threads
 * than at one (docs/runtime.md, "Squeeze-excite convs as matrix-vector products"). Here
 * four rows at a time share each load of x, 16 lanes of partial sums per row, summed in a
 * fixed order, so each output has the same bits at any thread count. Above the parallel
 * threshold (work scaled by AFRT_GEMV_WORK) each thread takes one block of rows (a multiple
 * of 4) per image; the epilogue runs on each finished block.
 * ------------------------------------------------------------------------------------------- */
static inline int afrt_conv_gemv_applies(const afrt_conv_params *p) {
    return (p->group <= 1) && p->R == 1 && p->S == 1 && p->H == 1 && p->W == 1 && p->OH == 1 &&
           p->OW == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
           p->pad_left == 0 && p->pad_bottom == 0 && p->pad_right == 0 && p->C >= 1;
}

/* The conv afrt_conv_gemv_applies takes; y must not be read by the epilogue (no in-place
 * residual: afrt_conv2d_f32 detaches one first). */
static inline void afrt_conv_gemv_f32_(const float *x, const float *w, const float *bias, float *y,
                                       const afrt_conv_params *p, afrt_epilogue epi) {
    const int64_t C = p->C, K = p->K;
    const int par = afrt_num_threads_ > 1 && afrt_worth_threads_(AFRT_GEMV_WORK * (double)p->N * K * C);
    /* one block of rows (a multiple of 4) per thread and image */
    const int64_t rb = par ? 4 * afrt_cdiv_(afrt_cdiv_(K, 4), afrt_num_threads_) : K;
    const int64_t nrb = afrt_cdiv_(K, rb), tasks = p->N * nrb;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (par && tasks > 1))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        const int64_t n = t / nrb, k0 = (t % nrb) * rb, k1 = afrt_min_(K, k0 + rb);
        afrt_gemv_rows_(w, C, x + n * C, C, k0, k1, y + n * K);
        afrt_finish_block_(y + n * K, bias, n, k0, k1, 0, 1, 1, epi);
    }
}

static inline void afrt_conv2d_any_f32_(const float *x, const float *w, const float *bias,
                                        float *y, const afrt_conv_params *p, void *scratch,
                                        afrt_epilogue epi) {
    if (p->N <= 0 || p->K <= 0 || p->OH * p->OW <= 0) return;
    afrt_init_once_();
    const afrt_conv_plan_ q = afrt_conv_plan(p);
    const int64_t G = p->group > 0 ? p->group : 1;
    const int64_t ohw = p->OH * p->OW, hw = p->H * p->W;
    if (q.kind == 0) {
        if (afrt_dwconv2d_f32(x, w, bias, y, p, epi)) return;
        const int64_t tasks = p->N * p->K;
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (tasks > 1 && afrt_worth_threads_(AFRT_SLOW_WORK * (double)tasks * ohw * p->R * p->S)))
        for (int64_t t = 0; t < tasks; ++t) {
            afrt_arrive_();
            const int64_t n = t / p->K, k = t % p->K;
            afrt_conv_dw_channel_(x, w, y, p, q.kg, n, k);
            afrt_finish_block_(y + n * p->K * ohw, bias, n, k, k + 1, 0, ohw, ohw, epi);
        }
        return;
    }
    if (afrt_dconv_smallc_applies(p) && afrt_dconv_smallc_f32(x, w, bias, y, p, epi)) return;
    if (afrt_conv_gemv_applies(p)) {
        afrt_conv_gemv_f32_(x, w, bias, y, p, epi);
        return;
    }
    if (!afrt_dconv_smallc_applies(p) && afrt_winograd_applies(p) &&
        afrt_winograd_f32(x, w, bias, y, p, epi))
        return;
    if (q.kind == 1 && afrt_conv1x1t_applies(p) && afrt_conv1x1t_f32(x, w, bias, y, p, epi)) return;
    if (afrt_gemm_strategy_ == AFRT_GEMM_OWN && q.crs > 0 && afrt_conv_own_(x, w, bias, y, p, &q, epi, 0))
        return;
    float *buf = NULL;
    if (q.kind == 2) {
        /* afrt's own core needs no column buffer (afrt_conv2d_scratch_bytes is 0), so when it
         * could not run, this path sizes its own as the tiled strategy would */
        if (afrt_gemm_strategy_ == AFRT_GEMM_OWN)
            scratch = afrt_thread_scratch(0, (size_t)afrt_num_threads_ * (size_t)(q.crs * q.pb) *
                                                 sizeof(float) + 64);
        else if (!scratch) scratch = afrt_thread_scratch(0, afrt_conv2d_scratch_bytes(p));
        if (!scratch) {
            afrt_nomem_("afrt_conv2d_f32");
            return;
        }
        buf = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    }
    if (afrt_gemm_strategy_ == AFRT_GEMM_WHOLE) {
        /* One (OpenBLAS-threaded) sgemm per image and group, then an epilogue pass. */
        for (int64_t n = 0; n < p->N; ++n) {
            for (int64_t g = 0; g < G; ++g) {
                const float *xg = x + (n * p->C + g * q.cg) * hw;
                const float *src = xg;
                if (q.kind == 2) {
                    afrt_im2col_(xg, p, q.cg, 0, ohw, buf);
                    src = buf;
                }
                afrt_sgemm_(0, 0, q.kg, ohw, q.crs, 1.0f, w + g * q.kg * q.crs, q.crs, src, ohw,
                            0.0f, y + (n * p->K + g * q.kg) * ohw, ohw);
            }
            const int64_t rb = 8, nrb = afrt_nblocks_(p->K, rb);
            AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()))
            for (int64_t t = 0; t < nrb; ++t) {
                afrt_arrive_();
                afrt_finish_block_(y + n * p->K * ohw, bias, n, t * rb,
                                   afrt_min_(p->K, t * rb + rb), 0, ohw, ohw, epi);
            }
        }
        return;
    }
    const int64_t tasks = p->N * G * q.npb * q.nkb;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (tasks > 1))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        const int64_t kb_i = t % q.nkb;
        const int64_t pb_i = (t / q.nkb) % q.npb;
        const int64_t g = (t / (q.nkb * q.npb)) % G;
        const int64_t n = t / (q.nkb * q.npb * G);
        const int64_t p0 = pb_i * q.pb, pcount = afrt_min_(ohw, p0 + q.pb) - p0;
        const int64_t k0 = g * q.kg + kb_i * q.kb;
        const int64_t k1 = afrt_min_(g * q.kg + q.kg, k0 + q.kb);
        const float *xg = x + (n * p->C + g * q.cg) * hw;
        const float *wk = w + k0 * q.crs;
        float *yn = y + n * p->K * ohw;
        if (q.kind == 1) {
            afrt_sgemm_(0, 0, k1 - k0, pcount, q.crs, 1.0f, wk, q.crs, xg + p0, hw, 0.0f,
                        yn + k0 * ohw + p0, ohw);
        } else {
            int tid = 0;
#ifdef _OPENMP
            tid = omp_get_thread_num();
#endif
            float *col = buf + (int64_t)tid * q.crs * q.pb;
            afrt_im2col_(xg, p, q.cg, p0, pcount, col);
            afrt_sgemm_(0, 0, k1 - k0, pcount, q.crs, 1.0f, wk, q.crs, col, pcount, 0.0f,
                        yn + k0 * ohw + p0, ohw);
        }
        afrt_finish_block_(yn, bias, n, k0, k1, p0, p0 + pcount, ohw, epi);
    }
}

/* The output may be the residual of a built-in clamp epilogue (afrt_epi_aliases_): the convs
 * that afrt's own GEMM core runs (1x1 and im2col, not gemm_1x1_t) compute it in place; every
 * other path, whose kernels store before the epilogue reads the residual, gets a copy of it. */
static inline void afrt_conv2d_f32(const float *x, const float *w, const float *bias, float *y,
                                   const afrt_conv_params *p, void *scratch, afrt_epilogue epi) {
    const int64_t ohw = p->OH * p->OW;
    if (p->N > 0 && p->K > 0 && ohw > 0 && afrt_epi_aliases_(epi, y, p->K * ohw, ohw)) {
        afrt_init_once_();
        const afrt_conv_plan_ q = afrt_conv_plan(p);
        if (q.kind != 0 && q.crs > 0 && afrt_gemm_strategy_ == AFRT_GEMM_OWN &&
            !afrt_dconv_smallc_applies(p) && !afrt_winograd_applies(p) &&
            !afrt_conv_gemv_applies(p) && !(q.kind == 1 && afrt_conv1x1t_applies(p)) &&
            afrt_conv_own_(x, w, bias, y, p, &q, epi, 0))
            return;
        afrt_epi_clamp local;
        float *copy;
        epi = afrt_epi_detach_(epi, &local, &copy, (size_t)(p->N * p->K * ohw));
        if (!copy) { /* y still holds the residual, untouched: no result without memory */
            afrt_nomem_("afrt_conv2d_f32");
            return;
        }
        afrt_conv2d_any_f32_(x, w, bias, y, p, scratch, epi);
        free(copy);
        return;
    }
    afrt_conv2d_any_f32_(x, w, bias, y, p, scratch, epi);
}

/* ---------------------------------------------------------------------------------------------
 * Two 1x1 convs in a row, column block by column block (fuse-pw-chain): y = epi(w . x + bias),
 * then y2 = epi2(w2 . y + bias2), each a 1x1 stride-1 unpadded group-1 conv on one map (p2's
 * input is p's output: p2->C == p->K). y stays an output (the next block's residual in
 * ResNet); what the chain saves is reading it back from memory: per image, the map's columns
 * are cut into blocks whose slice of y (p->K x block floats) fits about half of L2, and each
 * block runs conv 1's GEMM tile (afrt_gemm_tile_) and at once conv 2's on the columns just
 * written, which are still in L2. Each thread takes whole blocks (static shares, no barrier).
 *
 * Measured (docs/history/fusion-efficiency.md, "the 1x1 -> 1x1 chain"): ResNet-50's layer1
 * conv3 (64 -> 256, over its residual: epi's built-in clamp with res == y) and the next conv1
 * (256 -> 64) on 56 x 56, a 3.2 MB y on a 1 MiB L2, took 50-60 us (2.5-3%) less than the two kernels apart; pairs whose
 * y stays in L2 gain nothing (fuse-pw-chain's rule).
 *
 * y2 may be written over x (plan-buffers' chain_input_operand: same size): each block of y2 is
 * written after conv 1 has read that block of x, which no other block reads. Needs afrt's own
 * GEMM core with both weights constant (packed A from the cache); else, and for any pair
 * afrt_conv1x1_chain_applies refuses, the two convs one after the other (afrt_conv2d_f32,
 * which handles y == the residual; conv 1 reads all of x before conv 2 writes). A block whose
 * thread has no packing buffer runs afterwards on the calling thread; without memory there,
 * afrt_nomem_.
 * ------------------------------------------------------------------------------------------- */

/* The bytes of y a block keeps in L2 (about half of a 1 MiB L2: A's panels, B's packed block
 * and conv 2's output tile take the rest). */
#ifndef AFRT_CHAIN_BLOCK_BYTES
#define AFRT_CHAIN_BLOCK_BYTES (512 * 1024)
#endif

/* Whether afrt_conv1x1_chain_f32 runs p then p2 as a chain: both 1x1, stride 1, unpadded,
 * group 1, dilation 1, on one N x H x W map, p2 reading p's K channels. */
static inline int afrt_conv1x1_chain_applies(const afrt_conv_params *p, const afrt_conv_params *p2) {
    const afrt_conv_params *v[2] = {p, p2};
    for (int i = 0; i < 2; ++i)
        if (v[i]->R != 1 || v[i]->S != 1 || v[i]->group != 1 || v[i]->dil_h != 1 ||
            v[i]->dil_w != 1 || v[i]->pad_top || v[i]->pad_left || v[i]->pad_bottom ||
            v[i]->pad_right || v[i]->stride_h != 1 || v[i]->stride_w != 1 ||
            v[i]->OH != v[i]->H || v[i]->OW != v[i]->W || v[i]->N < 1 || v[i]->C < 1 ||
            v[i]->K < 1 || v[i]->H * v[i]->W < 1)
            return 0;
    return p2->N == p->N && p2->C == p->K && p2->H == p->H && p2->W == p->W;
}

/* How many column blocks afrt_conv1x1_chain_f32 cuts p's map into: enough that a block's
 * slice of y fits AFRT_CHAIN_BLOCK_BYTES and has at most AFRT_NC columns, a multiple of the
 * threads at batch 1 (so each thread's blocks are as many panels: at two threads, blocks of
 * whole panels rounded up gave one thread 1664 of ResNet-50's 3136 columns, and the chain
 * was 28 us slower than the two convs), at most one per AFRT_NR-column panel. */
static inline int64_t afrt_chain_blocks_(const afrt_conv_params *p, int64_t threads) {
    const int64_t hw = p->H * p->W, npan = afrt_cdiv_(hw, AFRT_NR);
    int64_t nblk = afrt_cdiv_(p->K * (int64_t)sizeof(float) * hw, AFRT_CHAIN_BLOCK_BYTES);
    nblk = afrt_max_(afrt_max_(1, nblk), afrt_cdiv_(npan, AFRT_NC / AFRT_NR));
    if (p->N == 1) nblk = afrt_round_up_(nblk, afrt_max_(1, threads));
    return afrt_min_(nblk, npan);
}

/* Columns [*j0, *j1) of block b of nblk over hw columns: whole panels, as even as they go. */
static inline void afrt_chain_cols_(int64_t hw, int64_t nblk, int64_t b, int64_t *j0,
                                    int64_t *j1) {
    const int64_t npan = afrt_cdiv_(hw, AFRT_NR);
    *j0 = b * npan / nblk * AFRT_NR;
    *j1 = afrt_min_(hw, (b + 1) * npan / nblk * AFRT_NR);
}

/* One column block [j0, j1) of image n: conv 1's tile, then conv 2's on it. */
static inline void afrt_chain_block_run_(const float *pa, const float *pa2, const float *x,
                                         const float *bias, float *y, const afrt_conv_params *p,
                                         afrt_epilogue epi, const float *bias2, float *y2,
                                         const afrt_conv_params *p2, afrt_epilogue epi2,
                                         int64_t n, int64_t j0, int64_t j1, float *kbuf) {
    const int64_t hw = p->H * p->W;
    const float *xn = x + n * p->C * hw;
    float *yn = y + n * p->K * hw, *y2n = y2 + n * p2->K * hw;
    const afrt_bsrc_ b1 = {NULL, xn, hw, 0, NULL, NULL, 0, NULL, 0, NULL};
    const afrt_bsrc_ b2 = {NULL, yn, hw, 0, NULL, NULL, 0, NULL, 0, NULL};
    const afrt_tile_finish_ f1 = {yn, bias, 1.0f, n, 0, 0, epi};
    const afrt_tile_finish_ f2 = {y2n, bias2, 1.0f, n, 0, 0, epi2};
    afrt_gemm_tile_(pa, p->K, hw, p->C, &b1, yn, hw, 0, p->K, j0, j1, kbuf, 0, &f1);
    afrt_gemm_tile_(pa2, p2->K, hw, p2->C, &b2, y2n, hw, 0, p2->K, j0, j1, kbuf, 0, &f2);
}

/* y = epi(conv(x; w, bias)), then y2 = epi2(conv(y; w2, bias2)), both 1x1 (above). y may be
 * epi's residual (written over it in place) and y2 may be x (the same bytes, p2->K == p->C);
 * y2 must not be the residual or overlap y. */
static inline void afrt_conv1x1_chain_f32(const float *x, const float *w, const float *bias,
                                          float *y, const afrt_conv_params *p, afrt_epilogue epi,
                                          const float *w2, const float *bias2, float *y2,
                                          const afrt_conv_params *p2, afrt_epilogue epi2) {
    afrt_init_once_();
    const int64_t hw = p->H * p->W;
    const float *pa = NULL, *pa2 = NULL;
    int64_t *fails = NULL;
    if (afrt_gemm_strategy_ == AFRT_GEMM_OWN && afrt_conv1x1_chain_applies(p, p2) &&
        !afrt_conv1x1t_applies(p) && !afrt_conv1x1t_applies(p2)) {
        pa = afrt_packed_const_(w, p->K, p->C, p->C, 0, 0);
        pa2 = pa ? afrt_packed_const_(w2, p2->K, p2->C, p2->C, 0, 0) : NULL;
    }
    const int64_t nblk = pa2 ? afrt_chain_blocks_(p, afrt_num_threads_) : 1, tasks = p->N * nblk;
    if (pa2) fails = (int64_t *)afrt_malloc_((size_t)tasks * sizeof(int64_t));
    if (!fails) { /* not a chain here, or out of memory before anything was written */
        afrt_conv2d_f32(x, w, bias, y, p, NULL, epi);
        afrt_conv2d_f32(y, w2, bias2, y2, p2, NULL, epi2);
        return;
    }
    int nfail = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (tasks > 1 && afrt_worth_threads_((double)p->N * hw * (p->K * p->C + p2->K * p2->C))))
    for (int64_t t = 0; t < tasks; ++t) {
        afrt_arrive_();
        fails[t] = 0;
        float *kbuf = (float *)afrt_thread_scratch(0, (size_t)AFRT_KC * AFRT_NC * sizeof(float));
        if (!kbuf) { /* nothing of this block written yet: the calling thread retries it */
            fails[t] = 1;
            afrt_flag_set_(&nfail);
            continue;
        }
        int64_t j0, j1;
        afrt_chain_cols_(hw, nblk, t % nblk, &j0, &j1);
        afrt_chain_block_run_(pa, pa2, x, bias, y, p, epi, bias2, y2, p2, epi2, t / nblk, j0, j1,
                              kbuf);
    }
    if (nfail) {
        float *kbuf = (float *)afrt_thread_scratch(0, (size_t)AFRT_KC * AFRT_NC * sizeof(float));
        for (int64_t t = 0; t < tasks; ++t) {
            if (!fails[t]) continue;
            if (!kbuf) {
                afrt_nomem_("afrt_conv1x1_chain_f32");
                break;
            }
            int64_t j0, j1;
            afrt_chain_cols_(hw, nblk, t % nblk, &j0, &j1);
            afrt_chain_block_run_(pa, pa2, x, bias, y, p, epi, bias2, y2, p2, epi2, t / nblk,
                                  j0, j1, kbuf);
        }
    }
    free(fails);
}

/* ---------------------------------------------------------------------------------------------
 * afrt_conv3d_f32: NCDHW 3-d convolution (groups, strides, pads, dilations; w [K][C/group][T]
 * [R][S]) on afrt's own GEMM core: per image and group Y[K/group x OD*OH*OW] =
 * W[K/group x C/group*T*R*S] . im2col(x), B's panels packed straight from x
 * (afrt_pack_b_conv3_), with the tiles, shared B and fused epilogue of a 2-d im2col conv
 * (afrt_conv_own2_ on a 2-d view whose planes and maps have the 3-d sizes). Out of memory for
 * packing, a direct loop (afrt_conv3d_naive_). The epilogue's residual is never y (the
 * lowering gives y a copy: the GEMM core stores partial sums in y).
 * ------------------------------------------------------------------------------------------- */
static inline void afrt_conv3d_naive_(const float *x, const float *w, const float *bias,
                                      float *y, const afrt_conv3d_params *p, afrt_epilogue epi) {
    const int64_t G = p->group > 0 ? p->group : 1, cg = p->C / G, kg = p->K / G;
    const int64_t hw = p->H * p->W, dhw = p->D * hw, ohw = p->OH * p->OW, odhw = p->OD * ohw;
    const int64_t trs = p->T * p->R * p->S;
    for (int64_t n = 0; n < p->N; ++n) {
        for (int64_t k = 0; k < p->K; ++k) {
            const float *xg = x + (n * p->C + (k / kg) * cg) * dhw;
            float *yk = y + (n * p->K + k) * odhw;
            for (int64_t o = 0; o < odhw; ++o) {
                const int64_t id0 = (o / ohw) * p->stride_d - p->pad_front;
                const int64_t ih0 = ((o % ohw) / p->OW) * p->stride_h - p->pad_top;
                const int64_t iw0 = (o % p->OW) * p->stride_w - p->pad_left;
                float acc = 0.0f;
                for (int64_t c = 0; c < cg; ++c) {
                    for (int64_t i = 0; i < trs; ++i) {
                        const int64_t id = id0 + (i / (p->R * p->S)) * p->dil_d;
                        const int64_t ih = ih0 + ((i / p->S) % p->R) * p->dil_h;
                        const int64_t iw = iw0 + (i % p->S) * p->dil_w;
                        if (id >= 0 && id < p->D && ih >= 0 && ih < p->H && iw >= 0 && iw < p->W)
                            acc += w[(k * cg + c) * trs + i] * xg[c * dhw + id * hw + ih * p->W + iw];
                    }
                }
                yk[o] = acc;
            }
            afrt_finish_block_(y + n * p->K * odhw, bias, n, k, k + 1, 0, odhw, odhw, epi);
        }
    }
}

static inline void afrt_conv3d_f32(const float *x, const float *w, const float *bias, float *y,
                                   const afrt_conv3d_params *p, afrt_epilogue epi) {
    if (p->N <= 0 || p->K <= 0 || p->OD * p->OH * p->OW <= 0) return;
    afrt_init_once_();
    const int64_t G = p->group > 0 ? p->group : 1;
    const afrt_conv_params v = {p->N, p->C, p->D * p->H, p->W, p->K, p->R, p->S,
                                p->OD * p->OH, p->OW, p->stride_h, p->stride_w, p->pad_top,
                                p->pad_left, p->pad_bottom, p->pad_right, p->dil_h, p->dil_w,
                                p->group};
    const afrt_conv_plan_ q = {.kind = 2, .cg = p->C / G, .kg = p->K / G,
                               .crs = p->C / G * p->T * p->R * p->S};
    if (q.crs > 0 && afrt_conv_own2_(x, w, bias, y, &v, &q, epi, 0, NULL, NULL, NULL, p)) return;
    afrt_conv3d_naive_(x, w, bias, y, p, epi);
}

/* ---------------------------------------------------------------------------------------------
 * gemm_1x1_xb: a 1x1 stride-1 unpadded group-1 conv from NCHW16c x into NCHW y
 * ([N][ceil(C/16)][H][W][16] in, channels past C zero): a conv reading a blocked region's
 * output where its own output leaves the region (assign-layout: SqueezeNet's classifier,
 * 512 -> 1000 at 13x13, after the last fire's blocked concat; a fire's squeeze into an NCHW
 * fire). gemm_1x1's GEMM, Y[K x HW] = W[K x C] . X[C x HW], with its B panels packed from the
 * blocks (afrt_pack_b_nc_: a 16 x 16 transpose per block and half panel, where NCHW's packing
 * copies rows): the same tiles, shared B, epilogue in registers and output as gemm_1x1, so no
 * reorder to NCHW is paid and the classifier keeps the GEMM core's rate, which the blocked
 * direct kernel did not reach on it (1.145x gemm_1x1's time, docs/runtime.md). Where
 * afrt_conv2d_f32 would not take afrt's own GEMM core for this conv (a one-position map, the
 * small-map gemm_1x1_t, another GEMM strategy) or y is the epilogue's residual, x is
 * reordered to NCHW and afrt_conv2d_f32 runs it. Returns 0 without a complete y if the conv
 * does not fit or memory runs out (the generated code then runs afrt_nchwc_naive_f32, flags 1).
 * ------------------------------------------------------------------------------------------- */
static inline int afrt_conv1x1xb_f32(const float *x, const float *w, const float *bias, float *y,
                                     const afrt_conv_params *p, afrt_epilogue epi) {
    if (!afrt_conv1x1b_fits(p)) return 0;
    if (p->N <= 0 || p->K <= 0 || p->OH * p->OW <= 0) return 1;
    afrt_init_once_();
    const int64_t hw = p->H * p->W, C = p->C, cb = afrt_cdiv_(C, 16);
    const afrt_conv_plan_ q = afrt_conv_plan(p);
    if (q.kind == 1 && q.crs > 0 && afrt_gemm_strategy_ == AFRT_GEMM_OWN &&
        !afrt_conv_gemv_applies(p) && !afrt_conv1x1t_applies(p) &&
        !afrt_epi_aliases_(epi, y, p->K * hw, hw) && afrt_conv_own_(x, w, bias, y, p, &q, epi, 1))
        return 1;
    float *t = (float *)afrt_malloc_((size_t)(p->N * C * hw) * sizeof(float));
    if (!t) return 0;
    for (int64_t n = 0; n < p->N; ++n)
        for (int64_t c = 0; c < C; ++c) {
            const float *src = x + ((n * cb + c / 16) * hw) * 16 + c % 16;
            float *dst = t + (n * C + c) * hw;
            for (int64_t i = 0; i < hw; ++i) dst[i] = src[i * 16];
        }
    afrt_conv2d_f32(t, w, bias, y, p, NULL, epi);
    free(t);
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * 16-bit contractions: afrt_matmul_lp / afrt_conv2d_lp (mixed precision, docs/precision.md).
 *
 * lp is AFRT_LP_BF16 or AFRT_LP_F16. Both operands of the GEMM are 16-bit in the packed panels:
 * an operand stored 16-bit (a weight kept in bf16/fp16 in the weights blob: a16 / b16 / w16
 * != 0, the pointer then points at uint16_t data) is repacked as it is; an fp32 operand (an
 * activation) is rounded to the 16-bit type while packing (round to nearest even; the cast at
 * the precision boundary). Products accumulate in fp32 and the fp32 C tile goes through the
 * same bias/alpha/beta/epilogue as the fp32 kernels.
 *
 * Packed 16-bit panels: the fp32 layouts of the GEMM core with each k block's panel rows
 * stored in kl = afrt_lp_kc_(lp, kc) rows: bf16 panels hold k PAIRS, [kl/2][width][2] (the
 * operand order of vdpbf16ps; an odd kc gets a zero row), fp16 panels are [kc][width] halves.
 * Block pc of packed A starts at pc * Mp, panel ic at + ic * kl; packed B likewise (pc * Np,
 * panel j at + j * kl). Constant operands are packed once into the cache (16-bit copies:
 * half the bytes of the fp32 ones).
 *
 * Micro-kernels (chosen at compile time): AVX512_BF16 `vdpbf16ps` (bf16; --cpu native on
 * Zen 4), AVX-512F (bf16 widened by shifts, fp16 by `vcvtph2ps`), portable C otherwise. Every
 * path computes the same products of the same rounded operands in fp32 (bf16 products are
 * exact in fp32; vdpbf16ps adds the odd then the even product of a pair, as the others do),
 * so they differ only in fp32 summation order (and vdpbf16ps flushes denormals).
 * Depthwise convolutions, and any call that cannot get memory for its panels, compute in fp32
 * from the widened weights (activations not rounded).
 * ------------------------------------------------------------------------------------------- */
enum { AFRT_LP_F16 = 1, AFRT_LP_BF16 = 2 };

static inline int64_t afrt_lp_kc_(int lp, int64_t kc) { return lp == AFRT_LP_BF16 ? kc + (kc & 1) : kc; }

static inline uint16_t afrt_f32_to_bf16_(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float afrt_bf16_to_f32_(uint16_t h) {
    const uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline uint16_t afrt_f32_to_f16_(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half, in units of 2^-24 (exact scale) */
        float a;
        memcpy(&a, &ax, sizeof a);
        return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f));
    }
    const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u; /* rebias 127 -> 15 */
    return (uint16_t)(sign | (r >> 13));
}

static inline float afrt_f16_to_f32_(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t x;
    if (e == 0x1fu) x = sign | 0x7f800000u | (m << 13);
    else if (e) x = sign | ((e + 112u) << 23) | (m << 13);
    else {
        const float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline float afrt_lp_to_f32_(int lp, uint16_t h) {
    return lp == AFRT_LP_BF16 ? afrt_bf16_to_f32_(h) : afrt_f16_to_f32_(h);
}

/* dst[i] = src[i] widened, i < n. */
static inline void afrt_lp_widen_(int lp, const uint16_t *src, size_t n, float *dst) {
    size_t nv = 0; /* elements done in vectors (separate loops: no tail counter reuse) */
#if defined(__AVX512F__)
    nv = n / 16 * 16;
    for (size_t i = 0; i < nv; i += 16) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        _mm512_storeu_ps(dst + i, lp == AFRT_LP_BF16
                                      ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                                      : _mm512_cvtph_ps(h));
    }
#endif
    for (size_t i = nv; i < n; ++i) dst[i] = afrt_lp_to_f32_(lp, src[i]);
}

#if defined(__AVX512F__)
/* 16 floats -> 16 bf16 in the low halves of 32-bit lanes (round to nearest even, NaN quiet). */
static inline __m512i afrt_bf16x16_(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
}
#endif

/* np fp32 panels of [kc][w] (panel stride kc*w) -> 16-bit panels (stride kl*w, see above). */
static inline void afrt_lp_narrow_(int lp, const float *restrict src, int64_t kc, int64_t w,
                                   int64_t np, uint16_t *restrict dst) {
    const int64_t kl = afrt_lp_kc_(lp, kc);
    for (int64_t q = 0; q < np; ++q) {
        const float *s = src + q * kc * w;
        uint16_t *d = dst + q * kl * w;
        if (lp == AFRT_LP_BF16) {
            for (int64_t k = 0; k < kc; k += 2) {
                const float *s0 = s + k * w, *s1 = k + 1 < kc ? s0 + w : NULL;
                uint16_t *o = d + k * w; /* pair row k/2: [w][2] */
#if defined(__AVX512F__)
                for (int64_t j = 0; j < w; j += 16) {
                    const int64_t cnt = afrt_min_(16, w - j);
                    const __mmask16 m = (__mmask16)(cnt == 16 ? 0xffffu : (1u << cnt) - 1u);
                    const __m512i lo = afrt_bf16x16_(_mm512_maskz_loadu_ps(m, s0 + j));
                    const __m512i hi = s1 ? afrt_bf16x16_(_mm512_maskz_loadu_ps(m, s1 + j))
                                          : _mm512_setzero_si512();
                    _mm512_mask_storeu_epi32(o + 2 * j, m, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                }
#else
                for (int64_t j = 0; j < w; ++j) {
                    o[2 * j] = afrt_f32_to_bf16_(s0[j]);
                    o[2 * j + 1] = s1 ? afrt_f32_to_bf16_(s1[j]) : 0;
                }
#endif
            }
        } else {
            const int64_t n = kc * w;
            int64_t nv = 0;
#if defined(__AVX512F__)
            nv = n / 16 * 16;
            for (int64_t i = 0; i < nv; i += 16)
                _mm256_storeu_si256((__m256i *)(void *)(d + i),
                                    _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
            for (int64_t i = nv; i < n; ++i) d[i] = afrt_f32_to_f16_(s[i]);
        }
    }
}

/* c[MRV x NR] (ldc) = (acc ? c : 0) + a_panel @ b_panel over one k block of kc (16-bit).
 * AFRT_LP_NO_DPBF16 selects the AVX-512F step even where AVX512_BF16 exists: on this
 * machine's Zen 4 (virtualised) a 1020x1024x1024 bf16 GEMM ran at ~88 GFLOP/s with
 * vdpbf16ps and ~110 with shifts + FMA (fp32: ~140), see docs/precision.md. */
#if defined(__AVX512BF16__) && !defined(AFRT_LP_NO_DPBF16)
#define AFRT_LP_BF16_STEP_(ai, b0, b1, c0, c1)                                                 \
    do {                                                                                       \
        c0 = _mm512_dpbf16_ps(c0, (__m512bh)(ai), (__m512bh)(b0));                             \
        c1 = _mm512_dpbf16_ps(c1, (__m512bh)(ai), (__m512bh)(b1));                             \
    } while (0)
#elif defined(__AVX512F__)
/* AVX-512F without BF16: the pair's odd product, then the even one, as vdpbf16ps. */
#define AFRT_LP_BF16_STEP_(ai, b0, b1, c0, c1)                                                 \
    do {                                                                                       \
        const __m512i hm_ = _mm512_set1_epi32((int)0xffff0000u);                               \
        const __m512 a1_ = _mm512_castsi512_ps(_mm512_and_si512(ai, hm_));                     \
        const __m512 a0_ = _mm512_castsi512_ps(_mm512_slli_epi32(ai, 16));                     \
        c0 = _mm512_fmadd_ps(a1_, _mm512_castsi512_ps(_mm512_and_si512(b0, hm_)), c0);         \
        c1 = _mm512_fmadd_ps(a1_, _mm512_castsi512_ps(_mm512_and_si512(b1, hm_)), c1);         \
        c0 = _mm512_fmadd_ps(a0_, _mm512_castsi512_ps(_mm512_slli_epi32(b0, 16)), c0);         \
        c1 = _mm512_fmadd_ps(a0_, _mm512_castsi512_ps(_mm512_slli_epi32(b1, 16)), c1);         \
    } while (0)
#endif
#if defined(__AVX512F__)
#define AFRT_DEFINE_UKERNEL_LP(NAME, MRV)                                                      \
    static inline void NAME(int lp, int64_t kc, const uint16_t *restrict a,                   \
                            const uint16_t *restrict b, float *restrict c, int64_t ldc,        \
                            int acc) {                                                         \
        AFRT_UK_ZMM_ZERO_(MRV);                                                                \
        if (lp == AFRT_LP_BF16) {                                                              \
            for (int64_t k = 0; k < kc; k += 2) {                                              \
                _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K), AFRT_PF_HINT);                  \
                _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K + 16), AFRT_PF_HINT);             \
                const __m512i b0 = _mm512_loadu_si512((const void *)b);                        \
                const __m512i b1 = _mm512_loadu_si512((const void *)(b + 32));                 \
                for (int i = 0; i < MRV; ++i) {                                                \
                    uint32_t av;                                                               \
                    memcpy(&av, a + 2 * i, sizeof av);                                         \
                    const __m512i ai = _mm512_set1_epi32((int)av);                             \
                    AFRT_LP_BF16_STEP_(ai, b0, b1, c0[i], c1[i]);                              \
                }                                                                              \
                a += 2 * MRV;                                                                  \
                b += 2 * AFRT_NR;                                                              \
            }                                                                                  \
        } else {                                                                               \
            float at[16];                                                                      \
            for (int64_t k = 0; k < kc; ++k) {                                                 \
                _mm_prefetch(AFRT_PF_ADDR(b, AFRT_NR * AFRT_PF_K / 2), AFRT_PF_HINT);              \
                const __m512 b0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)b)); \
                const __m512 b1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(b + 16))); \
                /* 16 halves from a row of MRV: panels carry 16 halves of tail padding */      \
                _mm512_storeu_ps(at, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)a))); \
                AFRT_UK_ZMM_RANK1_(MRV, at, b0, b1);                                           \
                a += MRV;                                                                      \
                b += AFRT_NR;                                                                  \
            }                                                                                  \
        }                                                                                      \
        AFRT_UK_ZMM_STORE_(MRV);                                                               \
    }
#else
/* Portable C: the same products in fp32, rows in passes of AFRT_UK_ROWS as the fp32 kernel. */
#define AFRT_DEFINE_UKERNEL_LP(NAME, MRV)                                                      \
    static inline void NAME(int lp, int64_t kc, const uint16_t *restrict a,                   \
                            const uint16_t *restrict b, float *restrict c, int64_t ldc,        \
                            int acc) {                                                         \
        const int pair = lp == AFRT_LP_BF16, step = pair ? 2 : 1;                              \
        for (int r0 = 0; r0 < MRV; r0 += AFRT_UK_ROWS) {                                       \
            float t[AFRT_UK_ROWS][AFRT_NR];                                                    \
            for (int i = 0; i < AFRT_UK_ROWS; ++i)                                             \
                for (int j = 0; j < AFRT_NR; ++j) t[i][j] = 0.0f;                              \
            const uint16_t *ap = a, *bp = b;                                                   \
            for (int64_t k = 0; k < kc; k += step) {                                           \
                float bw[2][AFRT_NR];                                                          \
                for (int j = 0; j < AFRT_NR; ++j) {                                            \
                    bw[0][j] = afrt_lp_to_f32_(lp, bp[pair ? 2 * j : j]);                      \
                    bw[1][j] = pair ? afrt_lp_to_f32_(lp, bp[2 * j + 1]) : 0.0f;               \
                }                                                                              \
                for (int i = 0; i < AFRT_UK_ROWS; ++i) {                                       \
                    const int64_t r = r0 + i;                                                  \
                    const float a0 = afrt_lp_to_f32_(lp, ap[pair ? 2 * r : r]);                \
                    const float a1 = pair ? afrt_lp_to_f32_(lp, ap[2 * r + 1]) : 0.0f;         \
                    for (int j = 0; j < AFRT_NR; ++j) {                                        \
                        t[i][j] += a1 * bw[1][j];                                              \
                        t[i][j] += a0 * bw[0][j];                                              \
                    }                                                                          \
                }                                                                              \
                ap += step * MRV;                                                              \
                bp += step * AFRT_NR;                                                          \
            }                                                                                  \
            for (int i = 0; i < AFRT_UK_ROWS; ++i)                                             \
                for (int j = 0; j < AFRT_NR; ++j)                                              \
                    c[(r0 + i) * ldc + j] = (acc ? c[(r0 + i) * ldc + j] : 0.0f) + t[i][j];    \
        }                                                                                      \
    }
#endif
AFRT_DEFINE_UKERNEL_LP(afrt_ukernel_lp12_, 12)
AFRT_DEFINE_UKERNEL_LP(afrt_ukernel_lp8_, 8)

static inline void afrt_ukernel_lp_(int lp, int64_t mr, int64_t kc, const uint16_t *restrict a,
                                    const uint16_t *restrict b, float *restrict c, int64_t ldc,
                                    int acc) {
    if (mr == 12) afrt_ukernel_lp12_(lp, kc, a, b, c, ldc, acc);
    else afrt_ukernel_lp8_(lp, kc, a, b, c, ldc, acc);
}

/* Elements of a whole packed A (M x K) / B (K x N), plus the 16 halves the fp16 kernel may
 * read past a panel's last row. */
static inline size_t afrt_lp_a_elems_(int lp, int64_t M, int64_t K) {
    return (size_t)(afrt_round_up_(M, afrt_choose_mr_(M)) * afrt_lp_kc_(lp, K) + 16);
}
static inline size_t afrt_lp_b_elems_(int lp, int64_t K, int64_t N) {
    return (size_t)(afrt_round_up_(N, AFRT_NR) * afrt_lp_kc_(lp, K) + 16);
}

/* dst[k] = src[k] rounded to lp, k < n. */
static inline void afrt_row_to_lp_(int lp, const float *restrict src, int64_t n,
                                   uint16_t *restrict dst) {
    int64_t nv = 0;
#if defined(__AVX512F__)
    nv = n / 16 * 16;
    for (int64_t k = 0; k < nv; k += 16) {
        const __m512 v = _mm512_loadu_ps(src + k);
        const __m256i h = lp == AFRT_LP_BF16
            ? _mm512_cvtepi32_epi16(afrt_bf16x16_(v))
            : _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256((__m256i *)(void *)(dst + k), h);
    }
#endif
    for (int64_t k = nv; k < n; ++k)
        dst[k] = lp == AFRT_LP_BF16 ? afrt_f32_to_bf16_(src[k]) : afrt_f32_to_f16_(src[k]);
}

/* Packs fp32 op(A) (M x K, lda, trans) into 16-bit panels; tmp: Mp * AFRT_KC floats (used
 * for trans only: rows are rounded and scattered straight into the panels otherwise). */
static inline void afrt_pack_a_lp_(int lp, const float *A, int64_t lda, int trans, int64_t M,
                                   int64_t K, uint16_t *dst, float *tmp) {
    const int64_t mr = afrt_choose_mr_(M), Mp = afrt_round_up_(M, mr);
    for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
        const int64_t kc = afrt_min_(AFRT_KC, K - pc), kl = afrt_lp_kc_(lp, kc);
        if (trans) {
            afrt_pack_a_(A + pc * lda, lda, trans, M, kc, tmp); /* one block */
            afrt_lp_narrow_(lp, tmp, kc, mr, Mp / mr, dst + pc * Mp);
            continue;
        }
        for (int64_t ic = 0; ic < Mp; ic += mr) {
            uint16_t *panel = dst + pc * Mp + ic * kl;
            for (int64_t i = 0; i < mr; ++i) {
                uint16_t t[AFRT_KC + 2];
                if (ic + i < M) afrt_row_to_lp_(lp, A + (ic + i) * lda + pc, kc, t);
                else memset(t, 0, (size_t)kc * sizeof(uint16_t));
                t[kc] = 0; /* the odd k block's zero row */
                if (lp == AFRT_LP_BF16) /* pair row k/2 holds (k, k+1) of each of the mr rows */
                    for (int64_t k = 0; k < kl; k += 2) memcpy(panel + k * mr + 2 * i, t + k, 4);
                else
                    for (int64_t k = 0; k < kc; ++k) panel[k * mr + i] = t[k];
            }
        }
    }
}

/* Packs fp32 op(B) (K x N) into 16-bit panels; tmp: AFRT_KC * AFRT_NC floats. */
static inline void afrt_pack_b_lp_(int lp, const float *B, int64_t ldb, int trans, int64_t K,
                                   int64_t N, uint16_t *dst, float *tmp) {
    const int64_t Np = afrt_round_up_(N, AFRT_NR);
    for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
        const int64_t kc = afrt_min_(AFRT_KC, K - pc), kl = afrt_lp_kc_(lp, kc);
        for (int64_t jc = 0; jc < Np; jc += AFRT_NC) {
            const int64_t nc = afrt_min_(AFRT_NC, Np - jc);
            afrt_pack_b_block_(B, ldb, trans, N, pc, kc, jc, nc, tmp);
            afrt_lp_narrow_(lp, tmp, kc, AFRT_NR, nc / AFRT_NR, dst + pc * Np + jc * kl);
        }
    }
}

/* Elements spanned by op(X) (rows x cols, ld, trans) in its source. */
static inline size_t afrt_span_elems_(int64_t rows, int64_t cols, int64_t ld, int trans) {
    return (size_t)((trans ? cols : rows) - 1) * (size_t)ld + (size_t)(trans ? rows : cols);
}

/* A malloc'ed fp32 copy of n 16-bit elements (free() it); NULL if out of memory. */
static inline float *afrt_lp_widened_(int lp, const uint16_t *src, size_t n) {
    float *f = (float *)afrt_malloc_((n ? n : 1) * sizeof(float));
    if (f) afrt_lp_widen_(lp, src, n, f);
    return f;
}

/* The cached 16-bit packed copy of a constant operand (side 0: A panels, 1: B panels); src is
 * 16-bit when src16. NULL if src is not constant or memory is short. */
static inline const uint16_t *afrt_packed_const_lp_(int lp, const void *src, int src16,
                                                    int64_t rows, int64_t cols, int64_t ld,
                                                    int trans, int side) {
    const size_t n = afrt_span_elems_(rows, cols, ld, trans);
    const uint16_t *found = NULL;
    AFRT_OMP(critical(afrt_cache))
    {
        if (afrt_in_region_(src, n * (src16 ? 2 : 4))) {
            for (int e = 0; e < afrt_n_packed_ && !found; ++e) {
                const afrt_packed_entry_ *q = &afrt_packed_[e];
                if (q->src == src && q->rows == rows && q->cols == cols && q->ld == ld &&
                    q->trans == trans && q->side == side && q->lp == lp)
                    found = (const uint16_t *)q->packed;
            }
            if (!found && afrt_n_packed_ < AFRT_MAX_PACKED) {
                const size_t elems = side == 0 ? afrt_lp_a_elems_(lp, rows, cols)
                                               : afrt_lp_b_elems_(lp, rows, cols);
                uint16_t *buf = (uint16_t *)afrt_alloc_pack_(elems * sizeof(uint16_t));
                float *wide = src16 ? afrt_lp_widened_(lp, (const uint16_t *)src, n) : NULL;
                const float *s = src16 ? wide : (const float *)src;
                const int64_t Mp = afrt_round_up_(rows, afrt_choose_mr_(rows));
                float *tmp = (float *)afrt_malloc_((size_t)(side == 0 ? Mp * AFRT_KC : AFRT_KC * AFRT_NC) * sizeof(float));
                if (buf && s && tmp) {
                    memset(buf + elems - 16, 0, 16 * sizeof(uint16_t));
                    if (side == 0) afrt_pack_a_lp_(lp, s, ld, trans, rows, cols, buf, tmp);
                    else afrt_pack_b_lp_(lp, s, ld, trans, rows, cols, buf, tmp);
                    afrt_packed_entry_ e = {src, rows, cols, ld, trans, side, lp, buf, NULL};
                    afrt_packed_[afrt_n_packed_++] = e;
                    found = buf;
                } else {
                    free(buf);
                }
                free(wide);
                free(tmp);
            }
        }
    }
    return found;
}

/* How op(B) reaches the 16-bit core: prepacked 16-bit panels, or fp32 (dense or im2col)
 * packed per block into kbuf and narrowed into kbuf16. */
typedef struct {
    const uint16_t *packed;
    afrt_bsrc_ f32;
} afrt_bsrc_lp_;

/* afrt_gemm_tile_ on 16-bit panels (pa: packed A, 16-bit); kbuf16: AFRT_KC * AFRT_NC + 16. */
static inline void afrt_gemm_tile_lp_(int lp, const uint16_t *pa, int64_t M, int64_t N, int64_t K,
                                      const afrt_bsrc_lp_ *bs, float *C, int64_t ldc, int64_t i0,
                                      int64_t i1, int64_t j0, int64_t j1, float *kbuf,
                                      uint16_t *kbuf16, int acc0) {
    const int64_t MR = afrt_choose_mr_(M);
    const int64_t Mp = afrt_round_up_(M, MR), Np = afrt_round_up_(N, AFRT_NR);
    float tmp[AFRT_MR * AFRT_NR];
    for (int64_t jc = j0; jc < j1; jc += AFRT_NC) {
        const int64_t nc = afrt_min_(AFRT_NC, j1 - jc);
        const int64_t ncp = afrt_round_up_(nc, AFRT_NR);
        for (int64_t pc = 0; pc < K; pc += AFRT_KC) {
            const int64_t kc = afrt_min_(AFRT_KC, K - pc), kl = afrt_lp_kc_(lp, kc);
            const uint16_t *bp;
            if (bs->packed) {
                bp = bs->packed + pc * Np + jc * kl;
            } else {
                if (bs->f32.conv) afrt_pack_b_conv_(bs->f32.conv, bs->f32.conv_x, N, pc, kc, jc, ncp, kbuf);
                else afrt_pack_b_block_(bs->f32.B, bs->f32.ldb, bs->f32.trans, N, pc, kc, jc, ncp, kbuf);
                afrt_lp_narrow_(lp, kbuf, kc, AFRT_NR, ncp / AFRT_NR, kbuf16);
                bp = kbuf16;
            }
            const uint16_t *ap = pa + pc * Mp;
            for (int64_t ic = i0; ic < i1; ic += MR) {
                const uint16_t *a = ap + ic * kl;
                const int64_t mr = afrt_min_(MR, i1 - ic);
                for (int64_t jr = 0; jr < nc; jr += AFRT_NR) {
                    const int64_t nr = afrt_min_(AFRT_NR, nc - jr);
                    float *c = C + ic * ldc + jc + jr;
                    const int acc = pc > 0 || acc0;
                    if (mr == MR && nr == AFRT_NR) {
                        afrt_ukernel_lp_(lp, MR, kl, a, bp + jr * kl, c, ldc, acc);
                    } else {
                        if (acc)
                            for (int64_t i = 0; i < mr; ++i)
                                for (int64_t j = 0; j < nr; ++j) tmp[i * AFRT_NR + j] = c[i * ldc + j];
                        afrt_ukernel_lp_(lp, MR, kl, a, bp + jr * kl, tmp, AFRT_NR, acc);
                        for (int64_t i = 0; i < mr; ++i)
                            for (int64_t j = 0; j < nr; ++j) c[i * ldc + j] = tmp[i * AFRT_NR + j];
                    }
                }
            }
        }
    }
}

/* Per-thread buffers of the 16-bit core: slot 0 fp32 block, slot 6 its 16-bit copy. */
static inline int afrt_lp_kbufs_(float **kbuf, uint16_t **kbuf16) {
    *kbuf = (float *)afrt_thread_scratch(0, (size_t)AFRT_KC * AFRT_NC * sizeof(float));
    *kbuf16 = (uint16_t *)afrt_thread_scratch(6, ((size_t)AFRT_KC * AFRT_NC + 16) * sizeof(uint16_t));
    return *kbuf && *kbuf16;
}

/* pas[i]: 16-bit packed op(A_i), i < n (A_i = A + i*stride elements): cached for constants,
 * else packed into this thread's slot 7 (slot 8: the fp32 staging block). A 16-bit A is
 * always a constant (a stored weight); 0 if it is not, or if memory is short. */
static inline int afrt_pack_a_all_lp_(int lp, const void *A, int a16, int64_t stride, int64_t n,
                                      int64_t M, int64_t K, int64_t lda, int trans,
                                      const uint16_t **pas) {
    int need = 0;
    for (int64_t i = 0; i < n; ++i) {
        const void *Ai = a16 ? (const void *)((const uint16_t *)A + i * stride)
                             : (const void *)((const float *)A + i * stride);
        pas[i] = afrt_packed_const_lp_(lp, Ai, a16, M, K, lda, trans, 0);
        need |= pas[i] == NULL;
    }
    if (!need) return 1;
    if (a16) return 0;
    const size_t per = afrt_lp_a_elems_(lp, M, K);
    const int64_t Mp = afrt_round_up_(M, afrt_choose_mr_(M));
    uint16_t *abuf = (uint16_t *)afrt_thread_scratch(7, (size_t)n * per * sizeof(uint16_t));
    float *tmp = (float *)afrt_thread_scratch(8, (size_t)(Mp * AFRT_KC) * sizeof(float));
    if (!abuf || !tmp) return 0;
    for (int64_t i = 0; i < n; ++i)
        if (!pas[i]) {
            uint16_t *dst = abuf + (size_t)i * per;
            afrt_pack_a_lp_(lp, (const float *)A + i * stride, lda, trans, M, K, dst, tmp);
            memset(dst + per - 16, 0, 16 * sizeof(uint16_t));
            pas[i] = dst;
        }
    return 1;
}

/* Element idx of a 16-bit (is16) or fp32 operand, as the 16-bit core sees it: fp32 values
 * rounded to lp. For the per-tile scalar fallback when a thread cannot get its buffers. */
static inline float afrt_lp_at_(int lp, const void *p, int is16, int64_t idx) {
    if (is16) return afrt_lp_to_f32_(lp, ((const uint16_t *)p)[idx]);
    const float v = ((const float *)p)[idx];
    return afrt_lp_to_f32_(lp, lp == AFRT_LP_BF16 ? afrt_f32_to_bf16_(v) : afrt_f32_to_f16_(v));
}

/* The 16-bit core for afrt_matmul_lp; 0, before writing anything, if it cannot (memory for
 * the packed operands, a 16-bit operand that is not constant): the caller computes in fp32. */
static inline int afrt_matmul_lp_own_(int lp, int64_t batch, int64_t M, int64_t N, int64_t K,
                                      float alpha, const void *A, int a16, int64_t lda,
                                      int64_t stride_a, int trans_a, const void *B, int b16,
                                      int64_t ldb, int64_t stride_b, int trans_b, float beta,
                                      float *C, int64_t ldc, int64_t stride_c, afrt_epilogue epi) {
    const int64_t na = stride_a == 0 ? 1 : batch, nb = stride_b == 0 ? 1 : batch;
    const uint16_t **pas = (const uint16_t **)afrt_malloc_((size_t)(na + nb) * sizeof(uint16_t *));
    if (!pas) return 0;
    const uint16_t **pbs = pas + na;
    int ok = 1;
    for (int64_t b = 0; b < nb; ++b) {
        const void *Bb = b16 ? (const void *)((const uint16_t *)B + b * stride_b)
                             : (const void *)((const float *)B + b * stride_b);
        pbs[b] = afrt_packed_const_lp_(lp, Bb, b16, K, N, ldb, trans_b, 1);
        ok &= pbs[b] != NULL || !b16;
    }
    if (!ok || !afrt_pack_a_all_lp_(lp, A, a16, stride_a, na, M, K, lda, trans_a, pas)) {
        free(pas);
        return 0;
    }
    int64_t mb, nbk;
    afrt_gemm_split_(M, N, batch, &mb, &nbk);
    const int64_t nmb = afrt_nblocks_(M, mb), nnb = afrt_nblocks_(N, nbk);
    const int64_t ntiles = batch * nmb * nnb;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntiles > 1 && afrt_worth_threads_((double)batch * M * N * K)))
    for (int64_t t = 0; t < ntiles; ++t) {
        afrt_arrive_();
        const int64_t b = t / (nmb * nnb), rest = t % (nmb * nnb);
        const int64_t i0 = (rest / nnb) * mb, j0 = (rest % nnb) * nbk;
        const int64_t i1 = afrt_min_(M, i0 + mb), j1 = afrt_min_(N, j0 + nbk);
        float *Cb = C + b * stride_c;
        float *kbuf;
        uint16_t *kbuf16;
        if (beta != 0.0f && beta != alpha) /* alpha * (AB + (beta/alpha) C) */
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j) Cb[i * ldc + j] *= beta / alpha;
        if (afrt_lp_kbufs_(&kbuf, &kbuf16)) {
            const float *Bf = b16 ? NULL : (const float *)B + b * stride_b;
            afrt_bsrc_lp_ bs = {pbs[stride_b == 0 ? 0 : b], {NULL, Bf, ldb, trans_b, NULL, NULL, 0, NULL, 0, NULL}};
            afrt_gemm_tile_lp_(lp, pas[stride_a == 0 ? 0 : b], M, N, K, &bs, Cb, ldc, i0, i1, j0,
                               j1, kbuf, kbuf16, beta != 0.0f);
        } else { /* no buffers on this thread: the same products, one element at a time */
            const int64_t oa = (stride_a == 0 ? 0 : b) * stride_a, ob = (stride_b == 0 ? 0 : b) * stride_b;
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j) {
                    float s = beta != 0.0f ? Cb[i * ldc + j] : 0.0f;
                    for (int64_t k = 0; k < K; ++k)
                        s += afrt_lp_at_(lp, A, a16, oa + (trans_a ? k * lda + i : i * lda + k)) *
                             afrt_lp_at_(lp, B, b16, ob + (trans_b ? j * ldb + k : k * ldb + j));
                    Cb[i * ldc + j] = s;
                }
        }
        if (alpha != 1.0f)
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j) Cb[i * ldc + j] *= alpha;
        if (epi.fn) epi.fn(epi.ctx, Cb, b, i0, i1, j0, j1, ldc);
    }
    free(pas);
    return 1;
}

/* afrt_matmul_f32 with 16-bit operands (see the section comment): A / B point at uint16_t
 * data when a16 / b16, else at fp32 data that is rounded to lp while packing. */
static inline void afrt_matmul_lp(int lp, int64_t batch, int64_t M, int64_t N, int64_t K,
                                  float alpha, const void *A, int a16, int64_t lda,
                                  int64_t stride_a, int trans_a, const void *B, int b16,
                                  int64_t ldb, int64_t stride_b, int trans_b, float beta,
                                  float *C, int64_t ldc, int64_t stride_c, afrt_epilogue epi) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    afrt_init_once_();
    if (K > 0 && alpha != 0.0f &&
        afrt_matmul_lp_own_(lp, batch, M, N, K, alpha, A, a16, lda, stride_a, trans_a, B, b16,
                            ldb, stride_b, trans_b, beta, C, ldc, stride_c, epi))
        return;
    /* fp32 from widened copies */
    const int64_t na = stride_a == 0 ? 1 : batch, nb = stride_b == 0 ? 1 : batch;
    const size_t sa = (size_t)((na - 1) * stride_a) + afrt_span_elems_(M, K, lda, trans_a);
    const size_t sb = (size_t)((nb - 1) * stride_b) + afrt_span_elems_(K, N, ldb, trans_b);
    float *wa = a16 ? afrt_lp_widened_(lp, (const uint16_t *)A, sa) : NULL;
    float *wb = b16 ? afrt_lp_widened_(lp, (const uint16_t *)B, sb) : NULL;
    if ((!a16 || wa) && (!b16 || wb))
        afrt_matmul_f32(batch, M, N, K, alpha, a16 ? wa : (const float *)A, lda, stride_a, trans_a,
                        b16 ? wb : (const float *)B, ldb, stride_b, trans_b, beta, C, ldc,
                        stride_c, epi);
    else afrt_nomem_("afrt_matmul_lp");
    free(wa);
    free(wb);
}

/* afrt_conv2d_f32 with 16-bit weights / compute: w points at uint16_t data when w16. */
static inline void afrt_conv2d_lp(int lp, const float *x, const void *w, int w16,
                                  const float *bias, float *y, const afrt_conv_params *p,
                                  void *scratch, afrt_epilogue epi) {
    if (p->N <= 0 || p->K <= 0 || p->OH * p->OW <= 0) return;
    afrt_init_once_();
    const afrt_conv_plan_ q = afrt_conv_plan(p);
    const int64_t G = p->group > 0 ? p->group : 1;
    const int64_t ohw = p->OH * p->OW, hw = p->H * p->W, Kg = q.kg, crs = q.crs;
    const uint16_t **pas = q.kind != 0 && crs > 0
        ? (const uint16_t **)afrt_malloc_((size_t)G * sizeof(uint16_t *)) : NULL;
    if (pas && afrt_pack_a_all_lp_(lp, w, w16, Kg * crs, G, Kg, crs, crs, 0, pas)) {
        int64_t mb, nb;
        afrt_gemm_split_(Kg, ohw, p->N * G, &mb, &nb);
        const int64_t nmb = afrt_nblocks_(Kg, mb), nnb = afrt_nblocks_(ohw, nb);
        const int64_t per_img = G * nmb * nnb, ntiles = p->N * per_img;
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntiles > 1 && afrt_worth_threads_((double)p->N * p->K * ohw * crs)))
        for (int64_t t = 0; t < ntiles; ++t) {
            afrt_arrive_();
            const int64_t n = t / per_img, rest = t % per_img;
            const int64_t g = rest / (nmb * nnb), tile = rest % (nmb * nnb);
            const int64_t i0 = (tile / nnb) * mb, j0 = (tile % nnb) * nb;
            const int64_t i1 = afrt_min_(Kg, i0 + mb), j1 = afrt_min_(ohw, j0 + nb);
            float *kbuf;
            uint16_t *kbuf16;
            const float *xg = x + (n * p->C + g * q.cg) * hw;
            float *yn = y + n * p->K * ohw;
            if (afrt_lp_kbufs_(&kbuf, &kbuf16)) {
                afrt_bsrc_lp_ bs = {NULL, {NULL, xg, hw, 0, q.kind == 2 ? p : NULL, xg, 0, NULL, 0, NULL}};
                afrt_gemm_tile_lp_(lp, pas[g], Kg, ohw, crs, &bs, yn + g * Kg * ohw, ohw, i0, i1,
                                   j0, j1, kbuf, kbuf16, 0);
            } else { /* no buffers on this thread: the same products, one output at a time */
                for (int64_t kk = i0; kk < i1; ++kk)
                    for (int64_t pos = j0; pos < j1; ++pos) {
                        const int64_t oh = pos / p->OW, ow = pos % p->OW;
                        float s = 0.0f;
                        for (int64_t c = 0; c < q.cg; ++c)
                            for (int64_t r = 0; r < p->R; ++r)
                                for (int64_t sx = 0; sx < p->S; ++sx) {
                                    const int64_t ih = oh * p->stride_h - p->pad_top + r * p->dil_h;
                                    const int64_t iw = ow * p->stride_w - p->pad_left + sx * p->dil_w;
                                    if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W) continue;
                                    s += afrt_lp_at_(lp, w, w16, ((g * Kg + kk) * q.cg + c) * p->R * p->S + r * p->S + sx) *
                                         afrt_lp_at_(lp, xg, 0, c * hw + ih * p->W + iw);
                                }
                        yn[(g * Kg + kk) * ohw + pos] = s;
                    }
            }
            afrt_finish_block_(yn, bias, n, g * Kg + i0, g * Kg + i1, j0, j1, ohw, epi);
        }
        free(pas);
        return;
    }
    free(pas);
    /* depthwise, or no memory for the packed weights: fp32 from the widened weights */
    float *ww = w16 ? afrt_lp_widened_(lp, (const uint16_t *)w, (size_t)(p->K * q.cg * p->R * p->S)) : NULL;
    if (!w16 || ww) afrt_conv2d_f32(x, w16 ? ww : (const float *)w, bias, y, p, scratch, epi);
    else afrt_nomem_("afrt_conv2d_lp");
    free(ww);
}

/* ---------------------------------------------------------------------------------------------
 * Pooling, NCHW, ONNX MaxPool / AveragePool semantics (explicit pads, strides, dilations).
 * Positions outside the input are skipped (max) or, for average, counted only when
 * count_include_pad != 0 and they lie inside the padded extent. Max propagates NaN like ONNX (a
 * NaN input gives a NaN output); a window with no input position gives -inf (max) or 0 (average).
 * Window sizes R x S; output [N, C, OH, OW].
 *
 * Separably, per output row: first the max / sum over the window's valid input rows into a
 * row buffer (one vectorised pass over W), then per output column over the window's taps of
 * that buffer. The buffer is laid out in padded coordinates: tp[j] is input column j - pad_left,
 * or the pad value (-inf for max, 0 for average, which change no result) where that lies
 * outside the input, so every output column, edges included, is the same branch-free loop over
 * whole taps; GCC vectorises those for 2- and 3-wide windows at stride 1 and 2 (the stride-2
 * loads become permutes) and for the rest tap by tap. Average multiplies by a reciprocal
 * count, one table per call indexed by (valid rows, column), so it rounds the quotient once
 * more than a division would (<= 1 ulp apart; exact for power-of-two counts). 3x3 windows at
 * stride 1 with pads 1 (same-size output) run each pass over a whole plane at once
 * (afrt_pool_flat_). Threads over tasks of planes x bands of output rows (bands only when
 * there are too few planes for the threads), when the call is big enough to pay for waking
 * them (afrt_pool_work_).
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    int64_t N, C, H, W, R, S, OH, OW;
    int64_t stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dil_h, dil_w;
    int count_include_pad; /* average pooling only */
} afrt_pool_params;

/* max(m, v) that propagates NaN like ONNX MaxPool: once either is NaN the result is NaN. */
static inline float afrt_nanmax_(float m, float v) { return (v > m || v != v) ? v : m; }
/* The same without the branch GCC keeps for ||, so loops calling it vectorise. */
static inline float afrt_nanmax_v_(float m, float v) { return ((v > m) | (v != v)) ? v : m; }

/* A pooling call's time in GEMM multiply-adds (~0.02 ns each at one thread), for
 * afrt_worth_threads_: per plane a fixed AFRT_POOL_PLANE_WORK plus AFRT_POOL_WORK per element
 * the two passes touch (rows: OH x R x W, columns: OH x OW x S). Fitted at one thread to
 * DenseNet's 2x2/2 average pools (7x7 to 28x28 maps: ~21 ns per plane + 0.1 ns per element);
 * 3x3 pools take 0.04-0.08 ns per element, so this overestimates them, which only matters
 * near the threshold (~10 us), where a second thread still gains a little. */
#ifndef AFRT_POOL_WORK
#define AFRT_POOL_WORK 5.0
#endif
#ifndef AFRT_POOL_PLANE_WORK
#define AFRT_POOL_PLANE_WORK 1000.0
#endif
static inline double afrt_pool_work_(const afrt_pool_params *p) {
    const double per_plane = (double)p->OH * (double)(p->R * p->W + p->OW * p->S);
    return (double)(p->N * p->C) * (AFRT_POOL_PLANE_WORK + AFRT_POOL_WORK * per_plane);
}

/* How a pooling call is cut up: its row buffer and its tasks. */
typedef struct {
    int64_t L;              /* floats of the row buffer: the columns the windows reach */
    int64_t c0, c1;         /* tp[c0, c1) hold input columns [c0 - pad_left, c1 - pad_left) */
    int64_t bands, band_rows, tasks; /* tasks = planes x bands of band_rows output rows */
} afrt_pool_geom_;

static inline afrt_pool_geom_ afrt_pool_geom_of_(const afrt_pool_params *p, int64_t planes) {
    afrt_pool_geom_ g;
    g.L = p->OW > 0 ? (p->OW - 1) * p->stride_w + (p->S - 1) * p->dil_w + 1 : 1;
    g.c0 = afrt_min_(p->pad_left, g.L);
    g.c1 = afrt_max_(g.c0, afrt_min_(p->pad_left + p->W, g.L));
    /* a few tasks per thread even when the planes are fewer (a lone image's few channels) */
    const int64_t want = 4 * (int64_t)afrt_num_threads_;
    g.bands = planes >= want || afrt_num_threads_ <= 1 ? 1 : afrt_min_(p->OH, afrt_cdiv_(want, planes));
    if (g.bands < 1) g.bands = 1;
    g.band_rows = afrt_cdiv_(p->OH, g.bands);
    g.bands = afrt_cdiv_(p->OH, g.band_rows);
    g.tasks = planes * g.bands;
    return g;
}

/* The row buffer's columns outside the input: the pad value. */
static inline void afrt_pool_pad_fill_(float *tp, const afrt_pool_geom_ *g, float v) {
    for (int64_t j = 0; j < g->c0; ++j) tp[j] = v;
    for (int64_t j = g->c1; j < g->L; ++j) tp[j] = v;
}

#if defined(__AVX512F__)
/* afrt_nanmax_v_ on 16 lanes: (v > m | v != v) ? v : m. */
static inline __m512 afrt_nanmax16_(__m512 m, __m512 v) {
    const __mmask16 k = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(k, m, v);
}

/* Outputs [0, m) of a 3x3 stride-2 max pool row whose windows all lie inside the three input
 * rows a, b, c (tap s of output o at column 2 * o + s): the row max and the column max in
 * registers, no row buffer. 16 outputs from 33 columns: the evens and odds of the first 32 by
 * two permutes, the +2 taps the evens moved down one lane with column 32 in the last; the
 * last block ends at m (recomputing up to 15 outputs, the same values); m < 16: one block of
 * masked loads and a masked store. */
static inline void afrt_pool_max3s2_run_(const float *restrict a, const float *restrict b,
                                         const float *restrict c, float *restrict yr, int64_t m) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    if (m < 16) {
        const int64_t cols = 2 * m + 1; /* <= 31 */
        const __mmask16 k0 = (__mmask16)(cols >= 16 ? 0xFFFFu : (1u << cols) - 1u);
        const __mmask16 k1 = (__mmask16)(cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
        const __m512 r0 = afrt_nanmax16_(afrt_nanmax16_(_mm512_maskz_loadu_ps(k0, a), _mm512_maskz_loadu_ps(k0, b)),
                                         _mm512_maskz_loadu_ps(k0, c));
        const __m512 r1 = afrt_nanmax16_(afrt_nanmax16_(_mm512_maskz_loadu_ps(k1, a + 16), _mm512_maskz_loadu_ps(k1, b + 16)),
                                         _mm512_maskz_loadu_ps(k1, c + 16));
        const __m512 e = _mm512_permutex2var_ps(r0, ie, r1), o = _mm512_permutex2var_ps(r0, io, r1);
        const __m512 e2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(e), _mm512_castps_si512(e), 1));
        _mm512_mask_storeu_ps(yr, (__mmask16)((1u << m) - 1u), afrt_nanmax16_(afrt_nanmax16_(e, o), e2));
        return;
    }
    for (int64_t ow = 0;; ow += 16) {
        if (ow + 16 > m) ow = m - 16;
        const int64_t i = 2 * ow;
        const __m512 r0 = afrt_nanmax16_(afrt_nanmax16_(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)),
                                         _mm512_loadu_ps(c + i));
        const __m512 r1 = afrt_nanmax16_(afrt_nanmax16_(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16)),
                                         _mm512_loadu_ps(c + i + 16));
        const float r32 = afrt_nanmax_v_(afrt_nanmax_v_(a[i + 32], b[i + 32]), c[i + 32]);
        const __m512 e = _mm512_permutex2var_ps(r0, ie, r1), o = _mm512_permutex2var_ps(r0, io, r1);
        const __m512 e2 = _mm512_castsi512_ps(_mm512_alignr_epi32(
            _mm512_castps_si512(_mm512_set1_ps(r32)), _mm512_castps_si512(e), 1));
        _mm512_storeu_ps(yr + ow, afrt_nanmax16_(afrt_nanmax16_(e, o), e2));
        if (ow + 16 >= m) break;
    }
}
#endif

/* One output row of a 3x3 stride-2 (dilation 1) max pool from its three input rows a, b, c
 * (W columns, pl columns of padding on the left): the outputs whose windows lie inside the
 * row by afrt_pool_max3s2_run_ (AVX-512), those reaching into the padding or past the row's
 * end one by one, a tap outside the row being -inf as in the row buffer. The same operations
 * in the same order as the row pass then afrt_pool_cols_max_, so the same bits. Returns 0
 * (nothing written) without AVX-512. */
static AFRT_NOINLINE_ int afrt_pool_max3s2_row_(const float *a, const float *b, const float *c,
                                        float *yr, int64_t OW, int64_t W, int64_t pl) {
#if defined(__AVX512F__)
    const int64_t lo = afrt_min_(OW, (pl + 1) / 2);
    const int64_t hi = afrt_max_(lo, afrt_min_(OW, W + pl >= 3 ? (W + pl - 3) / 2 + 1 : 0));
    if (hi > lo) {
        const int64_t i = 2 * lo - pl;
        afrt_pool_max3s2_run_(a + i, b + i, c + i, yr + lo, hi - lo);
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
        if (ow == lo) ow = hi;
        if (ow >= OW) break;
        float t[3];
        for (int64_t s = 0; s < 3; ++s) {
            const int64_t col = 2 * ow - pl + s;
            t[s] = col >= 0 && col < W ? afrt_nanmax_v_(afrt_nanmax_v_(a[col], b[col]), c[col]) : -INFINITY;
        }
        yr[ow] = afrt_nanmax_v_(afrt_nanmax_v_(t[0], t[1]), t[2]);
    }
    return 1;
#else
    (void)a, (void)b, (void)c, (void)yr, (void)OW, (void)W, (void)pl;
    return 0;
#endif
}

/* y[ow] = max over the taps tp[ow * sw + s * dw], s in [0, S). */
static AFRT_NOINLINE_ void afrt_pool_cols_max_(const float *restrict tp, float *restrict yr,
                                               int64_t OW, int64_t S, int64_t sw, int64_t dw) {
    if (S == 3 && dw == 1 && sw == 2) {
        for (int64_t ow = 0; ow < OW; ++ow)
            yr[ow] = afrt_nanmax_v_(afrt_nanmax_v_(tp[2 * ow], tp[2 * ow + 1]), tp[2 * ow + 2]);
    } else if (S == 3 && dw == 1 && sw == 1) {
        for (int64_t ow = 0; ow < OW; ++ow)
            yr[ow] = afrt_nanmax_v_(afrt_nanmax_v_(tp[ow], tp[ow + 1]), tp[ow + 2]);
    } else if (S == 2 && dw == 1 && sw == 2) {
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = afrt_nanmax_v_(tp[2 * ow], tp[2 * ow + 1]);
    } else {
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = tp[ow * sw];
        for (int64_t s = 1; s < S; ++s)
            for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = afrt_nanmax_v_(yr[ow], tp[ow * sw + s * dw]);
    }
}

/* y[ow] = (sum over the taps tp[ow * sw + s * dw]) * inv[ow]. */
static inline void afrt_pool_cols_avg_(const float *restrict tp, const float *restrict inv,
                                       float *restrict yr, int64_t OW, int64_t S, int64_t sw,
                                       int64_t dw) {
    if (S == 3 && dw == 1 && sw == 1) {
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = (tp[ow] + tp[ow + 1] + tp[ow + 2]) * inv[ow];
    } else if (S == 3 && dw == 1 && sw == 2) {
        for (int64_t ow = 0; ow < OW; ++ow)
            yr[ow] = (tp[2 * ow] + tp[2 * ow + 1] + tp[2 * ow + 2]) * inv[ow];
    } else if (S == 2 && dw == 1 && sw == 2) {
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = (tp[2 * ow] + tp[2 * ow + 1]) * inv[ow];
    } else {
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = tp[ow * sw];
        for (int64_t s = 1; s < S; ++s)
            for (int64_t ow = 0; ow < OW; ++ow) yr[ow] += tp[ow * sw + s * dw];
        for (int64_t ow = 0; ow < OW; ++ow) yr[ow] *= inv[ow];
    }
}

/* 3x3, stride 1, pads 1: the output has the input's size, and both passes can run over a
 * whole plane at once instead of row by row (on Inception's 23x23 and 12x12 maps the per-row
 * loops were mostly loop overhead and tails). Whether a call qualifies, the plane small enough
 * for its buffer (AFRT_POOL_FLAT_MAX floats) and the planes enough for the threads. */
#ifndef AFRT_POOL_FLAT_MAX
#define AFRT_POOL_FLAT_MAX 8192
#endif
static inline int afrt_pool_flat_(const afrt_pool_params *p, const afrt_pool_geom_ *g) {
    return p->R == 3 && p->S == 3 && p->stride_h == 1 && p->stride_w == 1 && p->dil_h == 1 &&
           p->dil_w == 1 && p->pad_top == 1 && p->pad_left == 1 && p->pad_bottom == 1 &&
           p->pad_right == 1 && p->H >= 2 && p->W >= 2 && p->OH == p->H && p->OW == p->W &&
           p->H * p->W <= AFRT_POOL_FLAT_MAX && g->bands == 1;
}

/* One plane of a flat max: v = the max over each position's rows (a flat pass: the row above
 * and below are -W and +W away), then y = the max over v's columns, the first and last
 * column of each row redone without the neighbour across the row's end. The same operations
 * in the same order as the row-buffer path. */
static AFRT_NOINLINE_ void afrt_pool_flat_max_(const float *restrict x, float *restrict v,
                                       float *restrict y, int64_t H, int64_t W) {
    const int64_t n = H * W;
    for (int64_t k = 0; k < W; ++k) v[k] = afrt_nanmax_v_(x[k], x[k + W]);
    for (int64_t k = W; k < n - W; ++k)
        v[k] = afrt_nanmax_v_(afrt_nanmax_v_(x[k - W], x[k]), x[k + W]);
    for (int64_t k = n - W; k < n; ++k) v[k] = afrt_nanmax_v_(x[k - W], x[k]);
    for (int64_t k = 1; k < n - 1; ++k) y[k] = afrt_nanmax_v_(afrt_nanmax_v_(v[k - 1], v[k]), v[k + 1]);
    for (int64_t k = 0; k < n; k += W) {
        y[k] = afrt_nanmax_v_(afrt_nanmax_v_(-INFINITY, v[k]), v[k + 1]);
        y[k + W - 1] = afrt_nanmax_v_(afrt_nanmax_v_(v[k + W - 2], v[k + W - 1]), -INFINITY);
    }
}

/* The same for average: sums from +0.0, times the reciprocal count of each position. */
static AFRT_NOINLINE_ void afrt_pool_flat_avg_(const float *restrict x, float *restrict v,
                                       const float *restrict inv, float *restrict y, int64_t H,
                                       int64_t W) {
    const int64_t n = H * W;
    for (int64_t k = 0; k < W; ++k) v[k] = 0.0f + x[k] + x[k + W];
    for (int64_t k = W; k < n - W; ++k) v[k] = 0.0f + x[k - W] + x[k] + x[k + W];
    for (int64_t k = n - W; k < n; ++k) v[k] = 0.0f + x[k - W] + x[k];
    for (int64_t k = 1; k < n - 1; ++k) y[k] = (v[k - 1] + v[k] + v[k + 1]) * inv[k];
    for (int64_t k = 0; k < n; k += W) {
        y[k] = (0.0f + v[k] + v[k + 1]) * inv[k];
        y[k + W - 1] = (v[k + W - 2] + v[k + W - 1] + 0.0f) * inv[k + W - 1];
    }
}

/* 2x2, stride 2, no padding, even H and W (the output exactly half the input: DenseNet's and
 * GoogLeNet's 2x2/2 pools): the row pairs never straddle a plane, so the column pass runs
 * over a whole plane as one flat loop (on 14x14 and 7x7 maps the per-row passes were mostly
 * loop overhead: 7 outputs per row). Same conditions on the buffer as afrt_pool_flat_. */
static inline int afrt_pool_flat2_(const afrt_pool_params *p, const afrt_pool_geom_ *g) {
    return p->R == 2 && p->S == 2 && p->stride_h == 2 && p->stride_w == 2 && p->dil_h == 1 &&
           p->dil_w == 1 && p->pad_top == 0 && p->pad_left == 0 && p->pad_bottom == 0 &&
           p->pad_right == 0 && p->H % 2 == 0 && p->W % 2 == 0 && p->OH == p->H / 2 &&
           p->OW == p->W / 2 && p->H * p->W <= AFRT_POOL_FLAT_MAX && g->bands == 1;
}

/* One plane of a flat 2x2/2 max: v = the max of each row pair (OH rows of W), then y = the
 * max of v's column pairs, one flat pass (W even: a pair never crosses a row). The same
 * operations in the same order as the row-buffer path, so the same bits. */
static AFRT_NOINLINE_ void afrt_pool_flat2_max_(const float *restrict x, float *restrict v,
                                        float *restrict y, int64_t H, int64_t W) {
    const int64_t OH = H / 2, n = OH * (W / 2);
    for (int64_t r = 0; r < OH; ++r) {
        const float *restrict a = x + 2 * r * W, *restrict b = a + W;
        float *restrict vr = v + r * W;
        for (int64_t c = 0; c < W; ++c) vr[c] = afrt_nanmax_v_(a[c], b[c]);
    }
    for (int64_t k = 0; k < n; ++k) y[k] = afrt_nanmax_v_(v[2 * k], v[2 * k + 1]);
}

/* Software prefetch for max pooling's row pass, on inputs of at least AFRT_POOL_PF_MIN
 * bytes (more than this core's L2 holds of them once the producing conv is done: they come
 * from L3 or DRAM, where the hardware prefetcher fell behind the three-row pattern; smaller
 * inputs are still in L2, where the extra instructions cost 5-10%): per output row, the
 * bytes the pass advances per output row (step floats), AFRT_POOL_PF_BYTES ahead of row
 * pointer a, up to the input's end (no prefetch when end is NULL). Measured with
 * benchmarks/pool2d.py --cold (docs/runtime.md, "Pooling"). */
#ifndef AFRT_POOL_PF_BYTES
#define AFRT_POOL_PF_BYTES 8192
#endif
#ifndef AFRT_POOL_PF_MIN
#define AFRT_POOL_PF_MIN (2 << 20)
#endif
static inline void afrt_pool_prefetch_(const float *a, int64_t step, const char *end) {
    if (!end) return;
    const uintptr_t lo = (uintptr_t)a + AFRT_POOL_PF_BYTES;
    uintptr_t hi = lo + (uintptr_t)step * sizeof(float);
    if (hi > (uintptr_t)end) hi = (uintptr_t)end;
    for (uintptr_t q = lo & ~(uintptr_t)63; q < hi; q += 64) __builtin_prefetch((const void *)q, 0, 3);
}

/* Out of memory for a row buffer in some task: a NaN output rather than stale data. */
static inline void afrt_pool_failed_(float *y, int64_t n, const char *kernel) {
    for (int64_t i = 0; i < n; ++i) y[i] = NAN;
    afrt_nomem_(kernel);
}

static inline void afrt_maxpool2d_f32(const float *x, float *y, const afrt_pool_params *p) {
    const int64_t planes = p->N * p->C, OH = p->OH, OW = p->OW, H = p->H, W = p->W;
    if (planes <= 0 || OH <= 0 || OW <= 0) return;
    const int64_t S = p->S, sw = p->stride_w, dw = p->dil_w, dh = p->dil_h;
    int64_t *rg = (int64_t *)afrt_malloc_((size_t)(2 * OH) * sizeof(int64_t));
    if (!rg) {
        afrt_nomem_("afrt_maxpool2d_f32");
        return;
    }
    for (int64_t oh = 0; oh < OH; ++oh)
        afrt_tap_range_(oh, p->stride_h, p->pad_top, dh, p->R, H, &rg[2 * oh], &rg[2 * oh + 1]);
    const afrt_pool_geom_ g = afrt_pool_geom_of_(p, planes);
    const int64_t nc = g.c1 - g.c0;
    const int flat = afrt_pool_flat_(p, &g), flat2 = !flat && afrt_pool_flat2_(p, &g);
    /* 3x3 stride 2: rows whose three taps are all inside skip the row buffer */
    const int s2 = p->R == 3 && S == 3 && p->stride_h == 2 && sw == 2 && dh == 1 && dw == 1;
    const int64_t in_bytes = planes * H * W * (int64_t)sizeof(float);
    const char *pf_end = in_bytes >= AFRT_POOL_PF_MIN ? (const char *)(x + planes * H * W) : NULL;
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (g.tasks > 1 && afrt_worth_threads_(afrt_pool_work_(p))))
    for (int64_t t = 0; t < g.tasks; ++t) {
        afrt_arrive_();
        float *restrict tp = (float *)afrt_thread_scratch(0, (size_t)(flat || flat2 ? H * W : g.L) * sizeof(float));
        if (!tp) {
            afrt_flag_set_(&failed);
            continue;
        }
        if (flat) {
            afrt_pool_flat_max_(x + t * H * W, tp, y + t * H * W, H, W);
            continue;
        }
        if (flat2) {
            afrt_pool_flat2_max_(x + t * H * W, tp, y + t * OH * OW, H, W);
            continue;
        }
        afrt_pool_pad_fill_(tp, &g, -INFINITY);
        float *restrict d = tp + g.c0;
        const int64_t plane = t / g.bands, oh0 = (t % g.bands) * g.band_rows;
        const int64_t oh1 = afrt_min_(OH, oh0 + g.band_rows);
        const float *xc = x + plane * H * W;
        for (int64_t oh = oh0; oh < oh1; ++oh) {
            const int64_t r_lo = rg[2 * oh], n = rg[2 * oh + 1] - r_lo;
            float *restrict yr = y + (plane * OH + oh) * OW;
            if (n <= 0) { /* the window lies in the padding */
                for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = -INFINITY;
                continue;
            }
            const float *a = xc + (oh * p->stride_h - p->pad_top + r_lo * dh) * W;
            afrt_pool_prefetch_(a, p->stride_h * W, pf_end);
            if (n == 3 && s2 && afrt_pool_max3s2_row_(a, a + W, a + 2 * W, yr, OW, W, p->pad_left))
                continue;
            if (n == 1) {
                for (int64_t i = 0; i < nc; ++i) d[i] = a[i];
            } else if (n == 2) {
                const float *b = a + dh * W;
                for (int64_t i = 0; i < nc; ++i) d[i] = afrt_nanmax_v_(a[i], b[i]);
            } else {
                const float *b = a + dh * W, *c = b + dh * W;
                for (int64_t i = 0; i < nc; ++i) d[i] = afrt_nanmax_v_(afrt_nanmax_v_(a[i], b[i]), c[i]);
                for (int64_t r = 3; r < n; ++r) {
                    const float *restrict row = a + r * dh * W;
                    for (int64_t i = 0; i < nc; ++i) d[i] = afrt_nanmax_v_(d[i], row[i]);
                }
            }
            afrt_pool_cols_max_(tp, yr, OW, S, sw, dw);
        }
    }
    free(rg);
    if (failed) afrt_pool_failed_(y, planes * OH * OW, "afrt_maxpool2d_f32");
}

/* afrt_maxpool2d_f32 on NCHW16c x and y ([N][ceil(C/16)][H][W][16], assign-layout's blocked
 * pools between SqueezeNet's fire modules, docs/c-backend.md): each output position is the
 * max of its window's whole 16-channel vectors (taps outside the map skipped, NaN propagated
 * as afrt_nanmax_ does), so no row buffer and no gather. Channels past C max their zero
 * padding, which stays zero. Threads over (image, block, output row). */
#if defined(__AVX512F__)
/* m folded with taps [s0, s1) of one window row of NCHW16c vectors (xr: tap 0, sstep floats
 * apart) by afrt_nanmax16_, in tap order: the blocked max pool's one rule, which
 * afrt_scb_maxpool_f32 (the stem and its pool as one call) shares. */
static inline __attribute__((always_inline)) __m512 afrt_nc_maxrow_(__m512 m, const float *xr,
                                                                    int64_t s0, int64_t s1,
                                                                    int64_t sstep) {
    for (int64_t s = s0; s < s1; ++s) m = afrt_nanmax16_(m, _mm512_loadu_ps(xr + s * sstep));
    return m;
}
#endif

/* 1: afrt_maxpool2d_nc_f32 prefetches the next output row's new input rows; 0 not (for
 * benchmarks and tests comparing the two). */
static int afrt_pool_pf_ = 1;
static inline void afrt_maxpool2d_nc_f32(const float *x, float *y, const afrt_pool_params *p) {
    const int64_t Cb = afrt_cdiv_(p->C, 16), H = p->H, W = p->W, OH = p->OH, OW = p->OW;
    const int64_t rows = p->N * Cb * OH;
    if (rows <= 0 || OW <= 0) return;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (rows > 1 && afrt_worth_threads_(afrt_pool_work_(p))))
    for (int64_t t = 0; t < rows; ++t) {
        afrt_arrive_();
        const int64_t nb = t / OH, oh = t % OH;
        int64_t r0, r1;
        afrt_tap_range_(oh, p->stride_h, p->pad_top, p->dil_h, p->R, H, &r0, &r1);
        const float *xp = x + nb * H * W * 16;
        float *yr = y + (nb * OH + oh) * OW * 16;
        const int64_t ih0 = oh * p->stride_h - p->pad_top;
        /* rows the next output row reads and this one does not (stride rows past the
         * window's last; at most two, inside the map), prefetched along this row: the stem's
         * output that SqueezeNet's first pool reads comes from L3 (0.75-0.92 of the time
         * without, docs/runtime.md). pf0: the first one's offset in floats from xp. */
        const int64_t nx0 = ih0 + (p->R - 1) * p->dil_h + 1;
        const int64_t pf_rows = afrt_pool_pf_ && oh + 1 < OH && nx0 >= 0
                                    ? afrt_max_(0, afrt_min_(afrt_min_(2, p->stride_h), H - nx0))
                                    : 0;
        const int64_t pf0 = nx0 * W * 16;
        (void)pf_rows, (void)pf0; /* without AVX-512 */
        for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw0 = ow * p->stride_w - p->pad_left;
            int64_t s0 = 0, s1 = p->S;
            if (iw0 < 0 || iw0 + (p->S - 1) * p->dil_w >= W)
                afrt_tap_range_(ow, p->stride_w, p->pad_left, p->dil_w, p->S, W, &s0, &s1);
#if defined(__AVX512F__)
            if (pf_rows) { /* the next output row's new input rows, as far along */
                const int64_t f = pf0 + afrt_max_(0, iw0) * 16;
                _mm_prefetch(AFRT_PF_ADDR(xp, f), _MM_HINT_T0);
                _mm_prefetch(AFRT_PF_ADDR(xp, f + 16), _MM_HINT_T0);
                if (pf_rows > 1) {
                    _mm_prefetch(AFRT_PF_ADDR(xp, f + W * 16), _MM_HINT_T0);
                    _mm_prefetch(AFRT_PF_ADDR(xp, f + W * 16 + 16), _MM_HINT_T0);
                }
            }
            __m512 m = _mm512_set1_ps(-INFINITY);
            for (int64_t r = r0; r < r1; ++r)
                m = afrt_nc_maxrow_(m, xp + ((ih0 + r * p->dil_h) * W + iw0) * 16, s0, s1,
                                    p->dil_w * 16);
            _mm512_storeu_ps(yr + ow * 16, m);
#else
            float m[16];
            for (int l = 0; l < 16; ++l) m[l] = -INFINITY;
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t s = s0; s < s1; ++s) {
                    const float *v = xp + ((ih0 + r * p->dil_h) * W + iw0 + s * p->dil_w) * 16;
                    for (int l = 0; l < 16; ++l) m[l] = afrt_nanmax_v_(m[l], v[l]);
                }
            for (int l = 0; l < 16; ++l) yr[ow * 16 + l] = m[l];
#endif
        }
    }
}

static inline void afrt_avgpool2d_f32(const float *x, float *y, const afrt_pool_params *p) {
    const int64_t planes = p->N * p->C, OH = p->OH, OW = p->OW, H = p->H, W = p->W;
    if (planes <= 0 || OH <= 0 || OW <= 0) return;
    const int64_t R = p->R, S = p->S, sw = p->stride_w, dw = p->dil_w, dh = p->dil_h;
    /* per output row: first valid tap, valid taps, and the count it divides by; then a table
     * of reciprocal counts, row (R + 1) * OW by that row count, column ow */
    int64_t *rg = (int64_t *)afrt_malloc_((size_t)(3 * OH) * sizeof(int64_t) +
                                          (size_t)((R + 1) * OW) * sizeof(float));
    if (!rg) {
        afrt_nomem_("afrt_avgpool2d_f32");
        return;
    }
    float *inv = (float *)(rg + 3 * OH);
    for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t lo, hi, a, b;
        afrt_tap_range_(oh, p->stride_h, p->pad_top, dh, R, H, &lo, &hi);
        afrt_tap_range_(oh, p->stride_h, 0, dh, R, H + p->pad_top + p->pad_bottom, &a, &b);
        rg[3 * oh] = lo, rg[3 * oh + 1] = hi - lo;
        rg[3 * oh + 2] = p->count_include_pad ? b - a : hi - lo;
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t lo, hi, a, b;
        afrt_tap_range_(ow, sw, p->pad_left, dw, S, W, &lo, &hi);
        afrt_tap_range_(ow, sw, 0, dw, S, W + p->pad_left + p->pad_right, &a, &b);
        const int64_t cc = p->count_include_pad ? b - a : hi - lo;
        for (int64_t rc = 0; rc <= R; ++rc)
            inv[rc * OW + ow] = rc > 0 && cc > 0 ? 1.0f / (float)(rc * cc) : 0.0f;
    }
    const afrt_pool_geom_ g = afrt_pool_geom_of_(p, planes);
    const int64_t nc = g.c1 - g.c0;
    /* flat: a reciprocal per output position (the plane's own layout) */
    float *inv2 = afrt_pool_flat_(p, &g) ? (float *)afrt_malloc_((size_t)(OH * OW) * sizeof(float)) : NULL;
    for (int64_t i = 0; inv2 && i < OH * OW; ++i) inv2[i] = inv[rg[3 * (i / OW) + 2] * OW + i % OW];
    int failed = 0;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (g.tasks > 1 && afrt_worth_threads_(afrt_pool_work_(p))))
    for (int64_t t = 0; t < g.tasks; ++t) {
        afrt_arrive_();
        float *restrict tp = (float *)afrt_thread_scratch(0, (size_t)(inv2 ? H * W : g.L) * sizeof(float));
        if (!tp) {
            afrt_flag_set_(&failed);
            continue;
        }
        if (inv2) {
            afrt_pool_flat_avg_(x + t * H * W, tp, inv2, y + t * H * W, H, W);
            continue;
        }
        afrt_pool_pad_fill_(tp, &g, 0.0f);
        float *restrict d = tp + g.c0;
        const int64_t plane = t / g.bands, oh0 = (t % g.bands) * g.band_rows;
        const int64_t oh1 = afrt_min_(OH, oh0 + g.band_rows);
        const float *xc = x + plane * H * W;
        for (int64_t oh = oh0; oh < oh1; ++oh) {
            const int64_t n = rg[3 * oh + 1];
            float *restrict yr = y + (plane * OH + oh) * OW;
            /* sums from +0.0, as the tap-by-tap sum was (a -0.0 input gives +0.0) */
            const float *a = n > 0 ? xc + (oh * p->stride_h - p->pad_top + rg[3 * oh] * dh) * W : xc;
            if (n <= 0) {
                for (int64_t i = 0; i < nc; ++i) d[i] = 0.0f;
            } else if (n == 1) {
                for (int64_t i = 0; i < nc; ++i) d[i] = 0.0f + a[i];
            } else if (n == 2) {
                const float *b = a + dh * W;
                for (int64_t i = 0; i < nc; ++i) d[i] = 0.0f + a[i] + b[i];
            } else {
                const float *b = a + dh * W, *c = b + dh * W;
                for (int64_t i = 0; i < nc; ++i) d[i] = 0.0f + a[i] + b[i] + c[i];
                for (int64_t r = 3; r < n; ++r) {
                    const float *restrict row = a + r * dh * W;
                    for (int64_t i = 0; i < nc; ++i) d[i] += row[i];
                }
            }
            afrt_pool_cols_avg_(tp, inv + rg[3 * oh + 2] * OW, yr, OW, S, sw, dw);
        }
    }
    free(rg);
    free(inv2);
    if (failed) afrt_pool_failed_(y, planes * OH * OW, "afrt_avgpool2d_f32");
}

#ifdef __cplusplus
}
#endif

/* ---------------------------------------------------------------------------------------------
 * Fast elementwise math for generated loops, the one C definition of f32 exp/erf/tanh: the C
 * printer emits calls to these for math.exp/erf/tanh on f32 (model.c includes this header;
 * the Ascend C vector lowering composes the same erf, the same rational function with the same
 * coefficients, from vector calls). Branch-free, so GCC vectorises loops calling them (libm's expf/erff/tanhf are
 * scalar calls without -ffast-math: 43% of a ViT run was in expm1f/tanhf). Defined last in
 * the header, where model.c used to paste them: GCC's inlining order, and so the machine
 * code of generated models, stays what it was.
 * af_expf: Cephes-style range reduction and degree-6 polynomial, relative error ~2e-7; NaN
 *   propagates, x > 88.72 gives inf, results below 2^-125 (x < -86.99) are 0 (no denormals).
 * af_erff: x P(x^2) / Q(x^2), P and Q of degree 5, x clamped to [-3.92, 3.92] (erf(3.92) is
 *   1 in f32) and the result to [-1, 1]: a weighted least-squares fit to erf on [0, 3.92],
 *   benchmarks/fit_erf.py. Error against float64 erf over every positive float (stride 7):
 *   absolute < 3.5e-7, relative < 4e-7, near 0 too (x P/Q is exact to first order there: the
 *   Abramowitz-Stegun 7.1.26 form this replaced, 1 - poly(t) exp(-x^2), lost all relative
 *   accuracy below |x| ~ 1e-5 and gave 0 below 1e-7). No exp, one division: a GELU loop
 *   0.48 -> 0.33 ns per element (AVX-512). Odd; +-inf give +-1, NaN gives NaN, -0.0 stays
 *   -0.0.
 * af_tanhf: (1 - e) / (1 + e) with e = exp(-2|x|), absolute error < 2e-7 (relative error
 *   near 0 as for erf); +-inf give +-1, NaN gives NaN. -0.0 stays -0.0 in erf and tanh.
 * ------------------------------------------------------------------------------------------- */
/* exp of an argument already clamped to [-87, 88.7228391]: the range reduction and polynomial
 * every af_expf variant shares (round to nearest with the 1.5 * 2^23 trick: floorf stops GCC
 * vectorising under -std=c11). */
static inline float af_expf_core_(float xc) {
    const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float y = p * r * r + r + 1.0f;
    const int32_t bits = ((int32_t)n + 126) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale * 2.0f;
}

#if defined(AFRT_NEON_)
/* aarch64: the same arithmetic, with the NaN / overflow choices made on the bit pattern by
 * integer masks and the clamp by fmaxf/fminf (FMAXNM/FMINNM). GCC keeps the float compares
 * of the generic version as branches (they may raise FE_INVALID, and -ftrapping-math is the
 * default), so loops calling it stayed scalar on aarch64; this way they vectorise to NEON.
 * Results are bit-identical to the generic version (NaN: x itself; x > 88.7228391f: inf;
 * the clamp only differs for NaN, whose result is x either way). */
/* r, or x itself where x is NaN: the NaN choice of the NEON forms, made on the bit pattern. */
static inline float af_nan_or_(float x, float r) {
    uint32_t ux, ur;
    memcpy(&ux, &x, sizeof ux);
    memcpy(&ur, &r, sizeof ur);
    const uint32_t is_nan = 0u - (uint32_t)((ux & 0x7fffffffu) > 0x7f800000u);
    ur = (ur & ~is_nan) | (ux & is_nan);
    float res;
    memcpy(&res, &ur, sizeof res);
    return res;
}

static inline float af_expf(float x) {
    uint32_t ux;
    memcpy(&ux, &x, sizeof ux);
    const uint32_t is_big = 0u - (uint32_t)((int32_t)ux > 0x42b17218); /* x > 88.7228391f */
    const float xc = fminf(fmaxf(x, -87.0f), 88.7228391f);
    const float out = af_expf_core_(xc);
    uint32_t uo;
    memcpy(&uo, &out, sizeof uo);
    uo = (uo & ~is_big) | (0x7f800000u & is_big);
    float big;
    memcpy(&big, &uo, sizeof big);
    return af_nan_or_(x, big);
}
#else
static inline float af_expf(float x) {
    const float xc = x > 88.7228391f ? 88.7228391f : (x < -87.0f ? -87.0f : x);
    const float out = af_expf_core_(xc);
    return x != x ? x : (x > 88.7228391f ? INFINITY : out);
}
#endif /* AFRT_NEON_ */

/* af_erff's rational function of a = x clamped to [-3.92, 3.92]: a P(a^2) / Q(a^2), the
 * coefficients AFRT_ERF_* (defined with the GELU epilogue, which computes the same function on
 * 16 lanes; the Ascend C lowering reads the same ones, a test checks). */
static inline float af_erff_rational_(float a) {
    const float z = a * a;
    const float p =
        ((((AFRT_ERF_P5 * z + AFRT_ERF_P4) * z + AFRT_ERF_P3) * z + AFRT_ERF_P2) * z + AFRT_ERF_P1) * z +
        AFRT_ERF_P0;
    const float q =
        ((((AFRT_ERF_Q5 * z + AFRT_ERF_Q4) * z + AFRT_ERF_Q3) * z + AFRT_ERF_Q2) * z + AFRT_ERF_Q1) * z +
        AFRT_ERF_Q0;
    return a * p / q;
}

#if defined(AFRT_NEON_)
/* aarch64: the clamps by fminf (FMINNM) and NaN restored from the bit pattern,
 * as af_expf does there, so loops calling it vectorise; bit-identical to the generic form. */
static inline float af_erff(float x) {
    return af_nan_or_(x, copysignf(fminf(af_erff_rational_(fminf(fabsf(x), AFRT_ERF_CLAMP)), 1.0f), x));
}
#else
static inline float af_erff(float x) {
    /* on |x|, with compares that are false for NaN, so NaN runs through the arithmetic */
    const float ax = fabsf(x);
    const float r = af_erff_rational_(ax > AFRT_ERF_CLAMP ? AFRT_ERF_CLAMP : ax);
    return copysignf(r > 1.0f ? 1.0f : r, x);
}
#endif /* AFRT_NEON_ */

static inline float af_tanhf(float x) {
    const float a = fabsf(x);
    const float e = af_expf(-2.0f * a);
    return copysignf((1.0f - e) / (1.0f + e), x);
}

/* Fast-math variants, used by fused kernels marked fusion.fast_math (the ``fast_math`` config
 * key, docs/fusion.md); cheaper and less exact, which ``precision: {validate: true}`` measures:
 * af_fast_expf: 2^f by a quartic in f (|f| <= 0.5, one rounding step instead of af_expf's
 *   two-constant reduction), relative error < 6e-5; same clamping as af_expf.
 * af_fast_erff: Abramowitz-Stegun 7.1.27 (one division, no exp), absolute error < 5e-4.
 * af_fast_tanhf: the [3/2] Pade form x (27 + x^2) / (27 + 9 x^2) on |x| <= 3, +-1 beyond;
 *   absolute error < 2.5e-2 (a deliberately coarse choice: validation rolls it back where the
 *   tolerance is tight). All three propagate NaN. */
static inline float af_fast_expf(float x) {
    const float xc = x > 88.7228391f ? 88.7228391f : (x < -87.0f ? -87.0f : x);
    const float t = xc * 1.44269504088896341f;
    const float n = (t + 12582912.0f) - 12582912.0f;
    const float f = t - n;
    const float p =
        1.0f + f * (0.693147181f + f * (0.240226507f + f * (0.0555041087f + f * 0.00961812911f)));
    const int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x != x ? x : (x > 88.7228391f ? INFINITY : p * scale);
}

static inline float af_fast_erff(float x) {
    const float a = fabsf(x);
    const float d = 1.0f + a * (0.278393f + a * (0.230389f + a * (0.000972f + a * 0.078108f)));
    const float d2 = d * d;
    const float r = 1.0f - 1.0f / (d2 * d2);
    return x != x ? x : copysignf(r, x);
}

static inline float af_fast_tanhf(float x) {
    const float c = x > 3.0f ? 3.0f : (x < -3.0f ? -3.0f : x);
    const float c2 = c * c;
    const float r = c * (27.0f + c2) / (27.0f + 9.0f * c2);
    return x != x ? x : r;
}
/* ---------------------------------------------------------------------------------------------
 * Attention, streamed: out[b] = softmax(scale * q[b] @ k[b]^T + mask[b]) @ v[b] without
 * storing the [S, T] score matrix. Each task (batch index b, a block of BQ query rows) walks
 * the keys in blocks of AFRT_ATTN_KB with an online softmax: per row a running max m and sum
 * l; when a block raises m, the row's partial output and l are rescaled by exp(m_old - m_new).
 * The score block (BQ x KB floats) stays in the core's L2. With T <= AFRT_ATTN_KB this is the
 * exact two-pass softmax per query block.
 *   q: [batch, S, D], k: [batch, T, D], v: [batch, T, E], out: [batch, S, E] (dense);
 *   q/k/v batch strides 0 broadcast one matrix. mask (NULL: none) is read at
 *   mask[moff(b) + s * mask_s + t * mask_t], moff from the batch dims' strides (0 broadcasts).
 *   Semantics as the two-pass reference: a NaN score gives a NaN row; a row whose every score is
 *   -inf gives NaN (0/0), or 0 with nan_to_zero (the exporters' Where(IsNaN(p), 0, p) guard).
 * Out of memory for a task's score block: the whole output is NaN rather than stale data.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_ATTN_MAX_BATCH_DIMS 6
typedef struct {
    int64_t batch, S, T, D, E;
    int64_t q_bstride, k_bstride, v_bstride;
    int64_t nbd;                                  /* batch dims of the output (<= 6) */
    int64_t bdims[AFRT_ATTN_MAX_BATCH_DIMS];      /* their sizes */
    int64_t mask_bstr[AFRT_ATTN_MAX_BATCH_DIMS];  /* mask stride per batch dim (0 broadcasts) */
    int64_t mask_s, mask_t;
    int64_t nan_to_zero;
} afrt_attn_params;

#ifndef AFRT_ATTN_KB
#define AFRT_ATTN_KB 512
#endif
/* Floats of the score block a task keeps (512 KiB, half this core's L2; measured: 1.2x faster
 * than 96 KiB at S = T = 2048 because k and v are re-packed once per query block). */
#ifndef AFRT_ATTN_TILE_FLOATS
#define AFRT_ATTN_TILE_FLOATS 131072
#endif

/* Row max (NaN-propagating) and sum in 16 independent lanes, so GCC vectorises them without
 * -ffast-math (a single accumulator is a serial chain it must not reorder). */
#define AFRT_LANES_ 16
#if defined(AFRT_NEON_)
/* NEON: the same 16 lanes in 4 vectors, so the sum adds in exactly the portable order. FMAX
 * returns NaN when either operand is NaN, which is the NaN-propagating max. */
static inline float afrt_row_nanmax_(const float *x, int64_t n) {
    float32x4_t acc[4];
    for (int u = 0; u < 4; ++u) acc[u] = vdupq_n_f32(-INFINITY);
    int64_t c = 0;
    for (; c + AFRT_LANES_ <= n; c += AFRT_LANES_)
        for (int u = 0; u < 4; ++u) acc[u] = vmaxq_f32(acc[u], vld1q_f32(x + c + 4 * u));
    float m = -INFINITY;
    for (; c < n; ++c) m = afrt_nanmax_(m, x[c]);
    float lanes[AFRT_LANES_];
    for (int u = 0; u < 4; ++u) vst1q_f32(lanes + 4 * u, acc[u]);
    for (int u = 0; u < AFRT_LANES_; ++u) m = afrt_nanmax_(m, lanes[u]);
    return m;
}

static inline float afrt_row_sum_(const float *x, int64_t n) {
    float32x4_t acc[4];
    for (int u = 0; u < 4; ++u) acc[u] = vdupq_n_f32(0.0f);
    int64_t c = 0;
    for (; c + AFRT_LANES_ <= n; c += AFRT_LANES_)
        for (int u = 0; u < 4; ++u) acc[u] = vaddq_f32(acc[u], vld1q_f32(x + c + 4 * u));
    float s = 0.0f;
    for (; c < n; ++c) s += x[c];
    float lanes[AFRT_LANES_];
    for (int u = 0; u < 4; ++u) vst1q_f32(lanes + 4 * u, acc[u]);
    for (int u = 0; u < AFRT_LANES_; ++u) s += lanes[u];
    return s;
}
#else
static inline float afrt_row_nanmax_(const float *x, int64_t n) {
    float acc[AFRT_LANES_];
    for (int u = 0; u < AFRT_LANES_; ++u) acc[u] = -INFINITY;
    int64_t c = 0;
    for (; c + AFRT_LANES_ <= n; c += AFRT_LANES_)
        for (int u = 0; u < AFRT_LANES_; ++u) { /* afrt_nanmax_ without its branch */
            const float v = x[c + u];
            acc[u] = ((v > acc[u]) | (v != v)) ? v : acc[u];
        }
    float m = -INFINITY;
    for (; c < n; ++c) m = afrt_nanmax_(m, x[c]);
    for (int u = 0; u < AFRT_LANES_; ++u) m = afrt_nanmax_(m, acc[u]);
    return m;
}

static inline float afrt_row_sum_(const float *x, int64_t n) {
    float acc[AFRT_LANES_] = {0};
    int64_t c = 0;
    for (; c + AFRT_LANES_ <= n; c += AFRT_LANES_)
        for (int u = 0; u < AFRT_LANES_; ++u) acc[u] += x[c + u];
    float s = 0.0f;
    for (; c < n; ++c) s += x[c];
    for (int u = 0; u < AFRT_LANES_; ++u) s += acc[u];
    return s;
}
#endif /* AFRT_NEON_ */

/* ---------------------------------------------------------------------------------------------
 * LayerNorm over rows (the C lowering of nn.layer_norm, f32): each row of `cols` values,
 *   y = (x - mean) * (1 / sqrt(var + eps)) * scale + bias,
 * mean and the two-pass variance (the mean of (x - mean)^2) as the generated row loop computed
 * them. scale and bias hold `cols` values or 1 (broadcast); 0 for none. The generated loop had
 * one accumulator per sum, a serial chain of adds (34 us for BERT-base's 128 x 768 rows against
 * 17 here, docs/runtime.md "LayerNorm rows"); here the sums run in four vectors (AVX-512) or in
 * AFRT_LANES_ lanes (elsewhere). */
#ifndef AFRT_ROW_WORK
/* afrt_worth_threads_ work per element of a row loop: 32768 elements (as the generated loops'
 * PARALLEL_MIN_WORK) split over the threads. */
#define AFRT_ROW_WORK 16.0
#endif
#if defined(__AVX512F__)
static inline __mmask16 afrt_tail_mask_(int64_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
}
/* sum over x[0, n) of x - m, squared when `sq` (m 0: the plain sum), in four vectors */
static inline float afrt_row_moment_(const float *x, int64_t n, float m, int sq) {
    const __m512 mv = _mm512_set1_ps(m);
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    int64_t c = 0;
    for (; c + 64 <= n; c += 64)
        for (int u = 0; u < 4; ++u) {
            const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + c + 16 * u), mv);
            a[u] = sq ? _mm512_fmadd_ps(d, d, a[u]) : _mm512_add_ps(a[u], d);
        }
    for (int u = 0; c < n; c += 16, ++u) { /* at most three whole vectors and a tail */
        const __mmask16 k = afrt_tail_mask_(n - c);
        const __m512 d = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + c), mv);
        a[u] = sq ? _mm512_fmadd_ps(d, d, a[u]) : _mm512_add_ps(a[u], d);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
}
#else
static inline float afrt_row_moment_(const float *x, int64_t n, float m, int sq) {
    if (!sq) return afrt_row_sum_(x, n); /* m is 0 */
    float acc[AFRT_LANES_] = {0};
    int64_t c = 0;
    for (; c + AFRT_LANES_ <= n; c += AFRT_LANES_)
        for (int u = 0; u < AFRT_LANES_; ++u) {
            const float d = x[c + u] - m;
            acc[u] += d * d;
        }
    float s = 0.0f;
    for (; c < n; ++c) s += (x[c] - m) * (x[c] - m);
    for (int u = 0; u < AFRT_LANES_; ++u) s += acc[u];
    return s;
}
#endif

static inline void afrt_layernorm_f32(const float *x, const float *scale, int64_t scale_n,
                                      const float *bias, int64_t bias_n, float *y, int64_t rows,
                                      int64_t cols, float eps) {
    const float inv_n = 1.0f / (float)cols;
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (rows > 1 && afrt_worth_threads_(AFRT_ROW_WORK * (double)rows * cols)))
    for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        const float mean = afrt_row_moment_(xr, cols, 0.0f, 0) * inv_n;
        const float inv = 1.0f / sqrtf(afrt_row_moment_(xr, cols, mean, 1) * inv_n + eps);
        const float s0 = scale_n == 1 ? scale[0] : 1.0f, b0 = bias_n == 1 ? bias[0] : 0.0f;
        if (scale_n > 1 && bias_n > 1) {
            for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv * scale[c] + bias[c];
        } else if (scale_n > 1) {
            for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv * scale[c] + b0;
        } else if (bias_n > 1) {
            for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv * s0 + bias[c];
        } else {
            for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv * s0 + b0;
        }
    }
}

#ifndef AFRT_ATTN_BQ_MAX
#define AFRT_ATTN_BQ_MAX 256
#endif

static inline int64_t afrt_attn_mask_offset_(const afrt_attn_params *p, int64_t b) {
    int64_t off = 0;
    for (int64_t d = p->nbd - 1; d >= 0; --d) {
        off += (b % p->bdims[d]) * p->mask_bstr[d];
        b /= p->bdims[d];
    }
    return off;
}

#if defined(__AVX512F__)
/* ---------------------------------------------------------------------------------------------
 * AVX-512 attention core (afrt_attention_f32 calls it on AVX-512 builds). Same blocks and online
 * softmax as the portable loop below, but no generic GEMM: per key block, k is transposed once
 * per task into kt[D][kbp] (kbp = the block rounded up to 64 columns, zero padded); then each
 * group of AFRT_ATTN_RB query rows computes its scores straight from q's rows (broadcast) and
 * kt (6 rows x 64 columns in 24 registers), adds scale and mask and takes the row max in the
 * same store, runs exp and the row sum in one vector pass over its scores (6 x kbp floats, in
 * L1), rescales its partial output and accumulates p @ v reading v's rows in place. So neither
 * the score block nor q / p / v is packed, and the [S, T] scores are never stored.
 * Measured against the portable loop (one thread, q/k/v [12, S, 64], best of 10-20 calls,
 * interleaved, load 4-8 on 2 cores): S = 128 1.42 -> 0.51-0.53 ms, S = 512 19.5-23 -> 9.2-9.8 ms
 * (load 4) and 61-65 -> 30-31 ms (load 8); docs/c-backend.md.
 * ------------------------------------------------------------------------------------------- */
#define AFRT_ATTN_RB 6

/* af_expf on 16 lanes: the same range reduction and polynomial (FMA-contracted, so results can
 * differ from af_expf in the last bit), scaled by 2^n with one vscalefps instead of building the
 * exponent bits (cvt, add, shift and two multiplies): 15 operations where that took 19. NaN
 * propagates (max returns its second operand, x, for NaN, and the mask keeps NaN lanes); inputs
 * below -87 give 0 as af_expf (n = -126: the lane is masked to zero). Only called with x <= 0 or
 * NaN (scores minus their running max); a positive x gives its exp, +inf past 88.7. */
static inline __m512 afrt_exp512_(__m512 x) {
    const __m512 xc = _mm512_max_ps(_mm512_set1_ps(-87.0f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    /* n >= -125 or NaN: y 2^n (exact: y in [0.7, 1.5), no subnormal result); n = -126: 0 */
    const __mmask16 live = _mm512_cmp_ps_mask(n, _mm512_set1_ps(-125.5f), _CMP_NLT_UQ);
    return _mm512_maskz_scalef_ps(live, y, n);
}

static inline __mmask16 afrt_lanes_(int64_t n) {
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1u);
}

/* kt[d * kbp + c] = k[(j0 + c) * D + d] for c < cols, 0 for cols <= c < kbp. */
static inline void afrt_attn_pack_kt_(const float *k, int64_t D, int64_t j0, int64_t cols,
                                      int64_t kbp, float *kt) {
    for (int64_t d = 0; d < D; ++d) memset(kt + d * kbp + cols, 0, (size_t)(kbp - cols) * sizeof(float));
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) { /* 16 key rows -> 16-column strips, 16 d at a time */
        const float *src = k + (j0 + c) * D;
        for (int64_t d0 = 0; d0 < D; d0 += 16) {
            const int64_t nd = afrt_min_(16, D - d0);
            float blk[16][16];
            for (int t = 0; t < 16; ++t)
                _mm512_storeu_ps(blk[t], _mm512_maskz_loadu_ps(afrt_lanes_(nd), src + t * D + d0));
            for (int64_t d = 0; d < nd; ++d) {
                float *o = kt + (d0 + d) * kbp + c;
                for (int t = 0; t < 16; ++t) o[t] = blk[t][d];
            }
        }
    }
    for (; c < cols; ++c)
        for (int64_t d = 0; d < D; ++d) kt[d * kbp + c] = k[(j0 + c) * D + d];
}

/* Scores of AFRT_ATTN_RB rows against kt's columns [c, c + 16 nv) (nv = 1..4 vectors of 16,
 * a constant where inlined, so the accumulators stay in registers): stored to s with scale and
 * mask (mr[r] + c, read for the lanes < cols only), -inf past cols, folded into mx / nan. */
static inline __attribute__((always_inline)) void afrt_attn_score_cols_(
    const float *const *qr, const float *kt, int64_t D, int64_t kbp, int64_t c, int64_t cols,
    __m512 vs, const float *const *mr, float *s, __m512 *mx, __mmask16 *nan, const int nv) {
    __m512 acc[AFRT_ATTN_RB][4];
    for (int r = 0; r < AFRT_ATTN_RB; ++r)
        for (int u = 0; u < nv; ++u) acc[r][u] = _mm512_setzero_ps();
    const float *kc = kt + c;
    for (int64_t d = 0; d < D; ++d) {
        __m512 b[4];
        for (int u = 0; u < nv; ++u) b[u] = _mm512_loadu_ps(kc + d * kbp + 16 * u);
        for (int r = 0; r < AFRT_ATTN_RB; ++r) {
            const __m512 a = _mm512_set1_ps(qr[r][d]);
            for (int u = 0; u < nv; ++u) acc[r][u] = _mm512_fmadd_ps(a, b[u], acc[r][u]);
        }
    }
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int u = 0; u < nv; ++u) {
        const int64_t c0 = c + 16 * u;
        const __mmask16 ok = afrt_lanes_(cols - c0);
        for (int r = 0; r < AFRT_ATTN_RB; ++r) {
            __m512 x = _mm512_mul_ps(acc[r][u], vs);
            if (mr[r]) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(ok, mr[r] + c0));
            x = _mm512_mask_blend_ps(ok, ninf, x);
            nan[r] |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
            mx[r] = _mm512_max_ps(mx[r], x);
            _mm512_storeu_ps(s + r * kbp + c0, x);
        }
    }
}

/* Scores of AFRT_ATTN_RB rows (q rows qr[r], D long) against kt's columns [0, cols):
 * s[r * kbp + c] = scale * q_r . k_c + mask_r[c] (mask_r NULL: none; read only for c < cols,
 * contiguous), -inf for c >= cols up to cols rounded up to 16 (no further: the last 64-column
 * chunk computes only the vectors that hold keys, e.g. 13 of 16 for ViT's T = 197);
 * rmax[r] = max over c < cols, NaN if any score is NaN. */
static inline void afrt_attn_scores_(const float *const *qr, const float *kt, int64_t D,
                                     int64_t kbp, int64_t cols, float scale,
                                     const float *const *mr, float *s, float *rmax) {
    __m512 mx[AFRT_ATTN_RB];
    __mmask16 nan[AFRT_ATTN_RB];
    for (int r = 0; r < AFRT_ATTN_RB; ++r) {
        mx[r] = _mm512_set1_ps(-INFINITY);
        nan[r] = 0;
    }
    const __m512 vs = _mm512_set1_ps(scale);
    int64_t c = 0;
    for (; c + 48 < cols; c += 64) afrt_attn_score_cols_(qr, kt, D, kbp, c, cols, vs, mr, s, mx, nan, 4);
    switch (afrt_cdiv_(cols - c, 16)) {
    case 3: afrt_attn_score_cols_(qr, kt, D, kbp, c, cols, vs, mr, s, mx, nan, 3); break;
    case 2: afrt_attn_score_cols_(qr, kt, D, kbp, c, cols, vs, mr, s, mx, nan, 2); break;
    case 1: afrt_attn_score_cols_(qr, kt, D, kbp, c, cols, vs, mr, s, mx, nan, 1); break;
    default: break;
    }
    for (int r = 0; r < AFRT_ATTN_RB; ++r) rmax[r] = nan[r] ? NAN : _mm512_reduce_max_ps(mx[r]);
}

/* o[r * ldo + e] += sum_{c < cols} p[r * kbp + c] * v[c * ldv + e] for AFRT_ATTN_RB rows and
 * 64 columns e (24 accumulators in registers). */
static inline void afrt_attn_pv64_(const float *p, int64_t kbp, int64_t cols, const float *v,
                                   int64_t ldv, float *o, int64_t ldo) {
    __m512 acc[AFRT_ATTN_RB][4];
    for (int r = 0; r < AFRT_ATTN_RB; ++r)
        for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_loadu_ps(o + r * ldo + 16 * u);
    for (int64_t c = 0; c < cols; ++c) {
        const float *vr = v + c * ldv;
        const __m512 b0 = _mm512_loadu_ps(vr), b1 = _mm512_loadu_ps(vr + 16);
        const __m512 b2 = _mm512_loadu_ps(vr + 32), b3 = _mm512_loadu_ps(vr + 48);
        for (int r = 0; r < AFRT_ATTN_RB; ++r) {
            const __m512 a = _mm512_set1_ps(p[r * kbp + c]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
            acc[r][2] = _mm512_fmadd_ps(a, b2, acc[r][2]);
            acc[r][3] = _mm512_fmadd_ps(a, b3, acc[r][3]);
        }
    }
    for (int r = 0; r < AFRT_ATTN_RB; ++r)
        for (int u = 0; u < 4; ++u) _mm512_storeu_ps(o + r * ldo + 16 * u, acc[r][u]);
}

/* The same for the lanes `ok` of 16 columns e. */
static inline void afrt_attn_pv16_(const float *p, int64_t kbp, int64_t cols, const float *v,
                                   int64_t ldv, float *o, int64_t ldo, __mmask16 ok) {
    __m512 acc[AFRT_ATTN_RB];
    for (int r = 0; r < AFRT_ATTN_RB; ++r) acc[r] = _mm512_maskz_loadu_ps(ok, o + r * ldo);
    for (int64_t c = 0; c < cols; ++c) {
        const __m512 b = _mm512_maskz_loadu_ps(ok, v + c * ldv);
        for (int r = 0; r < AFRT_ATTN_RB; ++r)
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * kbp + c]), b, acc[r]);
    }
    for (int r = 0; r < AFRT_ATTN_RB; ++r) _mm512_mask_storeu_ps(o + r * ldo, ok, acc[r]);
}

/* o[r * ldo + e] += sum_{c < cols} p[r * kbp + c] * v[c * E + e] for AFRT_ATTN_RB rows, e < E. */
static inline void afrt_attn_pv_(const float *p, int64_t kbp, int64_t cols, const float *v,
                                 int64_t E, float *o, int64_t ldo) {
    int64_t e0 = 0;
    for (; e0 + 64 <= E; e0 += 64) afrt_attn_pv64_(p, kbp, cols, v + e0, E, o + e0, ldo);
    for (; e0 < E; e0 += 16)
        afrt_attn_pv16_(p, kbp, cols, v + e0, E, o + e0, ldo, afrt_lanes_(E - e0));
}

/* One task of afrt_attention_f32: batch index b, query rows [i0, i0 + rows). Scratch:
 * kt (D x kbp), sc (RB x kbp), ob (rows rounded up to RB, x E), m and l (as many). Returns 0 if
 * the scratch cannot be had. */
static inline int afrt_attention_task_avx512_(const float *q, const float *k, const float *v,
                                              const float *mask, float *out, float scale,
                                              const afrt_attn_params *p, int64_t b, int64_t i0,
                                              int64_t rows, int64_t kb) {
    const int64_t T = p->T, D = p->D, E = p->E, RB = AFRT_ATTN_RB;
    const int64_t kbp = afrt_round_up_(kb, 64), rp = afrt_round_up_(rows, RB);
    const size_t floats = (size_t)(D * kbp + RB * kbp + rp * E + 2 * rp + D);
    float *kt = (float *)afrt_thread_scratch(2, floats * sizeof(float));
    if (!kt) return 0;
    float *sc = kt + D * kbp, *ob = sc + RB * kbp, *m = ob + rp * E, *l = m + rp, *zq = l + rp;
    const float *qb = q + b * p->q_bstride + i0 * D;
    const float *kbase = k + b * p->k_bstride, *vbase = v + b * p->v_bstride;
    const float *mbase = mask ? mask + afrt_attn_mask_offset_(p, b) + i0 * p->mask_s : NULL;
    for (int64_t r = 0; r < rp; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    memset(ob, 0, (size_t)(rp * E) * sizeof(float));
    memset(zq, 0, (size_t)D * sizeof(float));
    for (int64_t j0 = 0; j0 < T; j0 += kb) {
        const int64_t cols = afrt_min_(kb, T - j0), cp = afrt_round_up_(cols, 64);
        afrt_attn_pack_kt_(kbase, D, j0, cols, cp, kt);
        for (int64_t g = 0; g < rows; g += RB) {
            const float *qr[AFRT_ATTN_RB], *mr[AFRT_ATTN_RB];
            float rmax[AFRT_ATTN_RB];
            for (int64_t r = 0; r < RB; ++r) {
                const int real = g + r < rows;
                qr[r] = real ? qb + (g + r) * D : zq;
                mr[r] = mbase && real && p->mask_t == 1 ? mbase + (g + r) * p->mask_s + j0 : NULL;
            }
            afrt_attn_scores_(qr, kt, D, cp, cols, scale, mr, sc, rmax);
            for (int64_t r = 0; r < RB; ++r) {
                float *s = sc + r * cp;
                const int64_t row = g + r;
                if (row >= rows) { /* padding row: p = 0 adds nothing to its (unused) output */
                    memset(s, 0, (size_t)cols * sizeof(float));
                    continue;
                }
                if (mbase && p->mask_t != 1) { /* a mask strided along t: added here */
                    const float *mrow = mbase + row * p->mask_s + j0 * p->mask_t;
                    for (int64_t c = 0; c < cols; ++c) s[c] += mrow[c * p->mask_t];
                    rmax[r] = afrt_row_nanmax_(s, cols);
                }
                const float mx = afrt_nanmax_(m[row], rmax[r]);
                if (mx == -INFINITY) { /* every score so far is -inf: nothing to add yet */
                    memset(s, 0, (size_t)cols * sizeof(float));
                    continue;
                }
                const float alpha = m[row] == -INFINITY ? 0.0f : af_expf(m[row] - mx);
                const __m512 vmx = _mm512_set1_ps(mx);
                __m512 sum = _mm512_setzero_ps();
                for (int64_t c = 0; c < cols; c += 16) {
                    const __mmask16 ok = afrt_lanes_(cols - c);
                    const __m512 e = afrt_exp512_(_mm512_sub_ps(_mm512_maskz_loadu_ps(ok, s + c), vmx));
                    _mm512_mask_storeu_ps(s + c, ok, e);
                    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(ok, e));
                }
                if (alpha != 1.0f && m[row] != -INFINITY) { /* else o is still 0 (or NaN) */
                    float *o = ob + row * E;
                    for (int64_t c = 0; c < E; ++c) o[c] *= alpha;
                }
                l[row] = l[row] * alpha + _mm512_reduce_add_ps(sum);
                m[row] = mx;
            }
            afrt_attn_pv_(sc, cp, cols, vbase + j0 * E, E, ob + g * E, E);
        }
    }
    float *dst = out + (b * p->S + i0) * E;
    for (int64_t r = 0; r < rows; ++r) {
        /* l == 0 (all -inf) or NaN: the row is NaN (0/0), or 0 with nan_to_zero */
        const int bad = !(l[r] > 0.0f) || (p->nan_to_zero && m[r] != m[r]);
        const __m512 inv = _mm512_set1_ps(bad ? (p->nan_to_zero ? 0.0f : NAN) : 1.0f / l[r]);
        for (int64_t c = 0; c < E; c += 16) {
            const __mmask16 ok = afrt_lanes_(E - c);
            const __m512 x = _mm512_maskz_loadu_ps(ok, ob + r * E + c);
            _mm512_mask_storeu_ps(dst + r * E + c, ok, bad ? inv : _mm512_mul_ps(x, inv));
        }
    }
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * Attention over short key sequences (AVX-512; afrt_attention_f32 takes it when
 * afrt_attn_small_applies_: T <= AFRT_ATTN_SMALL_T and the mask, if any, contiguous along t),
 * e.g. Swin's windows (S = T = 49, D = E = 32, windows x heads batch indices). The streaming
 * core's online softmax, per-row rescaling and [rows, E] accumulator buy nothing when a whole
 * score row fits in four vectors, so per batch index (one task; the batch split over the
 * threads) k is transposed once, 16 x 16 in registers, into kt[D][64] (zero past T); then per
 * tile of AFRT_ATTN_SRB (7) query rows: the scores from q's rows (broadcast) and kt in 7 x (up
 * to) 4 registers (a last single key, T % 16 == 1, as dot products along d instead of a
 * vector of padding); scale, mask, row max, exp and row sum in those registers, the exponentials
 * stored once to a 7 x 64 strip in L1; p @ v straight into out's rows, 7 rows x 32 columns in
 * registers, each row times 1 / its sum on the way out. Same semantics as the streaming core:
 * a NaN score gives a NaN row, a row whose every score is -inf gives NaN, or 0 with
 * nan_to_zero (those rows are written whole, as the streaming core does). No online rescaling
 * and the dot products sum in another order, so results can differ from the streaming core's
 * in the last bits.
 * ------------------------------------------------------------------------------------------- */
#ifndef AFRT_ATTN_SMALL_T
#define AFRT_ATTN_SMALL_T 64
#endif
#define AFRT_ATTN_SRB 7
/* T % 16 == 1 (Swin's T = 49): the last key's scores are dot products along d instead of one
 * more vector of FMAs that is almost all padding (3-7% faster than the padding; two or three
 * keys that way were no faster), and the 7 rows' scores of that key go through the exponential
 * together, lane r for row r: one exp512 a tile for them where a vector per row took 7 (each
 * exp512 ~15 operations; 4 of 28 exponentials a tile at T = 49, not 7). */
#define AFRT_ATTN_SLD 64 /* floats per row of kt and of the strip (AFRT_ATTN_SMALL_T <= 64) */

static inline int afrt_attn_small_applies_(const afrt_attn_params *p, const float *mask) {
    return p->T >= 1 && p->T <= AFRT_ATTN_SMALL_T && p->T <= AFRT_ATTN_SLD &&
           (!mask || p->mask_t == 1);
}

/* kt[d * AFRT_ATTN_SLD + c] = k[c * D + d] for c < T, 0 for T <= c < round_up(T, 16): per
 * block of 16 keys x 16 d, 16 loads, the 64-shuffle transpose, 16 stores. */
static inline void afrt_attn_small_pack_kt_(const float *k, int64_t D, int64_t T, float *kt) {
    for (int64_t c0 = 0; c0 < T; c0 += 16)
        for (int64_t d0 = 0; d0 < D; d0 += 16) {
            const int64_t nd = afrt_min_(16, D - d0);
            const __mmask16 ok = afrt_lanes_(nd);
            __m512 r[16], t[16];
            for (int i = 0; i < 16; ++i)
                r[i] = c0 + i < T ? _mm512_maskz_loadu_ps(ok, k + (c0 + i) * D + d0)
                                  : _mm512_setzero_ps();
            for (int i = 0; i < 8; ++i) {
                t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
            }
            for (int i = 0; i < 4; ++i) { /* r[4i + j], lane L: column 4L + j of rows 4i.. */
                r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
                r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
                r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
                r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
            }
            for (int j = 0; j < 4; ++j) { /* column 4L + j: lane L of r[j], r[4+j], ... */
                const __m512 x0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44);
                const __m512 x1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xEE);
                const __m512 y0 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
                const __m512 y1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xEE);
                t[j] = _mm512_shuffle_f32x4(x0, y0, 0x88);
                t[4 + j] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
                t[8 + j] = _mm512_shuffle_f32x4(x1, y1, 0x88);
                t[12 + j] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
            }
            for (int64_t j = 0; j < nd; ++j) _mm512_storeu_ps(kt + (d0 + j) * AFRT_ATTN_SLD + c0, t[j]);
        }
}

/* Exponentials of AFRT_ATTN_SRB query rows (q0 + r * D, D long) against kt's NV * 16
 * columns: x = scale * q_r . k_c + mask_r[c] (mr[r] NULL: none), -inf for c >= T;
 * s[r * AFRT_ATTN_SLD + c] = exp(x - max_c x) for c < T and linv[r] = 1 / sum_c of them; a row
 * with a NaN score, every score -inf or an infinite one gets s = 0 and linv NaN. NV (score
 * vectors) and NF (those by FMAs over kt) are constants at each call; NF = NV - 1 when
 * T % 16 == 1: that last key by dot products with k's row, its 7 scores one vector (lane r:
 * row r) through max, exp and sum with the rows'. */
static inline __attribute__((always_inline)) void afrt_attn_small_exps_(
    const float *q0, int64_t D, const float *kt, const float *k, int64_t T, const int NV,
    const int NF, float scale, const float *const *mr, float *s, float *linv) {
    enum { RB = AFRT_ATTN_SRB };
    __m512 acc[RB][4];
    for (int r = 0; r < RB; ++r)
        for (int u = 0; u < NF; ++u) acc[r][u] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; ++d) {
        __m512 b[4];
        for (int u = 0; u < NF; ++u) b[u] = _mm512_loadu_ps(kt + d * AFRT_ATTN_SLD + 16 * u);
        for (int r = 0; r < RB; ++r) {
            const __m512 a = _mm512_set1_ps(q0[r * D + d]);
            for (int u = 0; u < NF; ++u) acc[r][u] = _mm512_fmadd_ps(a, b[u], acc[r][u]);
        }
    }
    const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    const int64_t ct = 16 * NF; /* the dot-product key, when NF < NV */
    float xt[16] = {0}; /* its scores, lane r for row r (x as the vectors': scale, then the mask) */
    if (NF < NV) {
        float dots[16] = {0}, mt[16] = {0};
        for (int r = 0; r < RB; ++r) {
            __m512 sum = _mm512_setzero_ps();
            for (int64_t d = 0; d < D; d += 16) {
                const __mmask16 ok = afrt_lanes_(D - d);
                sum = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(ok, q0 + r * D + d),
                                      _mm512_maskz_loadu_ps(ok, k + ct * D + d), sum);
            }
            dots[r] = _mm512_reduce_add_ps(sum);
            if (mr[r]) mt[r] = mr[r][ct];
        }
        const __mmask16 rows = afrt_lanes_(RB);
        const __m512 x = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(dots), vs), _mm512_loadu_ps(mt));
        _mm512_storeu_ps(xt, _mm512_mask_blend_ps(rows, ninf, x));
    }
    float mxs[16] = {0}, part[RB];
    int bad[RB];
    for (int r = 0; r < RB; ++r) {
        __m512 mx = ninf;
        __mmask16 nan = 0;
        for (int u = 0; u < NF; ++u) {
            const __mmask16 ok = afrt_lanes_(T - 16 * u);
            __m512 x = _mm512_mul_ps(acc[r][u], vs);
            if (mr[r]) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(ok, mr[r] + 16 * u));
            x = _mm512_mask_blend_ps(ok, ninf, x);
            nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
            mx = _mm512_max_ps(mx, x);
            acc[r][u] = x;
        }
        float m = _mm512_reduce_max_ps(mx);
        if (NF < NV && xt[r] > m) m = xt[r]; /* a NaN there reaches total through et */
        float *sr = s + r * AFRT_ATTN_SLD;
        bad[r] = nan || m == -INFINITY;
        part[r] = 0.0f;
        if (!bad[r]) {
            const __m512 vm = _mm512_set1_ps(m);
            __m512 sum = _mm512_setzero_ps();
            for (int u = 0; u < NF; ++u) { /* lanes past T hold -inf: exp gives 0 */
                const __m512 e = afrt_exp512_(_mm512_sub_ps(acc[r][u], vm));
                _mm512_storeu_ps(sr + 16 * u, e);
                sum = _mm512_add_ps(sum, e);
            }
            part[r] = _mm512_reduce_add_ps(sum);
            mxs[r] = m;
        }
    }
    float et[16] = {0};
    if (NF < NV) /* lanes of bad rows and past RB: whatever, unused */
        _mm512_storeu_ps(et, afrt_exp512_(_mm512_sub_ps(_mm512_loadu_ps(xt), _mm512_loadu_ps(mxs))));
    for (int r = 0; r < RB; ++r) {
        float *sr = s + r * AFRT_ATTN_SLD;
        const float total = bad[r] ? NAN : part[r] + et[r];
        if (NF < NV) sr[ct] = et[r];
        if (!(total > 0.0f)) { /* NaN, all -inf, or an infinite score (inf - inf is NaN) */
            for (int u = 0; u < NV; ++u) _mm512_storeu_ps(sr + 16 * u, _mm512_setzero_ps());
            linv[r] = NAN;
        } else {
            linv[r] = 1.0f / total;
        }
    }
}

/* o[r * E + e] = linv[r] * sum_{t < T} s[r * AFRT_ATTN_SLD + t] * v[t * E + e] for the
 * AFRT_ATTN_SRB rows (rows >= `rows` not stored; a row with linv NaN: 0 with nan_to_zero,
 * else NaN) and the 32 columns e0.. (lanes past E masked). */
static inline void afrt_attn_small_pv32_(const float *s, const float *linv, int64_t T,
                                         const float *v, int64_t E, int64_t e0, float *o,
                                         int64_t rows, int64_t nan_to_zero) {
    const __mmask16 k0 = afrt_lanes_(E - e0), k1 = afrt_lanes_(E - e0 - 16);
    __m512 acc[AFRT_ATTN_SRB][2];
    for (int r = 0; r < AFRT_ATTN_SRB; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t t = 0; t < T; ++t) {
        const __m512 b0 = _mm512_maskz_loadu_ps(k0, v + t * E + e0);
        const __m512 b1 = _mm512_maskz_loadu_ps(k1, v + t * E + e0 + 16);
        for (int r = 0; r < AFRT_ATTN_SRB; ++r) {
            const __m512 a = _mm512_set1_ps(s[r * AFRT_ATTN_SLD + t]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    /* masked stores, no early exit: a loop that can leave early keeps acc in memory */
    const __m512 fill = _mm512_set1_ps(nan_to_zero ? 0.0f : NAN);
    for (int r = 0; r < AFRT_ATTN_SRB; ++r) {
        const __mmask16 live = r < rows ? 0xffffu : 0u;
        const __m512 f = _mm512_set1_ps(linv[r]);
        const __mmask16 bad = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
        float *orow = o + r * E + e0;
        _mm512_mask_storeu_ps(orow, k0 & live, _mm512_mask_blend_ps(bad, _mm512_mul_ps(acc[r][0], f), fill));
        _mm512_mask_storeu_ps(orow + 16, k1 & live, _mm512_mask_blend_ps(bad, _mm512_mul_ps(acc[r][1], f), fill));
    }
}

/* One batch index of the small path. Scratch: kt (D x 64), the strip (7 x 64), a zero-padded
 * copy of the last query rows (7 x D). Returns 0 if the scratch cannot be had. */
static inline int afrt_attention_small_task_(const float *q, const float *k, const float *v,
                                             const float *mask, float *out, float scale,
                                             const afrt_attn_params *p, int64_t b) {
    const int64_t S = p->S, T = p->T, D = p->D, E = p->E, RB = AFRT_ATTN_SRB;
    const int64_t ld = AFRT_ATTN_SLD;
    const size_t floats = (size_t)(D * ld + RB * ld + RB * D);
    float *kt = (float *)afrt_thread_scratch(2, floats * sizeof(float));
    if (!kt) return 0;
    float *sc = kt + D * ld, *qtail = sc + RB * ld;
    const float *qb = q + b * p->q_bstride, *vb = v + b * p->v_bstride;
    const float *mbase = mask ? mask + afrt_attn_mask_offset_(p, b) : NULL;
    float *ob = out + b * S * E;
    const float *kb = k + b * p->k_bstride;
    afrt_attn_small_pack_kt_(kb, D, T, kt);
    const int nv = (int)afrt_cdiv_(T, 16), dots = T > 16 && T % 16 == 1;
    /* the next batch index's mask, a tile's rows at a time, into L2: a constant mask (Swin's
     * position bias and window mask, [windows, heads, S, T]) comes from memory on every run,
     * and read as it is needed each of its lines was a wait (Swin-T's first shifted stage,
     * 1.8 MB: 118 us more than the same windows under the [1, heads, S, T] bias alone) */
    const float *mnext = mask && b + 1 < p->batch ? mask + afrt_attn_mask_offset_(p, b + 1) : NULL;
    for (int64_t g = 0; g < S; g += RB) {
        const int64_t rows = afrt_min_(RB, S - g);
        const float *q0 = qb + g * D, *mr[AFRT_ATTN_SRB];
        if (mnext)
            for (int64_t r = g; r < g + rows; ++r)
                for (int64_t c = 0; c < T; c += 16)
                    _mm_prefetch(AFRT_PF_ADDR(mnext, r * p->mask_s + c), _MM_HINT_T1);
        float linv[AFRT_ATTN_SRB];
        if (rows < RB) { /* the last rows, zero padded to a whole tile */
            memset(qtail, 0, (size_t)(RB * D) * sizeof(float));
            memcpy(qtail, q0, (size_t)(rows * D) * sizeof(float));
            q0 = qtail;
        }
        for (int64_t r = 0; r < RB; ++r) mr[r] = mbase && r < rows ? mbase + (g + r) * p->mask_s : NULL;
        switch (nv + 4 * dots) { /* each a copy with its vector counts constants */
        case 1: afrt_attn_small_exps_(q0, D, kt, kb, T, 1, 1, scale, mr, sc, linv); break;
        case 2: afrt_attn_small_exps_(q0, D, kt, kb, T, 2, 2, scale, mr, sc, linv); break;
        case 3: afrt_attn_small_exps_(q0, D, kt, kb, T, 3, 3, scale, mr, sc, linv); break;
        case 4: afrt_attn_small_exps_(q0, D, kt, kb, T, 4, 4, scale, mr, sc, linv); break;
        case 6: afrt_attn_small_exps_(q0, D, kt, kb, T, 2, 1, scale, mr, sc, linv); break;
        case 7: afrt_attn_small_exps_(q0, D, kt, kb, T, 3, 2, scale, mr, sc, linv); break;
        default: afrt_attn_small_exps_(q0, D, kt, kb, T, 4, 3, scale, mr, sc, linv); break;
        }
        for (int64_t e0 = 0; e0 < E; e0 += 32)
            afrt_attn_small_pv32_(sc, linv, T, vb, E, e0, ob + g * E, rows, p->nan_to_zero);
    }
    return 1;
}

/* The small path over every batch index; 1 when it ran (afrt_attn_small_applies_ true and an
 * AVX-512 build), else 0 and nothing written. */
static inline int afrt_attention_small_f32(const float *q, const float *k, const float *v,
                                           const float *mask, float *out, float scale,
                                           const afrt_attn_params *p) {
    if (!afrt_attn_small_applies_(p, mask) || p->batch <= 0 || p->S <= 0 || p->E <= 0) return 0;
    afrt_init_once_();
    const double work = (double)p->batch * p->S * p->T * (p->D + p->E);
    int failed = 0;
    (void)work; /* read only by the OpenMP clause */
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (p->batch > 1 && afrt_gemm_strategy_ != AFRT_GEMM_WHOLE && afrt_worth_threads_(work)))
    for (int64_t b = 0; b < p->batch; ++b) {
        afrt_arrive_();
        if (!afrt_attention_small_task_(q, k, v, mask, out, scale, p, b)) afrt_flag_set_(&failed);
    }
    if (failed) {
        for (int64_t i = 0; i < p->batch * p->S * p->E; ++i) out[i] = NAN;
        afrt_nomem_("afrt_attention_f32");
    }
    return 1;
}
#endif /* __AVX512F__ */

/* The streaming core alone (afrt_attention_f32 without the small path; benchmarks compare
 * the two). */
static inline void afrt_attention_streamed_f32(const float *q, const float *k, const float *v,
                                               const float *mask, float *out, float scale,
                                               const afrt_attn_params *p) {
    const int64_t S = p->S, T = p->T, D = p->D, E = p->E;
    if (p->batch <= 0 || S <= 0 || E <= 0) return;
    if (T <= 0) { /* no keys: p @ v sums nothing */
        memset(out, 0, (size_t)(p->batch * S * E) * sizeof(float));
        return;
    }
    afrt_init_once_();
    const int64_t kb = afrt_max_(1, afrt_min_(T, AFRT_ATTN_KB));
#if defined(__AVX512F__)
    { /* one task per batch index, query rows split only to give every thread work */
        const int64_t want = afrt_cdiv_(2 * afrt_num_threads_, p->batch);
        const int64_t bqv = afrt_round_up_(afrt_cdiv_(S, afrt_max_(1, want)), AFRT_ATTN_RB);
        const int64_t nqv = afrt_cdiv_(S, bqv), ntv = p->batch * nqv;
        const double work = (double)p->batch * S * T * (D + E);
        int failed = 0;
        (void)work; /* read only by the OpenMP clause */
        AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntv > 1 && afrt_gemm_strategy_ != AFRT_GEMM_WHOLE && afrt_worth_threads_(work)))
        for (int64_t task = 0; task < ntv; ++task) {
            afrt_arrive_();
            const int64_t b = task / nqv, i0 = (task % nqv) * bqv;
            if (!afrt_attention_task_avx512_(q, k, v, mask, out, scale, p, b, i0,
                                             afrt_min_(bqv, S - i0), kb))
                afrt_flag_set_(&failed);
        }
        if (failed) {
            for (int64_t i = 0; i < p->batch * S * E; ++i) out[i] = NAN;
            afrt_nomem_("afrt_attention_f32");
        }
        return;
    }
#endif
    const int64_t bq =
        afrt_min_(S, afrt_max_(8, afrt_min_(AFRT_ATTN_BQ_MAX, AFRT_ATTN_TILE_FLOATS / kb)));
    const int64_t nqb = afrt_cdiv_(S, bq), ntask = p->batch * nqb;
    const size_t bytes = (size_t)(bq * kb + 2 * bq) * sizeof(float);
    const double work = (double)p->batch * S * afrt_max_(T, 1) * (D + E);
    int failed = 0;
    (void)work; /* read only by the OpenMP clause */
    AFRT_OMP(parallel for schedule(static) num_threads(afrt_threads_now()) if (ntask > 1 && afrt_gemm_strategy_ != AFRT_GEMM_WHOLE && afrt_worth_threads_(work)))
    for (int64_t task = 0; task < ntask; ++task) {
        afrt_arrive_();
        const int64_t b = task / nqb, i0 = (task % nqb) * bq, rows = afrt_min_(bq, S - i0);
        float *sc = (float *)afrt_thread_scratch(2, bytes);
        if (!sc) {
            afrt_flag_set_(&failed);
            continue;
        }
        float *m = sc + bq * kb, *l = m + bq;
        const float *qb = q + b * p->q_bstride + i0 * D;
        const float *kbase = k + b * p->k_bstride, *vbase = v + b * p->v_bstride;
        float *ob = out + (b * S + i0) * E;
        const float *mrow = mask ? mask + afrt_attn_mask_offset_(p, b) + i0 * p->mask_s : NULL;
        for (int64_t r = 0; r < rows; ++r) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        memset(ob, 0, (size_t)(rows * E) * sizeof(float));
        for (int64_t j0 = 0; j0 < T; j0 += kb) {
            const int64_t cols = afrt_min_(kb, T - j0);
            afrt_sgemm_(0, 1, rows, cols, D, scale, qb, D, kbase + j0 * D, D, 0.0f, sc, kb);
            for (int64_t r = 0; r < rows; ++r) {
                float *s = sc + r * kb;
                if (mrow) {
                    const float *mr = mrow + r * p->mask_s + j0 * p->mask_t;
                    for (int64_t c = 0; c < cols; ++c) s[c] += mr[c * p->mask_t];
                }
                const float mx = afrt_nanmax_(m[r], afrt_row_nanmax_(s, cols));
                if (mx == -INFINITY) { /* every score so far is -inf: nothing to add yet */
                    for (int64_t c = 0; c < cols; ++c) s[c] = 0.0f;
                    continue;
                }
                const float alpha = m[r] == -INFINITY ? 0.0f : af_expf(m[r] - mx);
                for (int64_t c = 0; c < cols; ++c) s[c] = af_expf(s[c] - mx);
                const float sum = afrt_row_sum_(s, cols);
                if (alpha != 1.0f) {
                    float *o = ob + r * E;
                    for (int64_t c = 0; c < E; ++c) o[c] *= alpha;
                }
                l[r] = l[r] * alpha + sum;
                m[r] = mx;
            }
            afrt_sgemm_(0, 0, rows, E, cols, 1.0f, sc, kb, vbase + j0 * E, E, 1.0f, ob, E);
        }
        for (int64_t r = 0; r < rows; ++r) {
            const float inv = 1.0f / l[r]; /* l == 0 (all -inf): 0 * inf = NaN, as 0/0 */
            float *o = ob + r * E;
            if (p->nan_to_zero) {
                if (!(l[r] > 0.0f) || m[r] != m[r]) /* NaN probabilities -> 0 */
                    for (int64_t c = 0; c < E; ++c) o[c] = 0.0f;
                else
                    for (int64_t c = 0; c < E; ++c) o[c] *= inv;
            } else {
                for (int64_t c = 0; c < E; ++c) o[c] = l[r] > 0.0f ? o[c] * inv : NAN;
            }
        }
    }
    if (failed) {
        for (int64_t i = 0; i < p->batch * S * E; ++i) out[i] = NAN;
        afrt_nomem_("afrt_attention_f32");
    }
}

static inline void afrt_attention_f32(const float *q, const float *k, const float *v,
                                     const float *mask, float *out, float scale,
                                     const afrt_attn_params *p) {
#if defined(__AVX512F__)
    if (afrt_attention_small_f32(q, k, v, mask, out, scale, p)) return;
#endif
    afrt_attention_streamed_f32(q, k, v, mask, out, scale, p);
}


/* Depthwise -> pointwise conv chains in row bands (afrt_dwpw_f32): its own header, copied
 * beside this one (it uses the depthwise helpers, the GEMM core and afrt_conv2d_f32). */
#include "afrt_convchain.h"

#endif /* AFRT_H */
