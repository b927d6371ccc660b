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

namespace tuner::loader {
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

std::string LoaderConfiguration::to_string() const {
  return fmt::format("pinned={} workers={} prefetch={} streams={} batch={} chunk={}", pinned ? 1 : 0, workers, prefetch,
                     streams, batch, chunk_bytes);
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

PipelineResult run_pipeline(const BatchSource& source, std::size_t output_item_bytes, DeviceOperations& device,
                            const LoaderConfiguration& loader, const BatchCheck& check) {
  if (loader.workers < 1 || loader.prefetch < 1 || loader.streams < 1 || loader.batch < 1 || loader.chunk_bytes < 0) {
    throw TunerError(fmt::format("loader settings out of range ({}): workers, prefetch, streams and batch must be at "
                                 "least 1, chunk at least 0",
                                 loader.to_string()));
  }
  const std::int64_t items = source.item_count();
  const std::int64_t batch_count = (items + loader.batch - 1) / loader.batch;
  const std::size_t item_bytes = source.item_bytes();
  auto range_of = [&](std::int64_t index) {
    BatchRange range;
    range.index = index;
    range.first_item = index * loader.batch;
    range.item_count = std::min(loader.batch, items - range.first_item);
    return range;
  };

  device.enter_thread();
  device.prepare(loader.prefetch, loader.streams, static_cast<std::size_t>(loader.batch) * item_bytes,
                 static_cast<std::size_t>(loader.batch) * output_item_bytes, loader.pinned);

  PipelineResult result;
  result.completions.assign(static_cast<std::size_t>(batch_count), 0);
  std::vector<BatchTimes> times(static_cast<std::size_t>(batch_count));

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<int> free_slots;
  for (int slot = 0; slot < loader.prefetch; ++slot) free_slots.push_back(slot);
  std::int64_t next_to_read = 0;
  std::map<std::int64_t, int> filled;                      // batch -> slot, read and waiting to be submitted
  std::deque<std::pair<std::int64_t, int>> submitted;      // in submission order
  bool stopping = false, submitting_done = false;
  int busy_slots = 0;
  double host_read_ms = 0;
  std::exception_ptr device_exception;

  // The first failure wins; later ones are consequences of stopping.
  auto fail = [&](PipelineFailure failure, std::string message) {
    std::lock_guard lock(mutex);
    if (!stopping) {
      result.failure = failure;
      result.message = std::move(message);
    }
    stopping = true;
    changed.notify_all();
  };

  auto worker = [&] {
    while (true) {
      int slot = 0;
      std::int64_t index = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stopping || next_to_read >= batch_count || !free_slots.empty(); });
        if (stopping || next_to_read >= batch_count) return;
        slot = free_slots.front();
        free_slots.pop_front();
        index = next_to_read++;
        result.max_in_flight = std::max(result.max_in_flight, ++busy_slots);
      }
      BatchRange range = range_of(index);
      Clock::time_point start = Clock::now();
      try {
        source.read(range, device.host_input(slot).first(static_cast<std::size_t>(range.item_count) * item_bytes));
      } catch (const std::exception& error) {
        fail(PipelineFailure::loader, fmt::format("host worker failed on batch {}: {}", index, error.what()));
        return;
      }
      std::lock_guard lock(mutex);
      host_read_ms += milliseconds_since(start);
      filled[index] = slot;
      changed.notify_all();
    }
  };

  auto completer = [&] {
    device.enter_thread();
    while (true) {
      std::int64_t index = 0;
      int slot = 0;
      bool skip_check = false;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !submitted.empty() || submitting_done; });
        if (submitted.empty()) return;
        std::tie(index, slot) = submitted.front();
        submitted.pop_front();
        skip_check = stopping;
      }
      // Device work is always waited for, even when stopping: its buffers must not be reused or freed under it.
      try {
        times[static_cast<std::size_t>(index)] = device.complete(slot);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!device_exception) device_exception = std::current_exception();
        stopping = true;
        changed.notify_all();
        continue;
      }
      if (!skip_check && check) {
        BatchRange range = range_of(index);
        std::optional<std::string> wrong;
        try {
          wrong = check(range, device.host_output(slot).first(static_cast<std::size_t>(range.item_count) * output_item_bytes));
        } catch (const std::exception& error) {
          wrong = fmt::format("batch {}: the check failed: {}", index, error.what());
        }
        if (wrong) fail(PipelineFailure::wrong_result, *wrong);
      }
      std::lock_guard lock(mutex);
      ++result.completions[static_cast<std::size_t>(index)];
      free_slots.push_back(slot);
      --busy_slots;
      changed.notify_all();
    }
  };

  device.start_clock();
  Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (int index = 0; index < loader.workers; ++index) workers.emplace_back(worker);
  std::thread completion_thread(completer);

  for (std::int64_t index = 0; index < batch_count; ++index) {
    int slot = 0;
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return stopping || filled.count(index) != 0; });
      if (stopping) break;
      slot = filled[index];
      filled.erase(index);
    }
    try {
      device.submit(slot, static_cast<int>(index % loader.streams), range_of(index),
                    static_cast<std::size_t>(loader.chunk_bytes));
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!device_exception) device_exception = std::current_exception();
      stopping = true;
      changed.notify_all();
      break;
    }
    std::lock_guard lock(mutex);
    submitted.emplace_back(index, slot);
    changed.notify_all();
  }
  {
    std::lock_guard lock(mutex);
    submitting_done = true;
    changed.notify_all();
  }
  completion_thread.join();
  double end_to_end_ms = milliseconds_since(start);
  {
    // Workers blocked on a free slot must see that no more will come.
    std::lock_guard lock(mutex);
    stopping = stopping || next_to_read < batch_count;
    changed.notify_all();
  }
  for (std::thread& thread : workers) thread.join();
  if (device_exception) std::rethrow_exception(device_exception);

  if (result.ok()) {
    for (std::int64_t index = 0; index < batch_count; ++index) {
      int count = result.completions[static_cast<std::size_t>(index)];
      if (count != 1) {
        result.failure = PipelineFailure::wrong_result;
        result.message = count == 0 ? fmt::format("batch {} never completed", index)
                                    : fmt::format("batch {} completed {} times", index, count);
        break;
      }
    }
  }
  result.breakdown = summarise_stages(times, end_to_end_ms, host_read_ms, items,
                                      items * static_cast<std::int64_t>(item_bytes),
                                      items * static_cast<std::int64_t>(output_item_bytes));
  return result;
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

}  // namespace tuner::loader
