// What both layernorm paths share: vectors of the element type, the passes over a thread's vectors of a row slice,
// and the residual add.
#pragma once

#include "common/async_copy.cuh"
#include "common/row_reduce.cuh"
#include "common/streaming_access.cuh"

template <int kWidth> using Pack = VectorOf<Element, kWidth>;

__device__ __forceinline__ float add(float a, float b) { return a + b; }

// Whether item `item` of a thread's cached slice (vector `index` of the slice) lies inside the slice. ROW_ITEMS is
// rounded up when the slice is not a multiple of ROW_THREADS * VEC, so only the last item can lie past it: the
// earlier items need no comparison, and when the slice is a multiple the one comparison is always true.
template <int kRowItems>
__device__ __forceinline__ bool in_slice(int item, int index, int slice_vectors) {
  return item + 1 < kRowItems || index < slice_vectors;
}

// The residual add of one vector: the sum rounded to the element type, so the output normalises exactly what is
// stored as the sum (PyTorch's x + r, then layer_norm, does the same).
template <int kWidth>
__device__ __forceinline__ Pack<kWidth> add_vectors(const Pack<kWidth>& x, const Pack<kWidth>& residual) {
  Pack<kWidth> total;
#pragma unroll
  for (int lane = 0; lane < kWidth; ++lane)
    total.lane[lane] = from_float<Element>(to_float(x.lane[lane]) + to_float(residual.lane[lane]));
  return total;
}

// Calls visit(index, vector) for every vector of the slice that this thread owns, loading kUnroll vectors before
// visiting any of them. kAddResidual: each vector visited is source + residual (both loaded kUnroll ahead).
template <int kRowThreads, int kUnroll, bool kAddResidual, typename Vector, typename Visit>
__device__ __forceinline__ void for_each_vector(const Vector* __restrict__ source, const Vector* __restrict__ residual,
                                                int thread_in_row, int slice_vectors, Visit visit) {
  int index = thread_in_row;
  for (; index + (kUnroll - 1) * kRowThreads < slice_vectors; index += kUnroll * kRowThreads) {
    Vector loaded[kUnroll];
    Vector added[kAddResidual ? kUnroll : 1];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      loaded[u] = source[index + u * kRowThreads];
      if constexpr (kAddResidual) added[u] = residual[index + u * kRowThreads];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if constexpr (kAddResidual) visit(index + u * kRowThreads, add_vectors(loaded[u], added[u]));
      else visit(index + u * kRowThreads, loaded[u]);
    }
  }
  for (; index < slice_vectors; index += kRowThreads) {
    if constexpr (kAddResidual) visit(index, add_vectors(source[index], residual[index]));
    else visit(index, source[index]);
  }
}

// Calls visit(index, lanes as floats) for every vector of the slice that this thread owns, from wherever the
// slice is kept: registers (CACHE_ROW), or source (the shared copy, or memory again).
template <int kRowThreads, int kUnroll, bool kCacheRow, int kRowItems, int kVec, typename Vector, typename Visit>
__device__ __forceinline__ void for_each_owned(const float (&cached)[kRowItems][kVec], const Vector* source,
                                               int thread_in_row, int slice_vectors, Visit visit) {
  if constexpr (kCacheRow) {
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      const int index = thread_in_row + item * kRowThreads;
      if (in_slice<kRowItems>(item, index, slice_vectors)) visit(index, cached[item]);
    }
  } else {
    for_each_vector<kRowThreads, kUnroll, false>(source, static_cast<const Vector*>(nullptr), thread_in_row,
                                                 slice_vectors, [&](int index, const Vector& loaded) {
      float lanes[kVec];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) lanes[lane] = to_float(loaded.lane[lane]);
      visit(index, lanes);
    });
  }
}
