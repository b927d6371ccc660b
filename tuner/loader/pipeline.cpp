#include "tuner/loader/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "tuner/loader/host_memory.h"

namespace kernlathe::loader {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

template <typename T>
double load_as(const std::byte* source) {
  T value;
  std::memcpy(&value, source, sizeof value);
  return static_cast<double>(value);
}

// f16/bf16 and the rest compare bit-for-bit: their conversions live in the run module.
std::optional<double> load_number(Dtype dtype, const std::byte* source) {
  switch (dtype) {
    case Dtype::f32: return load_as<float>(source);
    case Dtype::f64: return load_as<double>(source);
    case Dtype::i8: return load_as<std::int8_t>(source);
    case Dtype::u8: return load_as<std::uint8_t>(source);
    case Dtype::i32: return load_as<std::int32_t>(source);
    case Dtype::u32: return load_as<std::uint32_t>(source);
    case Dtype::i64: return load_as<std::int64_t>(source);
    case Dtype::f16:
    case Dtype::bf16: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

LoaderConfiguration LoaderConfiguration::naive(std::int64_t batch) {
  LoaderConfiguration configuration;
  configuration.batch = batch;
  return configuration;
}

LoaderConfiguration LoaderConfiguration::reference(std::int64_t batch) {
  LoaderConfiguration configuration = naive(batch);
  configuration.pinned = true;
  return configuration;
}

std::string LoaderConfiguration::to_string() const {
  return fmt::format("pinned={} workers={} prefetch={} streams={} batch={} chunk={}{}", pinned ? 1 : 0, workers, prefetch,
                     streams, batch, chunk_bytes,
                     read_piece_bytes == default_read_piece_bytes ? "" : fmt::format(" piece={}", read_piece_bytes));
}

double union_length(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, covered_until = -INFINITY;
  for (auto [begin, end] : intervals) {
    if (end <= begin) continue;
    if (begin > covered_until) {
      total += end - begin;
      covered_until = end;
    } else if (end > covered_until) {
      total += end - covered_until;
      covered_until = end;
    }
  }
  return total;
}

StageBreakdown summarise_stages(const std::vector<BatchTimes>& batches, double end_to_end_ms, double host_read_ms,
                                std::int64_t items, std::int64_t input_bytes, std::int64_t output_bytes) {
  std::vector<std::pair<double, double>> copy_in, kernel, copy_out, all;
  for (const BatchTimes& times : batches) {
    copy_in.emplace_back(times.copy_in_begin_ms, times.copy_in_end_ms);
    kernel.emplace_back(times.copy_in_end_ms, times.kernel_end_ms);
    copy_out.emplace_back(times.kernel_end_ms, times.copy_out_end_ms);
    all.emplace_back(times.copy_in_begin_ms, times.copy_out_end_ms);
  }
  StageBreakdown breakdown;
  breakdown.end_to_end_ms = end_to_end_ms;
  breakdown.host_read_ms = host_read_ms;
  breakdown.copy_in_ms = union_length(copy_in);
  breakdown.kernel_ms = union_length(kernel);
  breakdown.copy_out_ms = union_length(copy_out);
  breakdown.gpu_busy_ms = union_length(all);
  // The device and host clocks differ slightly: idle time is never negative.
  breakdown.gpu_idle_ms = std::max(0.0, end_to_end_ms - breakdown.gpu_busy_ms);
  if (!batches.empty()) {
    breakdown.first_copy_in_begin_ms = INFINITY;
    for (const BatchTimes& times : batches) {
      breakdown.first_copy_in_begin_ms = std::min(breakdown.first_copy_in_begin_ms, times.copy_in_begin_ms);
      breakdown.last_copy_out_end_ms = std::max(breakdown.last_copy_out_end_ms, times.copy_out_end_ms);
    }
  }
  breakdown.items = items;
  breakdown.batches = static_cast<std::int64_t>(batches.size());
  breakdown.input_bytes = input_bytes;
  breakdown.output_bytes = output_bytes;
  if (end_to_end_ms > 0) {
    double seconds = end_to_end_ms / 1000;
    breakdown.items_per_second = static_cast<double>(items) / seconds;
    breakdown.bytes_per_second = static_cast<double>(input_bytes + output_bytes) / seconds;
    breakdown.input_bytes_per_second = static_cast<double>(input_bytes) / seconds;
  }
  return breakdown;
}

namespace {

const LoaderConfiguration& checked_settings(const LoaderConfiguration& loader) {
  if (loader.workers < 1 || loader.prefetch < 1 || loader.streams < 1 || loader.batch < 1 || loader.chunk_bytes < 0 ||
      loader.read_piece_bytes < 0) {
    throw TunerError(fmt::format("loader settings out of range ({}): workers, prefetch, streams and batch must be at "
                                 "least 1, chunk and read piece at least 0",
                                 loader.to_string()));
  }
  return loader;
}

// One pass of the pipeline. The settings and the state the threads share (under one mutex) are members; the host
// workers, the completer and the submitter (the calling thread) are methods, and run() calls the phases in order:
// prepare the device, start the threads, submit every batch, stop the threads, summarise.
class PipelinePass {
 public:
  PipelinePass(const BatchSource& source, std::size_t output_item_bytes, DeviceOperations& device,
               const LoaderConfiguration& loader, const BatchCheck& check);
  PipelineResult run();

 private:
  // A worker's next job: check a completed batch, or read one piece of the batch being read.
  struct WorkerTask {
    bool checking = false;
    BatchRange piece;  // checking: only the batch index
    int slot = 0;
    std::size_t offset_bytes = 0;  // where the piece goes in the slot's input
  };

  BatchRange range_of(std::int64_t index) const;
  std::int64_t pieces_of(std::int64_t index) const;

  // The phases of run(), in order.
  void prepare_device();
  void start_threads();
  void submit_batches();
  void stop_threads();
  void count_completions();

  void worker();
  std::optional<WorkerTask> wait_for_work();
  WorkerTask take_next_piece();
  void check_batch(std::int64_t index, int slot);
  bool read_piece(const WorkerTask& task);
  void completer();

  void wake_everyone();
  void fail(PipelineFailure failure, std::string message);
  void stop_on_device_error();
  void finish(std::int64_t index, int slot);

  const BatchSource& source_;
  const std::size_t output_item_bytes_;
  DeviceOperations& device_;
  const LoaderConfiguration& loader_;
  const BatchCheck& check_;
  const std::int64_t items_;
  const std::int64_t batch_count_;
  const std::size_t item_bytes_;
  const std::int64_t piece_items_;

  PipelineResult result_;
  std::vector<BatchTimes> times_;

  // One mutex, but a condition per kind of waiter: a piece read must not wake every idle worker, and a freed slot
  // must not wake the submitter.
  std::mutex mutex_;
  std::condition_variable work_available_, batch_filled_, batch_submitted_;
  // A stack: the slot freed last is filled next, while its input and output lines are still in the host's
  // last-level cache, so the device's copies find them there instead of in DRAM; a slot the pipeline does not need
  // stays cold. On the H200 host, 512 MiB copied in while 512 MiB went out ran in at 51.3-51.4 GB/s cycling
  // through an 8 MiB host region, at 47.4-50.2 GB/s from and to 512 MiB buffers (07:44 and 08:03 UTC).
  std::vector<int> free_slots_;
  bool started_ = false;
  // Pieces are handed out in order: piece `next_piece_` of batch `reading_batch_`, which holds `reading_slot_`.
  std::int64_t reading_batch_ = 0, next_piece_ = 0;
  int reading_slot_ = -1;
  std::vector<std::int64_t> pieces_left_;
  std::map<std::int64_t, int> filled_;                  // batch -> slot, read and waiting to be submitted
  std::deque<std::pair<std::int64_t, int>> submitted_;  // in submission order
  std::deque<std::pair<std::int64_t, int>> to_check_;   // completed on the device, output not yet checked
  bool stopping_ = false, submitting_done_ = false, completer_done_ = false;
  int busy_slots_ = 0;
  double host_read_ms_ = 0;
  std::exception_ptr device_exception_;

  std::vector<std::thread> workers_;
  std::thread completion_thread_;
  Clock::time_point start_;
};

PipelinePass::PipelinePass(const BatchSource& source, std::size_t output_item_bytes, DeviceOperations& device,
                           const LoaderConfiguration& loader, const BatchCheck& check)
    : source_(source),
      output_item_bytes_(output_item_bytes),
      device_(device),
      loader_(checked_settings(loader)),
      check_(check),
      items_(source.item_count()),
      batch_count_((items_ + loader_.batch - 1) / loader_.batch),
      item_bytes_(source.item_bytes()),
      piece_items_(loader_.read_piece_bytes == 0
                       ? loader_.batch
                       : std::clamp<std::int64_t>(
                             loader_.read_piece_bytes / static_cast<std::int64_t>(std::max<std::size_t>(item_bytes_, 1)),
                             1, loader_.batch)) {}

BatchRange PipelinePass::range_of(std::int64_t index) const {
  BatchRange range;
  range.index = index;
  range.first_item = index * loader_.batch;
  range.item_count = std::min(loader_.batch, items_ - range.first_item);
  return range;
}

std::int64_t PipelinePass::pieces_of(std::int64_t index) const {
  return (range_of(index).item_count + piece_items_ - 1) / piece_items_;
}

PipelineResult PipelinePass::run() {
  prepare_device();
  start_threads();
  submit_batches();
  stop_threads();
  // After the workers: they check the last batches.
  double end_to_end_ms = milliseconds_since(start_);
  if (device_exception_) std::rethrow_exception(device_exception_);
  count_completions();
  result_.breakdown = summarise_stages(times_, end_to_end_ms, host_read_ms_, items_,
                                       items_ * static_cast<std::int64_t>(item_bytes_),
                                       items_ * static_cast<std::int64_t>(output_item_bytes_));
  return std::move(result_);
}

void PipelinePass::prepare_device() {
  device_.enter_thread();
  device_.prepare(loader_.prefetch, loader_.streams, static_cast<std::size_t>(loader_.batch) * item_bytes_,
                  static_cast<std::size_t>(loader_.batch) * output_item_bytes_, loader_.pinned);
  result_.completions.assign(static_cast<std::size_t>(batch_count_), 0);
  times_.resize(static_cast<std::size_t>(batch_count_));
  for (int slot = loader_.prefetch - 1; slot >= 0; --slot) free_slots_.push_back(slot);
  pieces_left_.resize(static_cast<std::size_t>(batch_count_));
  for (std::int64_t index = 0; index < batch_count_; ++index) pieces_left_[static_cast<std::size_t>(index)] = pieces_of(index);
}

// Threads are made before the clock starts: a loader keeps its workers between passes, so creating them is set-up
// (like allocating the pinned slots), not part of moving the data.
void PipelinePass::start_threads() {
  for (int index = 0; index < loader_.workers; ++index) workers_.emplace_back([this] { worker(); });
  completion_thread_ = std::thread([this] { completer(); });
  device_.start_clock();
  start_ = Clock::now();
  std::lock_guard lock(mutex_);
  started_ = true;
  work_available_.notify_all();
}

// On the calling thread: each batch, in order, once its pieces are read.
void PipelinePass::submit_batches() {
  for (std::int64_t index = 0; index < batch_count_; ++index) {
    int slot = 0;
    {
      std::unique_lock lock(mutex_);
      batch_filled_.wait(lock, [&] { return stopping_ || filled_.count(index) != 0; });
      if (stopping_) break;
      slot = filled_[index];
      filled_.erase(index);
    }
    try {
      device_.submit(slot, static_cast<int>(index % loader_.streams), range_of(index),
                     static_cast<std::size_t>(loader_.chunk_bytes));
    } catch (...) {
      stop_on_device_error();
      break;
    }
    std::lock_guard lock(mutex_);
    submitted_.emplace_back(index, slot);
    batch_submitted_.notify_one();
  }
  std::lock_guard lock(mutex_);
  submitting_done_ = true;
  batch_submitted_.notify_all();
}

void PipelinePass::stop_threads() {
  completion_thread_.join();
  {
    // Workers blocked on a free slot must see that no more will come.
    std::lock_guard lock(mutex_);
    stopping_ = stopping_ || reading_batch_ < batch_count_;
    wake_everyone();
  }
  for (std::thread& thread : workers_) thread.join();
}

// A clean pass completes every batch exactly once.
void PipelinePass::count_completions() {
  if (!result_.ok()) return;
  for (std::int64_t index = 0; index < batch_count_; ++index) {
    int count = result_.completions[static_cast<std::size_t>(index)];
    if (count != 1) {
      result_.failure = PipelineFailure::wrong_result;
      result_.message = count == 0 ? fmt::format("batch {} never completed", index)
                                   : fmt::format("batch {} completed {} times", index, count);
      return;
    }
  }
}

// A worker checks finished batches first (that frees their slots), then reads pieces. Checks on the workers rather
// than on the completer: comparing a batch reads its output and its reference, 1 GiB a pass for the transfer-bound
// example, which one thread did in 230-270 ms against a 13 ms pass (H200 host, 07:44 UTC; ~50 ms on the workers at
// 08:03).
void PipelinePass::worker() {
  while (std::optional<WorkerTask> task = wait_for_work()) {
    if (task->checking) {
      check_batch(task->piece.index, task->slot);
    } else if (!read_piece(*task)) {
      return;
    }
  }
}

// Nothing when the worker should stop: the pass is stopping, or every batch is read and no check is left to do.
std::optional<PipelinePass::WorkerTask> PipelinePass::wait_for_work() {
  std::unique_lock lock(mutex_);
  // A batch already begun has its slot; starting the next one needs a free slot.
  work_available_.wait(lock, [&] {
    return stopping_ || !to_check_.empty() || (reading_batch_ >= batch_count_ && (completer_done_ || !check_)) ||
           (reading_batch_ < batch_count_ && started_ && (next_piece_ > 0 || !free_slots_.empty()));
  });
  if (stopping_) return std::nullopt;
  if (!to_check_.empty()) {
    WorkerTask task;
    task.checking = true;
    std::tie(task.piece.index, task.slot) = to_check_.front();
    to_check_.pop_front();
    return task;
  }
  if (reading_batch_ >= batch_count_) return std::nullopt;
  return take_next_piece();
}

// With the mutex held and a piece left to read.
PipelinePass::WorkerTask PipelinePass::take_next_piece() {
  if (next_piece_ == 0) {
    reading_slot_ = free_slots_.back();
    free_slots_.pop_back();
    result_.max_in_flight = std::max(result_.max_in_flight, ++busy_slots_);
  }
  BatchRange whole = range_of(reading_batch_);
  std::int64_t first = next_piece_ * piece_items_;
  WorkerTask task;
  task.piece.index = reading_batch_;
  task.piece.first_item = whole.first_item + first;
  task.piece.item_count = std::min(piece_items_, whole.item_count - first);
  task.offset_bytes = static_cast<std::size_t>(first) * item_bytes_;
  task.slot = reading_slot_;
  if (++next_piece_ == pieces_of(reading_batch_)) {
    ++reading_batch_;
    next_piece_ = 0;
    // The next batch's first piece needs a free slot: another waiting worker may take one now.
    if (!free_slots_.empty()) work_available_.notify_one();
  } else {
    work_available_.notify_one();  // more pieces of this batch for another worker
  }
  return task;
}

void PipelinePass::check_batch(std::int64_t index, int slot) {
  BatchRange range = range_of(index);
  std::optional<std::string> wrong;
  try {
    wrong = check_(range, device_.host_output(slot).first(static_cast<std::size_t>(range.item_count) * output_item_bytes_));
  } catch (const std::exception& error) {
    wrong = fmt::format("batch {}: the check failed: {}", range.index, error.what());
  }
  if (wrong) fail(PipelineFailure::wrong_result, *wrong);
  std::lock_guard lock(mutex_);
  finish(range.index, slot);
}

// False when the read failed (the pass then stops).
bool PipelinePass::read_piece(const WorkerTask& task) {
  Clock::time_point start = Clock::now();
  try {
    source_.read(task.piece, device_.host_input(task.slot).subspan(
                                 task.offset_bytes, static_cast<std::size_t>(task.piece.item_count) * item_bytes_));
  } catch (const std::exception& error) {
    fail(PipelineFailure::loader, fmt::format("host worker failed on batch {}: {}", task.piece.index, error.what()));
    return false;
  }
  double read_ms = milliseconds_since(start);
  std::lock_guard lock(mutex_);
  host_read_ms_ += read_ms;
  if (--pieces_left_[static_cast<std::size_t>(task.piece.index)] == 0) {
    filled_[task.piece.index] = task.slot;
    batch_filled_.notify_one();
  }
  return true;
}

void PipelinePass::completer() {
  device_.enter_thread();
  while (true) {
    std::int64_t index = 0;
    int slot = 0;
    bool skip_check = false;
    {
      std::unique_lock lock(mutex_);
      batch_submitted_.wait(lock, [&] { return !submitted_.empty() || submitting_done_; });
      if (submitted_.empty()) {
        completer_done_ = true;
        work_available_.notify_all();
        return;
      }
      std::tie(index, slot) = submitted_.front();
      submitted_.pop_front();
      skip_check = stopping_;
    }
    // Device work is always waited for, even when stopping: its buffers must not be reused or freed under it.
    try {
      times_[static_cast<std::size_t>(index)] = device_.complete(slot);
    } catch (...) {
      stop_on_device_error();
      continue;
    }
    std::lock_guard lock(mutex_);
    if (!skip_check && check_) {
      to_check_.emplace_back(index, slot);
      work_available_.notify_one();
    } else {
      finish(index, slot);
    }
  }
}

// With the mutex held.
void PipelinePass::wake_everyone() {
  work_available_.notify_all();
  batch_filled_.notify_all();
  batch_submitted_.notify_all();
}

// The first failure wins; later ones are consequences of stopping.
void PipelinePass::fail(PipelineFailure failure, std::string message) {
  std::lock_guard lock(mutex_);
  if (!stopping_) {
    result_.failure = failure;
    result_.message = std::move(message);
  }
  stopping_ = true;
  wake_everyone();
}

// Inside a catch block: the first device exception is rethrown once the threads have stopped.
void PipelinePass::stop_on_device_error() {
  std::lock_guard lock(mutex_);
  if (!device_exception_) device_exception_ = std::current_exception();
  stopping_ = true;
  wake_everyone();
}

// With the mutex held: the batch is done (checked, or needing no check) and its slot takes the next read.
void PipelinePass::finish(std::int64_t index, int slot) {
  ++result_.completions[static_cast<std::size_t>(index)];
  free_slots_.push_back(slot);
  --busy_slots_;
  work_available_.notify_all();
}

}  // namespace

PipelineResult run_pipeline(const BatchSource& source, std::size_t output_item_bytes, DeviceOperations& device,
                            const LoaderConfiguration& loader, const BatchCheck& check) {
  return PipelinePass(source, output_item_bytes, device, loader, check).run();
}

std::optional<std::string> compare_batch(Dtype dtype, const Tolerance& tolerance, const BatchRange& batch,
                                         std::int64_t item_elements, std::span<const std::byte> got,
                                         std::span<const std::byte> expected) {
  std::size_t size = dtype_size(dtype);
  std::size_t elements = std::min(got.size(), expected.size()) / size;
  auto where = [&](std::size_t element) {
    std::int64_t in_batch = static_cast<std::int64_t>(element);
    return fmt::format("batch {} (item {}, element {})", batch.index,
                       batch.first_item + in_batch / std::max<std::int64_t>(item_elements, 1),
                       in_batch % std::max<std::int64_t>(item_elements, 1));
  };
  if (got.size() != expected.size()) {
    return fmt::format("batch {}: {} output bytes, the reference has {}", batch.index, got.size(), expected.size());
  }
  if (dtype == Dtype::f32) {
    // The common case, checked for every batch of every verified pass: a plain loop the compiler vectorises.
    const auto* got_values = reinterpret_cast<const float*>(got.data());
    const auto* expected_values = reinterpret_cast<const float*>(expected.data());
    for (std::size_t element = 0; element < elements; ++element) {
      float difference = std::fabs(got_values[element] - expected_values[element]);
      float allowed = static_cast<float>(tolerance.absolute + tolerance.relative * std::fabs(expected_values[element]));
      if (!(difference <= allowed)) {  // NaN fails
        return fmt::format("{}: got {}, expected {}", where(element), got_values[element], expected_values[element]);
      }
    }
    return std::nullopt;
  }
  bool integral = dtype != Dtype::f64;
  for (std::size_t element = 0; element < elements; ++element) {
    const std::byte* got_element = got.data() + element * size;
    const std::byte* expected_element = expected.data() + element * size;
    std::optional<double> got_value = load_number(dtype, got_element);
    std::optional<double> expected_value = load_number(dtype, expected_element);
    if (!got_value || integral) {
      if (std::memcmp(got_element, expected_element, size) != 0) {
        return fmt::format("{}: output differs from the reference", where(element));
      }
      continue;
    }
    double difference = std::fabs(*got_value - *expected_value);
    bool close = difference <= tolerance.absolute + tolerance.relative * std::fabs(*expected_value);
    if (!close || std::isnan(*got_value)) {
      return fmt::format("{}: got {}, expected {}", where(element), *got_value, *expected_value);
    }
  }
  return std::nullopt;
}

std::optional<std::string> compare_batch_in_parallel(Dtype dtype, const Tolerance& tolerance, const BatchRange& batch,
                                                     std::int64_t item_elements, std::span<const std::byte> got,
                                                     std::span<const std::byte> expected, int threads) {
  const std::size_t item_bytes = static_cast<std::size_t>(std::max<std::int64_t>(item_elements, 1)) * dtype_size(dtype);
  if (got.size() != expected.size() || batch.item_count < 1 ||
      got.size() != static_cast<std::size_t>(batch.item_count) * item_bytes) {
    return compare_batch(dtype, tolerance, batch, item_elements, got, expected);  // its message for a size mismatch
  }
  // Each stretch's first mismatch, by the stretch's first item; the earliest stretch's is the batch's first.
  std::map<std::size_t, std::string> mismatches;
  std::mutex mutex;
  run_in_parallel(static_cast<std::size_t>(batch.item_count), threads, 1, [&](std::size_t begin, std::size_t end) {
    const BatchRange part{batch.index, batch.first_item + static_cast<std::int64_t>(begin),
                          static_cast<std::int64_t>(end - begin)};
    std::optional<std::string> mismatch =
        compare_batch(dtype, tolerance, part, item_elements, got.subspan(begin * item_bytes, (end - begin) * item_bytes),
                      expected.subspan(begin * item_bytes, (end - begin) * item_bytes));
    if (!mismatch) return;
    std::lock_guard lock(mutex);
    mismatches.emplace(begin, std::move(*mismatch));
  });
  if (!mismatches.empty()) return mismatches.begin()->second;
  return std::nullopt;
}

}  // namespace kernlathe::loader
