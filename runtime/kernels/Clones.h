//===- Clones.h - Loops compiled for each x86-64 level --------------------===//
//
// pc's own kernel loops (the ones no library has in their form) are built
// for AVX-512, AVX2 and baseline x86-64, and the loader picks the widest the
// machine has (GCC's function multi-versioning: one binary runs anywhere,
// and the loops still use 16-lane vectors where they exist). The kernels
// are compiled with -ffp-contract=off, so no clone fuses a multiply-add
// that another does not: every clone, and the unfused elementwise form of
// a fused op, give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_CLONES_H
#define PC_RUNTIME_KERNELS_CLONES_H

// Clang's sanitizer builds and other targets keep one baseline version.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PC_CLONES                                                              \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PC_CLONES
#endif

/// For helpers of those loops: inlined into each clone, so that they are
/// compiled for its level too (an outlined helper has the baseline's).
#define PC_INLINE inline __attribute__((always_inline))

#endif // PC_RUNTIME_KERNELS_CLONES_H
