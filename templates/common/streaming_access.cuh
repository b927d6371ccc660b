// Global loads and stores with the evict-first (streaming, .cs) cache hint, for data touched exactly once, so that it
// does not push data that is reused (a row's scale and shift, say) out of L1 and L2. Vectors of 2, 4, 8 or 16 bytes.
#pragma once

template <typename Vector> __device__ __forceinline__ Vector load_streaming(const Vector* address) {
  Vector value;
  if constexpr (sizeof(Vector) == 16) {
    uint4 bits;
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  } else if constexpr (sizeof(Vector) == 8) {
    uint2 bits;
    asm volatile("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(bits.x), "=r"(bits.y) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  } else if constexpr (sizeof(Vector) == 4) {
    unsigned bits;
    asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(bits) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  } else {
    unsigned short bits;
    asm volatile("ld.global.cs.u16 %0, [%1];" : "=h"(bits) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  }
  return value;
}

template <typename Vector> __device__ __forceinline__ void store_streaming(Vector* address, const Vector& value) {
  if constexpr (sizeof(Vector) == 16) {
    const uint4 bits = reinterpret_cast<const uint4&>(value);
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(address), "r"(bits.x), "r"(bits.y), "r"(bits.z),
                 "r"(bits.w) : "memory");
  } else if constexpr (sizeof(Vector) == 8) {
    const uint2 bits = reinterpret_cast<const uint2&>(value);
    asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(address), "r"(bits.x), "r"(bits.y) : "memory");
  } else if constexpr (sizeof(Vector) == 4) {
    asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(address), "r"(reinterpret_cast<const unsigned&>(value)) : "memory");
  } else {
    asm volatile("st.global.cs.u16 [%0], %1;" ::"l"(address), "h"(reinterpret_cast<const unsigned short&>(value))
                 : "memory");
  }
}
