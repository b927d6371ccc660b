// The verification reference of attention: plain fp32 arithmetic on CUDA cores, written to be obviously right
// rather than fast (about 50 ms for 32k tokens, 16 heads, head dimension 128 on the H200).
//
// A block of REF_WARPS warps takes REF_ROWS consecutive query rows of one (batch, head) pair (the last block of a
// pair may reach past the sequence: those rows are neither read nor written); keys and values of the pair's
// key/value head come through shared memory in tiles of 32 rows (16 past head dimension 128), converted to fp32
// (zeros past the last key). Each warp owns REF_ROWS / REF_WARPS query rows and
// walks the keys one by one: lane l holds elements l, l + 32, ... of the query row and of its output row, the score
// is a warp-wide sum, and the softmax is the online one (running maximum, rescaled sum and output) with expf and a
// final division. Causal masking skips keys after the query's position, aligned at the end (query i sees keys up to
// i + keys - sequence).
#pragma once

namespace reference_path {

constexpr int warps = REF_WARPS;
constexpr int rows = REF_ROWS;
constexpr int rows_per_warp = rows / warps;
constexpr int key_tile = head_dim > 128 ? 16 : 32;  // K and V tiles in 32 KiB of static shared memory
constexpr int kv_heads = heads / kv_group;
constexpr int per_lane = head_dim / 32;

static_assert(THREADS == warps * 32, "REF_WARPS warps per block");
static_assert(rows % warps == 0, "each warp owns the same number of query rows");
static_assert(head_dim % 32 == 0, "a query row is spread over the 32 lanes of a warp");

}  // namespace reference_path

__device__ __forceinline__ void attention_path(int sequence, int key_count, float scale, const Element* q,
                                               const Element* k, const Element* v, Element* o, float* lse,
                                               const TensorMap&, const TensorMap&, const TensorMap&) {
  using namespace reference_path;
  __shared__ float keys[key_tile][head_dim];
  __shared__ float values[key_tile][head_dim];
  const int batch = blockIdx.x / heads;
  const int head = blockIdx.x % heads;
  const int kv_head = head / kv_group;
  const int cached = key_count - sequence;  // keys before the first query's own
  const int first_row = blockIdx.y * rows;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  float query[rows_per_warp][per_lane];
  float output[rows_per_warp][per_lane];
  float running_max[rows_per_warp];
  float running_sum[rows_per_warp];
  for (int row = 0; row < rows_per_warp; ++row) {
    const int position = first_row + warp * rows_per_warp + row;
    for (int index = 0; index < per_lane; ++index) {
      query[row][index] = position < sequence
                              ? to_float(q[row_offset(batch, head, position, heads, sequence, q_row_stride) + lane + 32 * index])
                              : 0.0f;
      output[row][index] = 0.0f;
    }
    running_max[row] = NEGATIVE_INFINITY;
    running_sum[row] = 0.0f;
  }

  // Causal: no row of the block looks past its last row's last key.
  const int key_end = causal ? min(key_count, first_row + rows + cached) : key_count;
  for (int tile = 0; tile < key_end; tile += key_tile) {
    __syncthreads();  // the previous tile is no longer read
    for (int index = threadIdx.x; index < key_tile * head_dim; index += THREADS) {
      const int key = tile + index / head_dim;
      const bool inside = key < key_count;
      const long long at = inside ? row_offset(batch, kv_head, key, kv_heads, key_count, kv_row_stride) + index % head_dim : 0;
      keys[index / head_dim][index % head_dim] = inside ? to_float(k[at]) : 0.0f;
      values[index / head_dim][index % head_dim] = inside ? to_float(v[at]) : 0.0f;
    }
    __syncthreads();
    for (int row = 0; row < rows_per_warp; ++row) {
      const int position = first_row + warp * rows_per_warp + row;
      if (position >= sequence) continue;  // the same for the whole warp
      const int last_key = min(key_end, causal ? position + cached + 1 : key_count);
      for (int key = tile; key < min(tile + key_tile, last_key); ++key) {
        float partial = 0.0f;
        for (int index = 0; index < per_lane; ++index) partial += query[row][index] * keys[key - tile][lane + 32 * index];
        for (int offset = 16; offset > 0; offset /= 2) partial += __shfl_xor_sync(0xffffffffu, partial, offset);
        const float score = partial * scale;
        const float new_max = fmaxf(running_max[row], score);
        const float correction = expf(running_max[row] - new_max);  // 0 for the first key (max was -inf)
        const float weight = expf(score - new_max);
        running_sum[row] = running_sum[row] * correction + weight;
        for (int index = 0; index < per_lane; ++index) {
          output[row][index] = output[row][index] * correction + weight * values[key - tile][lane + 32 * index];
        }
        running_max[row] = new_max;
      }
    }
  }
  for (int row = 0; row < rows_per_warp; ++row) {
    const int position = first_row + warp * rows_per_warp + row;
    if (position >= sequence) continue;
    if (lse != nullptr && lane == 0) {
      lse[(static_cast<long long>(blockIdx.x)) * sequence + position] = running_max[row] + logf(running_sum[row]);
    }
    for (int index = 0; index < per_lane; ++index) {
      o[row_offset(batch, head, position, heads, sequence, o_row_stride) + lane + 32 * index] =
          from_float<Element>(output[row][index] / running_sum[row]);
    }
  }
}
