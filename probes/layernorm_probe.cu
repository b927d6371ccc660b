// Layer normalisation designs for long rows, timed in one process against the device-to-device copy ceiling.
// A diagnostic for issue 4 (layernorm fp32 4096 x 32768): the shipped template's persistent CLUSTER=2
// configurations, and persistent cluster kernels written here that differ in one step each: how a row's statistics
// meet (two barriers, or one), when a stage is refilled, whether rows are fixed per cluster or drawn from a
// counter, and two diagnostics that skip work on purpose (no cluster barrier; no statistics at all). The figures
// and what they showed are in results/memory_bound.md.
//
// Build with CMake (-DKERNLATHE_BUILD_PROBES=ON; build/probes/layernorm_probe), or by hand from the repository root,
// as one command:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Itemplates -o /tmp/layernorm_probe
//        probes/layernorm_probe.cu
// Run on a Hopper GPU: layernorm_probe [rows cols]      (default 4096 32768)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

// The shipped template. Without CLUSTER defined it carries no __cluster_dims__ (whose guard in layernorm.cu
// rejects nvcc's host pass); its CLUSTER=2 configuration is launched with a cluster attribute instead.
#include "layernorm.cu"

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    cudaError_t status_ = (call);                                                                     \
    if (status_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

namespace probe {

__device__ __forceinline__ void copy16(void* shared_destination, const void* source) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(shared_destination)),
               "l"(source) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending> __device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
__device__ __forceinline__ unsigned rank_in_cluster() {
  unsigned rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ float2 load_from_block(const float2* local, unsigned rank) {
  unsigned long long remote;
  asm("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(local), "r"(rank));
  return *reinterpret_cast<const float2*>(remote);
}

// Persistent clusters of kCluster blocks; each block keeps one column slice (kThreads * kItems float4) of every
// row its cluster handles, with gamma and beta of the slice in registers, and stages slices through kStages
// shared-memory buffers filled by cp.async. Statistics: sum and sum of squares.
// kPipelined: the cluster barrier of row k is waited on only after row k+1's partial sums (split arrive and
// wait), and row k is normalised then; otherwise row k is reduced, waited on and normalised in one iteration.
// kMode (diagnostic, sequential only): 0 the real kernel; 1 without the cluster barrier (statistics read from the
// slots unsynchronised: wrong output, the time without the barrier); 2 no statistics at all (out = in * gamma +
// beta: the time of the staged copy alone).
// kEarlyRefill (sequential only): each thread copies its vectors of row k out of the stage into registers and
// refills the stage with row k + kStages right away, so kStages rows are in flight while row k is reduced and
// stored (otherwise the refill waits until row k is stored, and kStages - 1 are).
template <int kThreads, int kCluster, int kItems, int kStages, bool kPipelined, int kMode = 0, bool kEarlyRefill = false>
__global__ void __launch_bounds__(kThreads, 1)
    persistent_layernorm(int rows, int cols, float epsilon, const float4* __restrict__ input,
                         const float4* __restrict__ gamma, const float4* __restrict__ beta, float4* __restrict__ output,
                         int* __restrict__ counters) {
  static_assert(kStages >= 2, "a stage to reduce from and one in flight");
  constexpr int kWarps = kThreads / 32;
  constexpr int kSliceVectors = kThreads * kItems;
  extern __shared__ float4 stages[];
  __shared__ float2 warp_slots[2][kWarps];
  __shared__ float2 cluster_slots[2];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long row_vectors = cols / 4;
  const long long slice_begin = (long long)rank_in_cluster() * kSliceVectors;
  const int clusters = gridDim.x / kCluster;
  const int cluster = blockIdx.x / kCluster;
  const int my_rows = cluster < rows ? (rows - 1 - cluster) / clusters + 1 : 0;
  const float inverse_cols = 1.0f / cols;

  float4 scale[kItems], shift[kItems];
#pragma unroll
  for (int item = 0; item < kItems; ++item) {
    scale[item] = gamma[slice_begin + threadIdx.x + item * kThreads];
    shift[item] = beta[slice_begin + threadIdx.x + item * kThreads];
  }
  auto stage_of = [&](int k) { return stages + (k % kStages) * kSliceVectors; };
  auto copy_to = [&](int k, long long row) {  // this block's slice of `row` into local row k's stage; closes a group
    if (row < rows) {
      const float4* source = input + row * row_vectors + slice_begin;
      float4* destination = stage_of(k);
#pragma unroll
      for (int item = 0; item < kItems; ++item)
        copy16(destination + threadIdx.x + item * kThreads, source + threadIdx.x + item * kThreads);
    }
    commit_copies();
  };
  // Rows fixed per cluster: local row k is row cluster + k * clusters.
  auto row_of = [&](int k) { return k < my_rows ? cluster + (long long)k * clusters : (long long)rows; };
  auto copy_row = [&](int k) { copy_to(k, row_of(k)); };
  auto thread_sums = [&](const float4 (&values)[kItems], float& sum, float& squares) {
    sum = 0.0f, squares = 0.0f;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const float4 v = values[item];
      sum += (v.x + v.y) + (v.z + v.w);
      squares = fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, squares))));
    }
  };
  auto load_stage = [&](int k, float4 (&values)[kItems]) {
#pragma unroll
    for (int item = 0; item < kItems; ++item) values[item] = stage_of(k)[threadIdx.x + item * kThreads];
  };
  auto warp_sums = [&](int k, float sum, float squares) {  // into warp_slots[k & 1]
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      squares += __shfl_xor_sync(0xffffffffu, squares, offset);
    }
    if (lane == 0) warp_slots[k & 1][warp] = make_float2(sum, squares);
  };
  auto partial_sums = [&](int k) {  // row k's (sum, sum of squares) over this block, into warp_slots[k & 1]
    float4 values[kItems];
    load_stage(k, values);
    float sum, squares;
    thread_sums(values, sum, squares);
    warp_sums(k, sum, squares);
  };
  auto publish_block_total = [&](int k) {  // after the block barrier: this block's total into its cluster slot
    if (threadIdx.x == 0) {
      float2 total = warp_slots[k & 1][0];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) total.x += warp_slots[k & 1][w].x, total.y += warp_slots[k & 1][w].y;
      cluster_slots[k & 1] = total;
    }
  };
  // Normalises local row k (from `values`, or from its stage) into output row `row`.
  auto store_to = [&](int k, long long row, const float4* values, float mean, float inverse_deviation) {
    const float4* staged = stage_of(k);
    float4* destination = output + row * row_vectors + slice_begin;
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const float4 v = values ? values[item] : staged[threadIdx.x + item * kThreads];
      const float4 g = scale[item], b = shift[item];
      destination[threadIdx.x + item * kThreads] =
          make_float4(fmaf((v.x - mean) * inverse_deviation, g.x, b.x), fmaf((v.y - mean) * inverse_deviation, g.y, b.y),
                      fmaf((v.z - mean) * inverse_deviation, g.z, b.z), fmaf((v.w - mean) * inverse_deviation, g.w, b.w));
    }
  };
  auto store_row = [&](int k, const float4* values, float mean, float inverse_deviation) {
    store_to(k, row_of(k), values, mean, inverse_deviation);
  };
  // kMode 3: one cluster barrier per row. Each warp's lane 0 writes the warp's (sum, sum of squares) into slot
  // (rank, warp) of every block of the cluster; after the barrier (which also orders the block) each warp sums
  // the kCluster * kWarps slots, a lane per slot, with shuffles: every block gets the bitwise same totals.
  __shared__ float2 all_slots[2][kCluster * kWarps];
  auto one_barrier_statistics = [&](int k, float sum, float squares, float& mean, float& inverse_deviation) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      squares += __shfl_xor_sync(0xffffffffu, squares, offset);
    }
    if (lane == 0) {
      float2* slot = &all_slots[k & 1][rank_in_cluster() * kWarps + warp];
#pragma unroll
      for (unsigned rank = 0; rank < kCluster; ++rank) {
        unsigned long long remote;
        asm("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(slot), "r"(rank));
        *reinterpret_cast<float2*>(remote) = make_float2(sum, squares);
      }
    }
    cluster_arrive();
    cluster_wait();
    constexpr int kSlots = kCluster * kWarps;
    sum = 0.0f, squares = 0.0f;
#pragma unroll
    for (int slot = 0; slot < kSlots; slot += 32) {
      if (slot + lane < kSlots) {
        const float2 part = all_slots[k & 1][slot + lane];
        sum += part.x, squares += part.y;
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      squares += __shfl_xor_sync(0xffffffffu, squares, offset);
    }
    mean = sum * inverse_cols;
    inverse_deviation = rsqrtf(fmaxf(squares * inverse_cols - mean * mean, 0.0f) + epsilon);
  };
  auto normalise = [&](int k, const float4* values = nullptr) {  // after row k's cluster barrier: store row k
    float mean = 0.0f, inverse_deviation = 1.0f;
    if constexpr (kMode != 2) {
      float2 total = load_from_block(&cluster_slots[k & 1], 0);
#pragma unroll
      for (unsigned rank = 1; rank < kCluster; ++rank) {
        const float2 part = load_from_block(&cluster_slots[k & 1], rank);
        total.x += part.x, total.y += part.y;
      }
      mean = total.x * inverse_cols;
      inverse_deviation = rsqrtf(fmaxf(total.y * inverse_cols - mean * mean, 0.0f) + epsilon);
    }
    store_row(k, values, mean, inverse_deviation);
  };

  auto one_barrier_row = [&](int k, long long row) {  // waits for local row k's stage, reduces, stores `row`
    wait_copies<kStages - 2>();
    float4 values[kItems];
    load_stage(k, values);
    float sum, squares, mean, inverse_deviation;
    thread_sums(values, sum, squares);
    one_barrier_statistics(k, sum, squares, mean, inverse_deviation);
    store_to(k, row, values, mean, inverse_deviation);
  };

  if constexpr (kMode == 3) {
    cluster_arrive();  // neighbours write into this block's slots only once it runs
    for (int k = 0; k < kStages - 1; ++k) copy_row(k);
    cluster_wait();
    for (int k = 0; k < my_rows; ++k) {
      one_barrier_row(k, row_of(k));
      copy_row(k + kStages - 1);
    }
    // no closing cluster barrier: after a row's barrier no block touches another's shared memory
  } else if constexpr (kMode == 4) {
    // One barrier per row, rows handed out at run time: the first kStages - 1 rows of each cluster are fixed
    // (cluster + j * clusters), later ones come from a global ticket counter, so a cluster that runs faster
    // takes more rows. Rank 0 draws the ticket for local row k + kStages - 1 during row k and writes it into every
    // block's ring before the row's barrier; the last cluster to finish resets the counters for the next launch.
    __shared__ int ring[8];
    static_assert(kStages <= 8, "ring entries are rewritten 8 - (kStages - 1) rows after they are published");
    const long long fixed = (long long)(kStages - 1) * clusters;
    auto static_row = [&](int j) { return cluster + (long long)j * clusters; };
    const bool leader = rank_in_cluster() == 0 && threadIdx.x == 0;
    cluster_arrive();
    for (int j = 0; j < kStages - 1; ++j) copy_to(j, static_row(j));
    cluster_wait();
    for (int k = 0;; ++k) {
      const long long row = k < kStages - 1 ? static_row(k) : ring[k % 8];
      if (row >= rows) break;
      if (leader) {
        const int next = (int)min(fixed + atomicAdd(&counters[0], 1), (long long)rows);
#pragma unroll
        for (unsigned rank = 0; rank < kCluster; ++rank) {
          unsigned long long remote;
          asm("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(&ring[(k + kStages - 1) % 8]), "r"(rank));
          *reinterpret_cast<int*>(remote) = next;
        }
      }
      one_barrier_row(k, row);
      copy_to(k + kStages - 1, ring[(k + kStages - 1) % 8]);
    }
    if (leader) {
      __threadfence();
      if (atomicAdd(&counters[1], 1) == clusters - 1) {
        counters[0] = 0;
        counters[1] = 0;
        __threadfence();
      }
    }
  } else if constexpr (kEarlyRefill) {
    for (int k = 0; k < kStages; ++k) copy_row(k);
    for (int k = 0; k < my_rows; ++k) {
      wait_copies<kStages - 1>();
      float4 values[kItems];
      load_stage(k, values);
      float sum, squares;
      thread_sums(values, sum, squares);  // uses every loaded value, so the stage's reads are done
      copy_row(k + kStages);
      warp_sums(k, sum, squares);
      __syncthreads();
      publish_block_total(k);
      cluster_arrive();
      cluster_wait();
      normalise(k, values);
    }
    cluster_arrive();
    cluster_wait();
  } else {
    for (int k = 0; k < kStages - 1; ++k) copy_row(k);
    if constexpr (kPipelined) {
      // Iteration k: partial sums of row k; block barrier; wait for row k-1's cluster barrier and normalise it;
      // publish row k and arrive. Stages: row k-1 and row k in use, rows k+1 .. k+kStages-2 in flight.
      for (int k = 0; k <= my_rows; ++k) {
        if (k < my_rows) {
          wait_copies<kStages - 2>();
          partial_sums(k);
        }
        __syncthreads();
        if (k < my_rows) publish_block_total(k);
        if (k >= 1) {
          cluster_wait();  // row k-1's slots are all written (and row k-2's all read)
          normalise(k - 1);
        }
        cluster_arrive();  // this block's slot of row k is written; it has read row k-1's slots
        copy_row(k - 1 + kStages);  // into row k-1's stage, which this thread has read for the last time
      }
      cluster_wait();
    } else {
      for (int k = 0; k < my_rows; ++k) {
        wait_copies<kStages - 2>();
        if constexpr (kMode != 2) {
          partial_sums(k);
          __syncthreads();
          publish_block_total(k);
        }
        if constexpr (kMode == 0) {
          cluster_arrive();
          cluster_wait();
        }
        normalise(k);
        copy_row(k + kStages - 1);
      }
      cluster_arrive();
      cluster_wait();
    }
  }
}

}  // namespace probe

