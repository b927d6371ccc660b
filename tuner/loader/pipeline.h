#pragma once
// The streaming pipeline: host workers read batches into staging slots (a batch in pieces, several workers on one
// batch, so batches fill in the order they are sent), a submitter sends each filled slot to the device (copy in,
// kernel, copy back) on streams used round-robin, a completer waits for each batch in order, and a worker checks
// its output (checks before reads) and frees the slot for the next read.
//
// The number of slots is the prefetch depth, so at most `prefetch` batches are in flight (being read, copied,
// computed or checked); prefetch 1 with one worker and one stream is the naive loop: read, copy, compute, copy
// back, check, repeat. Everything that touches the GPU goes through DeviceOperations, so the scheduling and
// bookkeeping here are tested on the CPU with a fake device, and the driver layer (cuda_pipeline_device.h) is thin.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tuner/loader/dataset.h"

namespace kernlathe::loader {

// One configuration's loader settings, evaluated from the spec's loader expressions.
struct LoaderConfiguration {
  bool pinned = false;
  int workers = 1;
  int prefetch = 1;
  int streams = 1;
  std::int64_t batch = 1;        // items per batch
  std::int64_t chunk_bytes = 0;  // 0: one host-to-device copy per batch
  // Host workers read a batch in pieces of about this many bytes (whole items), several workers on one batch at
  // once, so batches become ready in the order they are submitted and the first copy waits for a piece-sized read
  // per worker rather than for one worker to read a whole batch; 0: each worker reads whole batches. Not a tuned
  // setting: a worker reads the page cache at ~6.5 GB/s on the H200 host, so a piece takes ~80 us, far above the
  // few microseconds of handing it out.
  static constexpr std::int64_t default_read_piece_bytes = std::int64_t{512} << 10;
  std::int64_t read_piece_bytes = default_read_piece_bytes;

