/*
 * afrt_kernels.h -- which kernel set afrt.h uses, from the compiler's predefined macros
 * alone: AFRT_KERNELS ("avx512", "avx2", "neon" or "portable") and AFRT_NEON_ on
 * little-endian AArch64 with Advanced SIMD unless -DAFRT_PORTABLE. afrt.h includes it, and
 * so does the generated af_build.c, which records AFRT_KERNELS in the binary without parsing
 * the whole runtime (a second full afrt.h per build cost about 0.3 s of compile time).
 * Copied beside afrt.h into every build and package folder.
 */
#ifndef AFRT_KERNELS_H
#define AFRT_KERNELS_H

/* AArch64 Advanced SIMD (NEON; every AArch64 CPU has it): the NEON kernels of afrt.h, in
 * blocks of their own; little-endian only (the packing transposes reinterpret lanes as f64
 * pairs). -DAFRT_PORTABLE keeps the portable C instead (the comparison build). */
#if defined(__aarch64__) && defined(__ARM_NEON) && !defined(__AARCH64EB__) && \
    !defined(AFRT_PORTABLE)
#define AFRT_NEON_ 1
#endif
/* The kernel set this build uses, from the same macros that select it (af_build.c records it). */
#if defined(__AVX512F__)
#define AFRT_KERNELS "avx512"
#elif defined(__AVX2__) && defined(__FMA__)
#define AFRT_KERNELS "avx2"
#elif defined(AFRT_NEON_)
#define AFRT_KERNELS "neon"
#else
#define AFRT_KERNELS "portable"
#endif

#endif /* AFRT_KERNELS_H */
