// Planted faults for the streamed pipeline's GPU test (tests/gpu/loader_device_test.cpp). blockIdx.y selects the
// item of the batch; each item of N floats becomes 2 * x + 1.
//   FAULT 0  correct
//   FAULT 1  item 5 comes back with one wrong element   -> wrong_result naming batch and item
//   FAULT 2  item 9 is never written                    -> wrong_result (poison left in the output)
template <int kFault>
__global__ void scale(int n, const float* __restrict__ input, float* __restrict__ output, int batch_first_item_unused) {
  const int item_in_batch = blockIdx.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // The kernel does not know which items the batch holds: it recognises items by their first value, which the
  // generator's sequence makes equal to item * n.
  const float first = input[(long long)item_in_batch * n];
  const int item = (int)(first / n + 0.5f);
  if (kFault == 2 && item == 9) return;
  float value = 2.0f * input[(long long)item_in_batch * n + i] + 1.0f;
  if (kFault == 1 && item == 5 && i == 3) value += 1.0f;
  output[(long long)item_in_batch * n + i] = value;
}