struct Problem {
  int rows, cols;
  float* input;
  float* gamma;
  float* beta;
  float* output;
  int* counters;  // dynamic-rows: ticket counter and finished clusters, zero between launches
};

// A launch configuration with a cluster dimension (the attribute lives beside the configuration that points to it).
struct ClusterLaunch {
  cudaLaunchAttribute attribute[1];
  cudaLaunchConfig_t config = {};
  ClusterLaunch(int cluster, int threads, int shared_bytes, int blocks) {
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = cluster;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = shared_bytes;
    config.gridDim = dim3(blocks);
  }
  ClusterLaunch(const ClusterLaunch&) = delete;  // config.attrs points into this object
};

template <typename Launch> float median_ms(Launch launch, int repeats = 25) {
  cudaEvent_t begin, end;
  CHECK(cudaEventCreate(&begin));
  CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> times;
  for (int i = 0; i < repeats; ++i) {
    CHECK(cudaEventRecord(begin));
    launch();
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, begin, end));
    times.push_back(ms);
  }
  CHECK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Largest error of sampled rows against a double-precision reference.
double max_error(const Problem& p, const std::vector<float>& input, const std::vector<float>& gamma,
                 const std::vector<float>& beta) {
  std::vector<float> row_out(p.cols);
  double worst = 0;
  for (int r = 0; r < p.rows; r += std::max(1, p.rows / 61)) {
    CHECK(cudaMemcpy(row_out.data(), p.output + (size_t)r * p.cols, p.cols * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0, squares = 0;
    for (int c = 0; c < p.cols; ++c) sum += input[(size_t)r * p.cols + c];
    const double mean = sum / p.cols;
    for (int c = 0; c < p.cols; ++c) squares += std::pow(input[(size_t)r * p.cols + c] - mean, 2);
    const double inverse = 1.0 / std::sqrt(squares / p.cols + 1e-5);
    for (int c = 0; c < p.cols; ++c) {
      const double expected = (input[(size_t)r * p.cols + c] - mean) * inverse * gamma[c] + beta[c];
      worst = std::max(worst, std::abs(expected - row_out[c]) / (1.0 + std::abs(expected)));
    }
  }
  return worst;
}

template <int kThreads, int kCluster, int kStages, bool kPipelined, int kMode = 0, bool kEarlyRefill = false>
void run_probe(const Problem& p, float copy_ms, const std::vector<float>& input, const std::vector<float>& gamma,
               const std::vector<float>& beta) {
  constexpr int kItems = 32768 / kCluster / kThreads / 4;
  if (p.cols != 32768) return;
  auto kernel = probe::persistent_layernorm<kThreads, kCluster, kItems, kStages, kPipelined, kMode, kEarlyRefill>;
  const int shared_bytes = kStages * kThreads * kItems * 16;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  ClusterLaunch launch_setup(kCluster, kThreads, shared_bytes, 132 * kCluster);
  cudaLaunchConfig_t& config = launch_setup.config;
  int clusters = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  config.gridDim = dim3(clusters * kCluster);
  CHECK(cudaMemset(p.output, 0, (size_t)p.rows * p.cols * 4));
  auto launch = [&] {
    CHECK(cudaLaunchKernelEx(&config, kernel, p.rows, p.cols, 1e-5f, (const float4*)p.input, (const float4*)p.gamma,
                             (const float4*)p.beta, (float4*)p.output, p.counters));
  };
  launch();
  CHECK(cudaDeviceSynchronize());
  const double error = max_error(p, input, gamma, beta);
  const float ms = median_ms(launch);
  const char* names[] = {"sequential", "no-cluster-barrier", "staged-copy", "one-barrier", "dynamic-rows"};
  std::printf("%-18s threads=%4d cluster=%d stages=%d clusters=%3d  %.4f ms  %5.1f%% of copy  max_error %.2e\n",
              kPipelined ? "pipelined" : kEarlyRefill ? "early-refill" : names[kMode], kThreads, kCluster, kStages, clusters, ms, 100.0 * copy_ms / ms,
              error);
}

template <int kThreads>
void template_persistent_probe(const Problem& p, float copy_ms, const std::vector<float>& input,
                               const std::vector<float>& gamma, const std::vector<float>& beta, int sm_count) {
  constexpr int kStages = 3;
  constexpr int kRowItems = 16384 / (kThreads * 4);
  auto kernel = layernorm<kThreads, 1, 4, true, false, kRowItems, 1, false, 2, true, true, false, kStages, false>;
  const int shared_bytes = kStages * 16384 * 4;
  if (p.cols != 32768) return;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  CHECK(cudaMemset(p.output, 0, (size_t)p.rows * p.cols * 4));
  ClusterLaunch launch_setup(2, kThreads, shared_bytes, sm_count);
  cudaLaunchConfig_t& config = launch_setup.config;
  auto launch = [&] {
    CHECK(cudaLaunchKernelEx(&config, kernel, p.rows, p.cols, 1e-5f, (const float*)p.input, (const float*)p.gamma,
                             (const float*)p.beta, p.output, p.counters));
  };
  launch();
  CHECK(cudaDeviceSynchronize());
  const double error = max_error(p, input, gamma, beta);
  const float ms = median_ms(launch);
  std::printf("%-18s threads=%4d cluster=2 stages=3 clusters= 66  %.4f ms  %5.1f%% of copy  max_error %.2e\n", "template",
              kThreads, ms, 100.0 * copy_ms / ms, error);
}

template <bool kCacheRow, int kRowItems, int kUnroll>
void template_probe(const Problem& p, float copy_ms, const std::vector<float>& input, const std::vector<float>& gamma,
                    const std::vector<float>& beta, const char* name) {
  auto kernel = layernorm<1024, 1, 4, kCacheRow, false, kRowItems, kUnroll, false, 1, false, true, false, 0, false>;
  if (p.cols != 32768) return;
  CHECK(cudaMemset(p.output, 0, (size_t)p.rows * p.cols * 4));
  auto launch = [&] { kernel<<<p.rows, 1024>>>(p.rows, p.cols, 1e-5f, p.input, p.gamma, p.beta, p.output, p.counters); };
  launch();
  CHECK(cudaDeviceSynchronize());
  const double error = max_error(p, input, gamma, beta);
  const float ms = median_ms(launch);
  std::printf("%-18s threads=1024 cluster=1 one block per row       %.4f ms  %5.1f%% of copy  max_error %.2e\n", name,
              ms, 100.0 * copy_ms / ms, error);
}

int main(int argc, char** argv) {
  Problem p{argc > 2 ? std::atoi(argv[1]) : 4096, argc > 2 ? std::atoi(argv[2]) : 32768, nullptr, nullptr, nullptr,
            nullptr, nullptr};
  const size_t elements = (size_t)p.rows * p.cols;
  std::vector<float> input(elements), gamma(p.cols), beta(p.cols);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto& v : input) v = 0.5f + uniform(random);
  for (auto& v : gamma) v = 1.0f + 0.5f * uniform(random);
  for (auto& v : beta) v = uniform(random);
  CHECK(cudaMalloc(&p.input, elements * 4));
  CHECK(cudaMalloc(&p.output, elements * 4));
  CHECK(cudaMalloc(&p.gamma, p.cols * 4));
  CHECK(cudaMalloc(&p.beta, p.cols * 4));
  CHECK(cudaMalloc(&p.counters, 2 * sizeof(int)));
  CHECK(cudaMemset(p.counters, 0, 2 * sizeof(int)));
  CHECK(cudaMemcpy(p.input, input.data(), elements * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(p.gamma, gamma.data(), p.cols * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(p.beta, beta.data(), p.cols * 4, cudaMemcpyHostToDevice));
  cudaDeviceProp properties;
  CHECK(cudaGetDeviceProperties(&properties, 0));

  // Copy ceiling: the same bytes read and written as the kernel's minimum traffic.
  const float copy_ms =
      median_ms([&] { CHECK(cudaMemcpyAsync(p.output, p.input, elements * 4, cudaMemcpyDeviceToDevice)); });
  std::printf("%s, %d SMs; rows %d cols %d; copy %.4f ms = %.0f GB/s (read + written)\n", properties.name,
              properties.multiProcessorCount, p.rows, p.cols, copy_ms, 2.0 * elements * 4 / copy_ms / 1e6);

  // The template's persistent configurations: CLUSTER=2 STAGES=3, AFFINE=registers, sum of squares, a grid of
  // sm_count blocks.
  template_persistent_probe<1024>(p, copy_ms, input, gamma, beta, properties.multiProcessorCount);
  template_persistent_probe<512>(p, copy_ms, input, gamma, beta, properties.multiProcessorCount);
  template_persistent_probe<256>(p, copy_ms, input, gamma, beta, properties.multiProcessorCount);
  run_probe<1024, 2, 3, false, 2>(p, copy_ms, input, gamma, beta);
  run_probe<1024, 2, 3, false, 3>(p, copy_ms, input, gamma, beta);
  run_probe<1024, 2, 3, false, 4>(p, copy_ms, input, gamma, beta);
  run_probe<512, 2, 3, false, 3>(p, copy_ms, input, gamma, beta);
  run_probe<512, 2, 3, false, 4>(p, copy_ms, input, gamma, beta);
  run_probe<256, 2, 3, false, 4>(p, copy_ms, input, gamma, beta);
  run_probe<1024, 4, 6, false, 4>(p, copy_ms, input, gamma, beta);
  run_probe<512, 4, 4, false, 4>(p, copy_ms, input, gamma, beta);
  // Non-persistent template configurations, one block per row: the row cached in registers, and streamed
  // (statistics pass, then the output pass re-reads the row, mostly from L2).
  template_probe<true, 8, 1>(p, copy_ms, input, gamma, beta, "template-cached");
  template_probe<false, 1, 8>(p, copy_ms, input, gamma, beta, "template-streamed");
  return 0;
}
