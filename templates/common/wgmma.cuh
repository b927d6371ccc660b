// Hopper warpgroup matrix multiply-accumulate (wgmma.mma_async, sm_90a only): shared-memory matrix descriptors, the
// fence / commit / wait protocol, and one m64nNk instruction per width N = 64, 128, 256 with fp32 accumulators.
//
// The includer defines WGMMA_INPUT_TYPES, the operand types as the instruction spells them (".f16.f16",
// ".bf16.bf16"; tf32 inputs use the register-A form below, which names its types itself).
#pragma once

#ifndef WGMMA_INPUT_TYPES
#error "define WGMMA_INPUT_TYPES (e.g. \".bf16.bf16\") before including common/wgmma.cuh"
#endif

// Shared-memory matrix descriptor with 128-byte swizzle. K-major operands (A) use only the stride between 8-row
// groups; MN-major operands (B) also use the leading offset, the distance between 64-column chunks.
__device__ __forceinline__ unsigned long long matrix_descriptor(unsigned address, unsigned leading_bytes,
                                                                unsigned stride_bytes) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         static_cast<unsigned long long>(leading_bytes >> 4) << 16 |
         static_cast<unsigned long long>(stride_bytes >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int pending> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(pending) : "memory");
}

// Keeps the compiler from moving reads of the accumulators above the wait that makes them valid.
template <int count> __device__ __forceinline__ void accumulators_ready(float (&accumulators)[count]) {
#pragma unroll
  for (int index = 0; index < count; ++index) asm volatile("" : "+f"(accumulators[index])::"memory");
}

// The accumulator operands of one wgmma: "%0, %1, ..." for the instruction text, and the matching "+f" constraints.
// n / 2 accumulators per thread for an m64nN instruction.
#define WGMMA_D32_TEXT \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, " \
    "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_D64_TEXT WGMMA_D32_TEXT ", " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
    "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
    "%56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_D128_TEXT WGMMA_D64_TEXT ", " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, " \
    "%76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, " \
    "%88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, " \
    "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, " \
    "%124, %125, %126, %127"
#define WGMMA_D8(b) "+f"(d[b]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), "+f"(d[b + 4]), "+f"(d[b + 5]), \
    "+f"(d[b + 6]), "+f"(d[b + 7])
#define WGMMA_D32(b) WGMMA_D8(b), WGMMA_D8(b + 8), WGMMA_D8(b + 16), WGMMA_D8(b + 24)
#define WGMMA_D64(b) WGMMA_D32(b), WGMMA_D32(b + 32)
#define WGMMA_D128 WGMMA_D64(0), WGMMA_D64(64)

// 16-bit inputs with B's layout chosen by the caller (kTransposeB = 1: B is N-major, as a row-major K x N matrix;
// 0: K-major, as the rows of a row-major N x K matrix, e.g. attention's K in Q K^T), A either from shared memory
// (K-major descriptor) or from registers: four 32-bit registers of two elements each, holding rows lane / 4 and
// lane / 4 + 8 of the warp's 16 rows, columns 2 (lane % 4) + {0, 1} and + 8 (the layout of a 16-bit m64nN
// accumulator pair, which is how attention feeds its softmax output back in).
template <int n> struct Wgmma16;

template <> struct Wgmma16<64> {
  template <int kTransposeB>
  static __device__ __forceinline__ void shared_a(float (&d)[32], unsigned long long a_descriptor,
                                                  unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D32_TEXT
        "}, %32, %33, accumulate, 1, 1, 0, %35;\n}\n"
        : WGMMA_D32(0)
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d), "n"(kTransposeB));
  }
  template <int kTransposeB>
  static __device__ __forceinline__ void register_a(float (&d)[32], const unsigned (&a)[4],
                                                    unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D32_TEXT
        "}, {%32, %33, %34, %35}, %36, accumulate, 1, 1, %38;\n}\n"
        : WGMMA_D32(0)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d), "n"(kTransposeB));
  }
};