  // Pageable, one worker, no prefetch, one stream: what a first implementation does.
  static LoaderConfiguration naive(std::int64_t batch);
  // The reference pass's loader: the naive loader's schedule (one worker, one staging slot, one stream, a batch at
  // a time) on pinned staging. The outputs are the reference kernel's whatever the staging; pageable copies run at
  // 6.5 (in) and 13 GB/s (out) on the H200 host against 55 GB/s pinned, and the reference pass is part of every
  // streamed run's start-up (issue 18). The naive loader itself is still measured and verified as the shipped
  // spaces' default configuration.
  static LoaderConfiguration reference(std::int64_t batch);
  std::string to_string() const;  // "pinned=1 workers=4 prefetch=8 streams=2 batch=64 chunk=0"
};

// When a batch's device work ran, in milliseconds from the pass's start mark on the device clock.
struct BatchTimes {
  double copy_in_begin_ms = 0;
  double copy_in_end_ms = 0;  // = kernel begin
  double kernel_end_ms = 0;   // = copy-out begin
  double copy_out_end_ms = 0;
};

class DeviceOperations {
 public:
  virtual ~DeviceOperations() = default;
  // Before a pass, on the calling thread: make `slots` staging slots (host input, host output, device buffers)
  // of the given sizes and `streams` streams. Implementations keep and reuse what is big enough.
  virtual void prepare(int slots, int streams, std::size_t input_bytes, std::size_t output_bytes, bool pinned) = 0;
  // Called first on every thread of the pass that calls submit/complete (the driver needs its context current).
  virtual void enter_thread() {}
  virtual std::span<std::byte> host_input(int slot) = 0;
  virtual std::span<const std::byte> host_output(int slot) = 0;
  // Marks time zero of the pass.
  virtual void start_clock() = 0;
  // Enqueues copy-in (in chunks of chunk_bytes, 0 = whole), the kernel on the batch, and copy-out; returns at once.
  virtual void submit(int slot, int stream, const BatchRange& batch, std::size_t chunk_bytes) = 0;
  // Blocks until the slot's submitted work is done; host_output(slot) then holds the batch's output.
  virtual BatchTimes complete(int slot) = 0;
};

// Checks a finished batch's output (item_count * output item bytes); returns what is wrong, or nothing. Called
// from several host workers at once, each on a different batch.
using BatchCheck = std::function<std::optional<std::string>(const BatchRange& batch, std::span<const std::byte> output)>;

// Where the time of one pass went. Stage times are the wall time during which at least one batch was in that
// stage (the union of its intervals), so stages overlapped across streams are not counted twice; gpu_busy is the
// union over all stages and gpu_idle the rest of the end-to-end time.
struct StageBreakdown {
  double end_to_end_ms = 0;
  double host_read_ms = 0;  // summed over workers: CPU time spent reading or generating
  double copy_in_ms = 0;
  double kernel_ms = 0;
  double copy_out_ms = 0;
  double gpu_busy_ms = 0;
  double gpu_idle_ms = 0;
  // Start-up and drain of the pass: when the first copy in began and when the last copy out ended.
  double first_copy_in_begin_ms = 0;
  double last_copy_out_end_ms = 0;
  std::int64_t items = 0;
  std::int64_t batches = 0;
  std::int64_t input_bytes = 0;
  std::int64_t output_bytes = 0;
  double items_per_second = 0;
  double bytes_per_second = 0;        // input + output bytes moved per end-to-end second
  double input_bytes_per_second = 0;  // host-to-device bytes per end-to-end second: comparable to the H2D ceiling
};

// The arithmetic of a breakdown, separate so it is tested on its own.
StageBreakdown summarise_stages(const std::vector<BatchTimes>& batches, double end_to_end_ms, double host_read_ms,
                                std::int64_t items, std::int64_t input_bytes, std::int64_t output_bytes);

// Total length of the union of [begin, end) intervals.
double union_length(std::vector<std::pair<double, double>> intervals);

enum class PipelineFailure { none, loader, wrong_result };

struct PipelineResult {
  PipelineFailure failure = PipelineFailure::none;
  std::string message;  // names the batch
  StageBreakdown breakdown;
  int max_in_flight = 0;                  // most slots busy at once (<= prefetch)
  std::vector<int> completions;           // per batch: how often it completed (all 1 after a clean pass)
  bool ok() const { return failure == PipelineFailure::none; }
};

// Runs one pass over every batch of `source`. A host worker that throws stops the pipeline (failure loader); a
// check that fails stops it (failure wrong_result); a batch that never completed or completed twice is
// wrong_result. Work already on the device is always waited for before returning. An exception from the device
// (a driver error) is rethrown after the other threads have stopped. check may be empty (timing passes).
// Throws TunerError for settings below 1.
PipelineResult run_pipeline(const BatchSource& source, std::size_t output_item_bytes, DeviceOperations& device,
                            const LoaderConfiguration& loader, const BatchCheck& check);

// Element-wise comparison of a batch's output with the reference (|got - expected| <= absolute + relative *
// |expected|; NaN never matches). Integers compare exactly. Returns "batch 3 (item 97, element 12): got .., expected .."
// for the first mismatch.
std::optional<std::string> compare_batch(Dtype dtype, const Tolerance& tolerance, const BatchRange& batch,
                                         std::int64_t item_elements, std::span<const std::byte> got,
                                         std::span<const std::byte> expected);

// compare_batch with the batch's items split among `threads` threads (host_memory.h: run_in_parallel): the same
// answer, the first mismatch by item. The streamed reference's own check reads all of its outputs (1 GiB for the
// large example), which one thread did in a few hundred milliseconds of the start-up.
std::optional<std::string> compare_batch_in_parallel(Dtype dtype, const Tolerance& tolerance, const BatchRange& batch,
                                                     std::int64_t item_elements, std::span<const std::byte> got,
                                                     std::span<const std::byte> expected, int threads);

}  // namespace kernlathe::loader
