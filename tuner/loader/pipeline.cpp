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

PipelineResult run_pipeline(const BatchSource& source, std::size_t output_item_bytes, DeviceOperations& device,
                            const LoaderConfiguration& loader, const BatchCheck& check) {
  if (loader.workers < 1 || loader.prefetch < 1 || loader.streams < 1 || loader.batch < 1 || loader.chunk_bytes < 0 ||
      loader.read_piece_bytes < 0) {
    throw TunerError(fmt::format("loader settings out of range ({}): workers, prefetch, streams and batch must be at "
                                 "least 1, chunk and read piece at least 0",
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
  const std::int64_t piece_items =
      loader.read_piece_bytes == 0
          ? loader.batch
          : std::clamp<std::int64_t>(loader.read_piece_bytes / static_cast<std::int64_t>(std::max<std::size_t>(item_bytes, 1)),
                                     1, loader.batch);
  auto pieces_of = [&](std::int64_t index) { return (range_of(index).item_count + piece_items - 1) / piece_items; };

  device.enter_thread();
  device.prepare(loader.prefetch, loader.streams, static_cast<std::size_t>(loader.batch) * item_bytes,
                 static_cast<std::size_t>(loader.batch) * output_item_bytes, loader.pinned);

  PipelineResult result;
  result.completions.assign(static_cast<std::size_t>(batch_count), 0);
  std::vector<BatchTimes> times(static_cast<std::size_t>(batch_count));

  // One mutex, but a condition per kind of waiter: a piece read must not wake every idle worker, and a freed slot
  // must not wake the submitter.
  std::mutex mutex;
  std::condition_variable work_available, batch_filled, batch_submitted;
  auto wake_everyone = [&] {
    work_available.notify_all();
    batch_filled.notify_all();
    batch_submitted.notify_all();
  };
  // A stack: the slot freed last is filled next, while its input and output lines are still in the host's
  // last-level cache, so the device's copies find them there instead of in DRAM; a slot the pipeline does not need
  // stays cold. On the H200 host, 512 MiB copied in while 512 MiB went out ran in at 51.3-51.4 GB/s cycling
  // through an 8 MiB host region, at 47.4-50.2 GB/s from and to 512 MiB buffers (07:44 and 08:03 UTC).
  std::vector<int> free_slots;
  for (int slot = loader.prefetch - 1; slot >= 0; --slot) free_slots.push_back(slot);
  bool started = false;
  // Pieces are handed out in order: piece `next_piece` of batch `reading_batch`, which holds `reading_slot`.
  std::int64_t reading_batch = 0, next_piece = 0;
  int reading_slot = -1;
  std::vector<std::int64_t> pieces_left(static_cast<std::size_t>(batch_count));
  for (std::int64_t index = 0; index < batch_count; ++index) pieces_left[static_cast<std::size_t>(index)] = pieces_of(index);
  std::map<std::int64_t, int> filled;                      // batch -> slot, read and waiting to be submitted
  std::deque<std::pair<std::int64_t, int>> submitted;      // in submission order
  std::deque<std::pair<std::int64_t, int>> to_check;       // completed on the device, output not yet checked
  bool stopping = false, submitting_done = false, completer_done = false;
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
    wake_everyone();
  };

  // With the mutex held: the batch is done (checked, or needing no check) and its slot takes the next read.
  auto finish = [&](std::int64_t index, int slot) {
    ++result.completions[static_cast<std::size_t>(index)];
    free_slots.push_back(slot);
    --busy_slots;
    work_available.notify_all();
  };

  // A worker checks finished batches first (that frees their slots), then reads pieces. Checks on the workers
  // rather than on the completer: comparing a batch reads its output and its reference, 1 GiB a pass for the
  // transfer-bound example, which one thread did in 230-270 ms against a 13 ms pass (H200 host, 07:44 UTC; ~50 ms
  // on the workers at 08:03).
  auto worker = [&] {
    while (true) {
      int slot = 0;
      BatchRange piece;
      std::size_t offset_bytes = 0;
      bool checking = false;
      {
        std::unique_lock lock(mutex);
        // A batch already begun has its slot; starting the next one needs a free slot.
        work_available.wait(lock, [&] {
          return stopping || !to_check.empty() || (reading_batch >= batch_count && (completer_done || !check)) ||
                 (reading_batch < batch_count && started && (next_piece > 0 || !free_slots.empty()));
        });
        if (stopping) return;
        if (!to_check.empty()) {
          std::tie(piece.index, slot) = to_check.front();
          to_check.pop_front();
          checking = true;
        } else if (reading_batch >= batch_count) {
          return;
        } else {
          if (next_piece == 0) {
            reading_slot = free_slots.back();
            free_slots.pop_back();
            result.max_in_flight = std::max(result.max_in_flight, ++busy_slots);
          }
          BatchRange whole = range_of(reading_batch);
          std::int64_t first = next_piece * piece_items;
          piece.index = reading_batch;
          piece.first_item = whole.first_item + first;
          piece.item_count = std::min(piece_items, whole.item_count - first);
          offset_bytes = static_cast<std::size_t>(first) * item_bytes;
          slot = reading_slot;
          if (++next_piece == pieces_of(reading_batch)) {
            ++reading_batch;
            next_piece = 0;
            // The next batch's first piece needs a free slot: another waiting worker may take one now.
            if (!free_slots.empty()) work_available.notify_one();
          } else {
            work_available.notify_one();  // more pieces of this batch for another worker
          }
        }
      }
      if (checking) {
        BatchRange range = range_of(piece.index);
        std::optional<std::string> wrong;
        try {
          wrong = check(range, device.host_output(slot).first(static_cast<std::size_t>(range.item_count) * output_item_bytes));
        } catch (const std::exception& error) {
          wrong = fmt::format("batch {}: the check failed: {}", range.index, error.what());
        }
        if (wrong) fail(PipelineFailure::wrong_result, *wrong);
        std::lock_guard lock(mutex);
        finish(range.index, slot);
        continue;
      }
      Clock::time_point start = Clock::now();
      try {
        source.read(piece, device.host_input(slot).subspan(offset_bytes, static_cast<std::size_t>(piece.item_count) * item_bytes));
      } catch (const std::exception& error) {
        fail(PipelineFailure::loader, fmt::format("host worker failed on batch {}: {}", piece.index, error.what()));
        return;
      }
      double read_ms = milliseconds_since(start);
      std::lock_guard lock(mutex);
      host_read_ms += read_ms;
      if (--pieces_left[static_cast<std::size_t>(piece.index)] == 0) {
        filled[piece.index] = slot;
        batch_filled.notify_one();
      }
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
        batch_submitted.wait(lock, [&] { return !submitted.empty() || submitting_done; });
        if (submitted.empty()) {
          completer_done = true;
          work_available.notify_all();
          return;
        }
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
        wake_everyone();
        continue;
      }
      std::lock_guard lock(mutex);
      if (!skip_check && check) {
        to_check.emplace_back(index, slot);
        work_available.notify_one();
      } else {
        finish(index, slot);
      }
    }
  };

  // Threads are made before the clock starts: a loader keeps its workers between passes, so creating them is
  // set-up (like allocating the pinned slots), not part of moving the data.
  std::vector<std::thread> workers;
  for (int index = 0; index < loader.workers; ++index) workers.emplace_back(worker);
  std::thread completion_thread(completer);
  device.start_clock();
  Clock::time_point start = Clock::now();
  {
    std::lock_guard lock(mutex);
    started = true;
    work_available.notify_all();
  }

  for (std::int64_t index = 0; index < batch_count; ++index) {
    int slot = 0;
    {
      std::unique_lock lock(mutex);
      batch_filled.wait(lock, [&] { return stopping || filled.count(index) != 0; });
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
      wake_everyone();
      break;
    }
    std::lock_guard lock(mutex);
    submitted.emplace_back(index, slot);
    batch_submitted.notify_one();
  }
  {
    std::lock_guard lock(mutex);
    submitting_done = true;
    batch_submitted.notify_all();
  }
  completion_thread.join();
  {
    // Workers blocked on a free slot must see that no more will come.
    std::lock_guard lock(mutex);
    stopping = stopping || reading_batch < batch_count;
    wake_everyone();
  }
  for (std::thread& thread : workers) thread.join();
  // After the workers: they check the last batches.
  double end_to_end_ms = milliseconds_since(start);
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