template <> struct Wgmma16<128> {
  template <int kTransposeB>
  static __device__ __forceinline__ void shared_a(float (&d)[64], unsigned long long a_descriptor,
                                                  unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D64_TEXT
        "}, %64, %65, accumulate, 1, 1, 0, %67;\n}\n"
        : WGMMA_D64(0)
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d), "n"(kTransposeB));
  }
  template <int kTransposeB>
  static __device__ __forceinline__ void register_a(float (&d)[64], const unsigned (&a)[4],
                                                    unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D64_TEXT
        "}, {%64, %65, %66, %67}, %68, accumulate, 1, 1, %70;\n}\n"
        : WGMMA_D64(0)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d), "n"(kTransposeB));
  }
};

template <> struct Wgmma16<256> {
  template <int kTransposeB>
  static __device__ __forceinline__ void shared_a(float (&d)[128], unsigned long long a_descriptor,
                                                  unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D128_TEXT
        "}, %128, %129, accumulate, 1, 1, 0, %131;\n}\n"
        : WGMMA_D128
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d), "n"(kTransposeB));
  }
  template <int kTransposeB>
  static __device__ __forceinline__ void register_a(float (&d)[128], const unsigned (&a)[4],
                                                    unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D128_TEXT
        "}, {%128, %129, %130, %131}, %132, accumulate, 1, 1, %134;\n}\n"
        : WGMMA_D128
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d), "n"(kTransposeB));
  }
};

// One m64nNk{16, 8} instruction, N = 64, 128 or 256, in the form each input type uses (both forms must compile, as
// `if constexpr` inside a generic lambda still checks the branch it drops). scale_d == 0 starts D from zero instead
// of accumulating.
template <int n> struct Wgmma;

template <> struct Wgmma<64> {
  // 16-bit inputs: D (64 x 64 fp32) += A (64 x 16, shared, K-major) * B (16 x 64, shared, N-major: transpose bit set).
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[32], unsigned long long a_descriptor,
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D32_TEXT
        "}, %32, %33, accumulate, 1, 1, 0, 1;\n}\n"
        : WGMMA_D32(0)
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d));
  }
  // tf32 inputs: D (64 x 64 fp32) += A (64 x 8 tf32, registers) * B (8 x 64 tf32, shared, K-major).
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[32], const unsigned (&a)[4],
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" WGMMA_D32_TEXT
        "}, {%32, %33, %34, %35}, %36, accumulate, 1, 1;\n}\n"
        : WGMMA_D32(0)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d));
  }
};

template <> struct Wgmma<128> {
  // 16-bit inputs: D (64 x 128 fp32) += A (64 x 16, shared, K-major) * B (16 x 128, shared, N-major: transpose bit set).
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[64], unsigned long long a_descriptor,
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D64_TEXT
        "}, %64, %65, accumulate, 1, 1, 0, 1;\n}\n"
        : WGMMA_D64(0)
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d));
  }
  // tf32 inputs: D (64 x 128 fp32) += A (64 x 8 tf32, registers) * B (8 x 128 tf32, shared, K-major).
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[64], const unsigned (&a)[4],
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" WGMMA_D64_TEXT
        "}, {%64, %65, %66, %67}, %68, accumulate, 1, 1;\n}\n"
        : WGMMA_D64(0)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d));
  }
};

template <> struct Wgmma<256> {
  // 16-bit inputs: D (64 x 256 fp32) += A (64 x 16, shared, K-major) * B (16 x 256, shared, N-major: transpose bit set).
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[128], unsigned long long a_descriptor,
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32" WGMMA_INPUT_TYPES " {" WGMMA_D128_TEXT
        "}, %128, %129, accumulate, 1, 1, 0, 1;\n}\n"
        : WGMMA_D128
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d));
  }
  // tf32 inputs: D (64 x 256 fp32) += A (64 x 8 tf32, registers) * B (8 x 256 tf32, shared, K-major).
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[128], const unsigned (&a)[4],
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" WGMMA_D128_TEXT
        "}, {%128, %129, %130, %131}, %132, accumulate, 1, 1;\n}\n"
        : WGMMA_D128
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d));
  }
};
