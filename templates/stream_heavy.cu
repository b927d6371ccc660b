// A compute-heavy element-wise kernel for the streamed-workload example (kernels/stream_heavy.yaml, issue 7):
// each element goes through `iterations` dependent fused multiply-adds, so the kernel takes longer than copying
// its data, and the loader wins by overlapping copies with computation (streams, prefetch), not by bandwidth.
// Every configuration does the same operations on each element in the same order: results match bit for bit.
//   BLOCK            threads per block
//   ITEMS            elements per thread, BLOCK apart (independent chains for instruction-level parallelism)
// blockIdx.y selects the item (image) of the batch.
template <int kBlock, int kItems>
__global__ void __launch_bounds__(kBlock)
    iterate(int elements, int iterations, const float* __restrict__ input, float* __restrict__ output) {
  const long long item_offset = (long long)blockIdx.y * elements;
  input += item_offset;
  output += item_offset;
  const int first = blockIdx.x * kBlock * kItems + threadIdx.x;
  float value[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int element = first + k * kBlock;
    value[k] = element < elements ? input[element] : 0.0f;
  }
  for (int iteration = 0; iteration < iterations; ++iteration) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) value[k] = fmaf(value[k], 0.9999f, 0.0001f);
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int element = first + k * kBlock;
    if (element < elements) output[element] = value[k];
  }
}
