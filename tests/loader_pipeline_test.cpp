// Scheduling and bookkeeping of the streaming pipeline with a fake device: every batch exactly once, the in-flight
// limit, failure of a host worker, a corrupted batch, and the stage-breakdown arithmetic.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "tuner/loader/pipeline.h"

using namespace kernlathe;
using namespace kernlathe::loader;

namespace {

// Items of one int32 each, holding their own index; the "kernel" adds 1000.
class CountingSource : public BatchSource {
 public:
  explicit CountingSource(std::int64_t items, std::int64_t failing_batch = -1) : items_(items), failing_batch_(failing_batch) {}
  std::int64_t item_count() const override { return items_; }
  std::size_t item_bytes() const override { return sizeof(std::int32_t); }
  void read(const BatchRange& batch, std::span<std::byte> destination) const override {
    if (batch.index == failing_batch_) throw TunerError("disk on fire");
    reads_.fetch_add(1);
    for (std::int64_t offset = 0; offset < batch.item_count; ++offset) {
      auto value = static_cast<std::int32_t>(batch.first_item + offset);
      std::memcpy(destination.data() + offset * 4, &value, 4);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  mutable std::atomic<int> reads_{0};

 private:
  std::int64_t items_;
  std::int64_t failing_batch_;
};

// Runs the "device work" synchronously at complete(), after a delay, and records what the pipeline did.
class FakeDevice : public DeviceOperations {
 public:
  void prepare(int slots, int streams, std::size_t input_bytes, std::size_t output_bytes, bool pinned) override {
    slots_.assign(static_cast<std::size_t>(slots), {});
    for (Slot& slot : slots_) {
      slot.input.resize(input_bytes);
      slot.output.resize(output_bytes);
    }
    prepared_streams = streams;
    prepared_pinned = pinned;
  }
  std::span<std::byte> host_input(int slot) override { return slots_.at(static_cast<std::size_t>(slot)).input; }
  std::span<const std::byte> host_output(int slot) override { return slots_.at(static_cast<std::size_t>(slot)).output; }
  void start_clock() override { clock_ = 0; }
  void submit(int slot, int stream, const BatchRange& batch, std::size_t) override {
    std::lock_guard lock(mutex_);
    Slot& state = slots_.at(static_cast<std::size_t>(slot));
    EXPECT_FALSE(state.submitted) << "slot " << slot << " submitted twice without completing";
    state.submitted = true;
    state.batch = batch;
    streams_used.insert(stream);
    slots_used.insert(slot);
    submitted_batches.push_back(batch.index);
    if (batch.index == fail_submit_batch) throw TunerError("driver says no");
  }
  BatchTimes complete(int slot) override {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    std::lock_guard lock(mutex_);
    Slot& state = slots_.at(static_cast<std::size_t>(slot));
    EXPECT_TRUE(state.submitted);
    state.submitted = false;
    for (std::int64_t offset = 0; offset < state.batch.item_count; ++offset) {
      std::int32_t value = 0;
      std::memcpy(&value, state.input.data() + offset * 4, 4);
      value += 1000;
      if (state.batch.index == corrupt_batch && offset == 1) value = -7;
      std::memcpy(state.output.data() + offset * 4, &value, 4);
    }
    BatchTimes times{clock_, clock_ + 1, clock_ + 3, clock_ + 4};
    clock_ += 4;
    return times;
  }

  std::int64_t corrupt_batch = -1;
  std::int64_t fail_submit_batch = -1;
  int prepared_streams = 0;
  bool prepared_pinned = false;
  std::set<int> streams_used;
  std::set<int> slots_used;
  std::vector<std::int64_t> submitted_batches;

 private:
  struct Slot {
    std::vector<std::byte> input, output;
    bool submitted = false;
    BatchRange batch;
  };
  std::mutex mutex_;
  std::vector<Slot> slots_;
  double clock_ = 0;
};

// Checks that every output item is its index + 1000.
std::optional<std::string> plus_thousand(const BatchRange& batch, std::span<const std::byte> output) {
  for (std::int64_t offset = 0; offset < batch.item_count; ++offset) {
    std::int32_t value = 0;
    std::memcpy(&value, output.data() + offset * 4, 4);
    if (value != batch.first_item + offset + 1000) return "batch " + std::to_string(batch.index) + " is wrong";
  }
  return std::nullopt;
}

LoaderConfiguration settings(int workers, int prefetch, int streams, std::int64_t batch) {
  LoaderConfiguration loader;
  loader.workers = workers;
  loader.prefetch = prefetch;
  loader.streams = streams;
  loader.batch = batch;
  loader.pinned = true;
  return loader;
}

TEST(Pipeline, EveryBatchExactlyOnceInOrderAndChecked) {
  CountingSource source(103);  // 103 items in batches of 4: 26 batches, the last of 3 items
  FakeDevice device;
  std::atomic<int> checked_items{0};
  PipelineResult result = run_pipeline(source, 4, device, settings(3, 4, 2, 4), [&](const BatchRange& batch, auto output) {
    checked_items += static_cast<int>(batch.item_count);
    return plus_thousand(batch, output);
  });
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(checked_items.load(), 103);
  EXPECT_EQ(source.reads_.load(), 26);
  ASSERT_EQ(result.completions.size(), 26u);
  for (int count : result.completions) EXPECT_EQ(count, 1);
  std::vector<std::int64_t> expected(26);
  for (int index = 0; index < 26; ++index) expected[static_cast<std::size_t>(index)] = index;
  EXPECT_EQ(device.submitted_batches, expected);  // submitted in batch order whatever order workers finish in
  EXPECT_EQ(device.streams_used, (std::set<int>{0, 1}));
  EXPECT_EQ(device.prepared_streams, 2);
  EXPECT_TRUE(device.prepared_pinned);
  EXPECT_EQ(result.breakdown.items, 103);
  EXPECT_EQ(result.breakdown.batches, 26);
  EXPECT_EQ(result.breakdown.input_bytes, 103 * 4);
}

TEST(Pipeline, InFlightNeverExceedsPrefetchAndReachesIt) {
  CountingSource source(64);
  FakeDevice device;
  PipelineResult result = run_pipeline(source, 4, device, settings(4, 3, 1, 2), plus_thousand);
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_LE(result.max_in_flight, 3);
  EXPECT_EQ(result.max_in_flight, 3);  // four workers and a slow device fill every slot
}

TEST(Pipeline, NaiveSettingsKeepOneBatchInFlight) {
  CountingSource source(10);
  FakeDevice device;
  PipelineResult result = run_pipeline(source, 4, device, LoaderConfiguration::naive(1), plus_thousand);
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(result.max_in_flight, 1);
  EXPECT_FALSE(device.prepared_pinned);
  EXPECT_EQ(device.streams_used, (std::set<int>{0}));
}

// The reference pass: the naive schedule, one batch in flight on one stream, on pinned staging.
TEST(Pipeline, ReferenceSettingsAreTheNaiveScheduleOnPinnedStaging) {
  const LoaderConfiguration reference = LoaderConfiguration::reference(16);
  EXPECT_EQ(reference.to_string(), "pinned=1 workers=1 prefetch=1 streams=1 batch=16 chunk=0");
  CountingSource source(48);
  FakeDevice device;
  PipelineResult result = run_pipeline(source, 4, device, reference, plus_thousand);
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(result.max_in_flight, 1);
  EXPECT_TRUE(device.prepared_pinned);
  EXPECT_EQ(device.streams_used, (std::set<int>{0}));
  EXPECT_EQ(result.completions, (std::vector<int>{1, 1, 1}));
}

TEST(Pipeline, FailingWorkerStopsThePipelineAndNamesTheBatch) {
  CountingSource source(200, /*failing_batch=*/7);
  FakeDevice device;
  PipelineResult result = run_pipeline(source, 4, device, settings(2, 4, 2, 2), plus_thousand);
  EXPECT_EQ(result.failure, PipelineFailure::loader);
  EXPECT_NE(result.message.find("batch 7"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("disk on fire"), std::string::npos) << result.message;
  // Stopped early: far fewer than the 100 batches were read, and batch 7 never completed.
  EXPECT_LT(source.reads_.load(), 20);
  EXPECT_EQ(result.completions[7], 0);
}

TEST(Pipeline, CorruptedBatchIsAWrongResultNamingTheBatch) {
  CountingSource source(40);
  FakeDevice device;
  device.corrupt_batch = 5;
  PipelineResult result = run_pipeline(source, 4, device, settings(2, 2, 2, 4), plus_thousand);
  EXPECT_EQ(result.failure, PipelineFailure::wrong_result);
  EXPECT_EQ(result.message, "batch 5 is wrong");
}

TEST(Pipeline, DeviceErrorIsRethrownAfterStopping) {
  CountingSource source(40);
  FakeDevice device;
  device.fail_submit_batch = 3;
  EXPECT_THROW(run_pipeline(source, 4, device, settings(2, 2, 1, 4), plus_thousand), TunerError);
}

TEST(Pipeline, TimingPassWithoutCheckStillCountsEveryBatch) {
  CountingSource source(12);
  FakeDevice device;
  PipelineResult result = run_pipeline(source, 4, device, settings(1, 2, 1, 3), nullptr);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.completions, (std::vector<int>{1, 1, 1, 1}));
}

// Records every read (its range and thread), sleeping `read_sleep` per read so several workers overlap.
class RecordingSource : public BatchSource {
 public:
  RecordingSource(std::int64_t items, std::chrono::microseconds read_sleep, std::int64_t failing_item = -1)
      : items_(items), read_sleep_(read_sleep), failing_item_(failing_item) {}
  std::int64_t item_count() const override { return items_; }
  std::size_t item_bytes() const override { return sizeof(std::int32_t); }
  void read(const BatchRange& batch, std::span<std::byte> destination) const override {
    EXPECT_EQ(destination.size(), static_cast<std::size_t>(batch.item_count) * 4);
    if (failing_item_ >= batch.first_item && failing_item_ < batch.first_item + batch.item_count) {
      throw TunerError("sector gone");
    }
    for (std::int64_t offset = 0; offset < batch.item_count; ++offset) {
      auto value = static_cast<std::int32_t>(batch.first_item + offset);
      std::memcpy(destination.data() + offset * 4, &value, 4);
    }
    std::this_thread::sleep_for(read_sleep_);
    std::lock_guard lock(mutex_);
    reads.push_back({batch, std::this_thread::get_id()});
  }
  struct Read {
    BatchRange range;
    std::thread::id thread;
  };
  mutable std::vector<Read> reads;

 private:
  std::int64_t items_;
  std::chrono::microseconds read_sleep_;
  std::int64_t failing_item_;
  mutable std::mutex mutex_;
};

TEST(Pipeline, BatchesAreReadInPiecesThatCoverEachBatchOnce) {
  RecordingSource source(46, std::chrono::microseconds(50));  // batches of 10: four full, the last of 6
  FakeDevice device;
  LoaderConfiguration loader = settings(3, 3, 2, 10);
  loader.read_piece_bytes = 13;  // three 4-byte items a piece: 3+3+3+1 per full batch, 3+3 for the last
  PipelineResult result = run_pipeline(source, 4, device, loader, plus_thousand);
  ASSERT_TRUE(result.ok()) << result.message;
  ASSERT_EQ(source.reads.size(), 4u * 4u + 2u);
  std::vector<int> times_read(46, 0);
  for (const RecordingSource::Read& read : source.reads) {
    EXPECT_LE(read.range.item_count, 3);
    // Each piece lies inside the batch it names.
    EXPECT_GE(read.range.first_item, read.range.index * 10);
    EXPECT_LE(read.range.first_item + read.range.item_count, std::min<std::int64_t>(read.range.index * 10 + 10, 46));
    for (std::int64_t item = read.range.first_item; item < read.range.first_item + read.range.item_count; ++item) {
      ++times_read[static_cast<std::size_t>(item)];
    }
  }
  EXPECT_EQ(times_read, std::vector<int>(46, 1));
  EXPECT_EQ(result.completions, std::vector<int>(5, 1));
}

TEST(Pipeline, SeveralWorkersShareTheFirstBatch) {
  // Eight pieces of 1 ms in the first batch and four workers: they split it instead of one worker reading it all
  // while the device waits.
  RecordingSource source(64, std::chrono::milliseconds(1));
  FakeDevice device;
  LoaderConfiguration loader = settings(4, 2, 1, 32);
  loader.read_piece_bytes = 16;
  PipelineResult result = run_pipeline(source, 4, device, loader, plus_thousand);
  ASSERT_TRUE(result.ok()) << result.message;
  std::set<std::thread::id> first_batch_readers;
  for (const RecordingSource::Read& read : source.reads)
    if (read.range.index == 0) first_batch_readers.insert(read.thread);
  EXPECT_GE(first_batch_readers.size(), 2u);
}

TEST(Pipeline, TheSlotFreedLastIsFilledNext) {
  // One worker reading 20 ms a batch, a device done 0.3 ms after each submit: a batch's slot is free again long
  // before the worker needs the next one, so two of the eight slots take turns (first in, first out would walk
  // through all eight and keep all of them out of the host's cache). The margin is what the completer thread has
  // to be scheduled in: with 5 ms, one run in a few hundred on a loaded 2-core machine used a third slot.
  RecordingSource source(6, std::chrono::milliseconds(20));
  FakeDevice device;
  PipelineResult result = run_pipeline(source, 4, device, settings(1, 8, 1, 1), plus_thousand);
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(device.slots_used.size(), 2u);
  EXPECT_EQ(result.max_in_flight, 2);
}

TEST(Pipeline, WorkersCheckBatchesInParallelAndTheEndWaitsForTheLastCheck) {
  // Checks of 2 ms on four workers: the checks of different batches overlap, and the pass ends only after every
  // batch was checked.
  CountingSource source(32);
  FakeDevice device;
  std::mutex mutex;
  std::set<std::thread::id> checkers;
  std::atomic<int> running{0}, most_running{0}, checked{0};
  PipelineResult result = run_pipeline(source, 4, device, settings(4, 8, 2, 2), [&](const BatchRange& batch, auto output) {
    int now = ++running;
    for (int seen = most_running.load(); now > seen && !most_running.compare_exchange_weak(seen, now);) {
    }
    {
      std::lock_guard lock(mutex);
      checkers.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --running;
    ++checked;
    return plus_thousand(batch, output);
  });
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(checked.load(), 16);
  EXPECT_EQ(result.completions, std::vector<int>(16, 1));
  EXPECT_GE(checkers.size(), 2u);
  EXPECT_GE(most_running.load(), 2);
  EXPECT_GE(result.breakdown.end_to_end_ms, 16 * 2.0 / 4);  // 16 checks of 2 ms on at most four threads
}

TEST(Pipeline, PieceZeroReadsWholeBatchesAndPiecesNeverExceedTheBatch) {
  for (std::int64_t piece_bytes : {std::int64_t{0}, std::int64_t{1} << 20}) {
    RecordingSource source(20, std::chrono::microseconds(0));
    FakeDevice device;
    LoaderConfiguration loader = settings(2, 2, 1, 8);
    loader.read_piece_bytes = piece_bytes;
    PipelineResult result = run_pipeline(source, 4, device, loader, plus_thousand);
    ASSERT_TRUE(result.ok()) << result.message;
    ASSERT_EQ(source.reads.size(), 3u) << "piece " << piece_bytes;  // 8 + 8 + 4 items
  }
}

TEST(Pipeline, FailingPieceNamesItsBatch) {
  RecordingSource source(100, std::chrono::microseconds(20), /*failing_item=*/57);
  FakeDevice device;
  LoaderConfiguration loader = settings(3, 4, 2, 10);
  loader.read_piece_bytes = 8;  // two items a piece
  PipelineResult result = run_pipeline(source, 4, device, loader, plus_thousand);
  EXPECT_EQ(result.failure, PipelineFailure::loader);
  EXPECT_NE(result.message.find("batch 5"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("sector gone"), std::string::npos) << result.message;
  EXPECT_EQ(result.completions[5], 0);
}

TEST(Pipeline, RejectsSettingsBelowOne) {
  CountingSource source(4);
  FakeDevice device;
  EXPECT_THROW(run_pipeline(source, 4, device, settings(0, 1, 1, 1), nullptr), TunerError);
  EXPECT_THROW(run_pipeline(source, 4, device, settings(1, 1, 1, 0), nullptr), TunerError);
  LoaderConfiguration negative_piece = settings(1, 1, 1, 1);
  negative_piece.read_piece_bytes = -1;
  EXPECT_THROW(run_pipeline(source, 4, device, negative_piece, nullptr), TunerError);
}

TEST(Breakdown, UnionOfOverlappingIntervals) {
  EXPECT_DOUBLE_EQ(union_length({{0, 2}, {1, 3}, {5, 6}}), 4.0);
  EXPECT_DOUBLE_EQ(union_length({{5, 6}, {0, 10}}), 10.0);
  EXPECT_DOUBLE_EQ(union_length({{0, 1}, {1, 2}}), 2.0);
  EXPECT_DOUBLE_EQ(union_length({}), 0.0);
}

TEST(Breakdown, StagesOverlappedAcrossStreamsAreNotCountedTwice) {
  // Two batches on two streams: the second's copy-in overlaps the first's kernel.
  std::vector<BatchTimes> batches = {{2, 4, 8, 9}, {0, 2, 6, 7}};
  StageBreakdown breakdown = summarise_stages(batches, 12, 5, 8, 800, 400);
  EXPECT_DOUBLE_EQ(breakdown.copy_in_ms, 4);   // [0,2) + [2,4)
  EXPECT_DOUBLE_EQ(breakdown.kernel_ms, 6);    // [2,6) u [4,8) = [2,8)
  EXPECT_DOUBLE_EQ(breakdown.copy_out_ms, 2);  // [6,7) + [8,9)
  EXPECT_DOUBLE_EQ(breakdown.gpu_busy_ms, 9);  // [0,9)
  EXPECT_DOUBLE_EQ(breakdown.gpu_idle_ms, 3);  // 12 - 9
  EXPECT_DOUBLE_EQ(breakdown.host_read_ms, 5);
  EXPECT_DOUBLE_EQ(breakdown.first_copy_in_begin_ms, 0);
  EXPECT_DOUBLE_EQ(breakdown.last_copy_out_end_ms, 9);
  EXPECT_DOUBLE_EQ(breakdown.items_per_second, 8 / 0.012);
  EXPECT_DOUBLE_EQ(breakdown.bytes_per_second, 1200 / 0.012);
  EXPECT_DOUBLE_EQ(breakdown.input_bytes_per_second, 800 / 0.012);
  EXPECT_EQ(breakdown.batches, 2);
}

TEST(Breakdown, IdleIsNeverNegative) {
  StageBreakdown breakdown = summarise_stages({{0, 1, 2, 3}}, 2.5, 0, 1, 4, 4);
  EXPECT_DOUBLE_EQ(breakdown.gpu_idle_ms, 0);
}

TEST(CompareBatch, ToleranceAndFirstMismatchLocation) {
  std::vector<float> expected = {1, 2, 3, 4, 5, 6};
  std::vector<float> got = expected;
  Tolerance tolerance{1e-3, 0};
  BatchRange batch{4, 12, 2};  // two items of 3 elements, items 12 and 13
  got[1] = 2.001f;             // within 1e-3 relative
  EXPECT_EQ(compare_batch(Dtype::f32, tolerance, batch, 3, std::as_bytes(std::span(got)), std::as_bytes(std::span(expected))),
            std::nullopt);
  got[4] = 5.1f;
  std::optional<std::string> wrong =
      compare_batch(Dtype::f32, tolerance, batch, 3, std::as_bytes(std::span(got)), std::as_bytes(std::span(expected)));
  ASSERT_TRUE(wrong);
  EXPECT_NE(wrong->find("batch 4 (item 13, element 1)"), std::string::npos) << *wrong;
  got[4] = std::nanf("");
  EXPECT_TRUE(compare_batch(Dtype::f32, Tolerance{1, 1}, batch, 3, std::as_bytes(std::span(got)),
                            std::as_bytes(std::span(expected))));
}

// The reference's own check on several threads gives what one thread gives: the first mismatch by item, wherever
// the threads' stretches fall.
TEST(CompareBatch, InParallelFindsTheFirstMismatchAsOneThreadDoes) {
  constexpr std::int64_t items = 37, item_elements = 5;
  std::vector<float> values(items * item_elements);
  for (std::size_t index = 0; index < values.size(); ++index) values[index] = static_cast<float>(index) * 0.5f;
  const BatchRange everything{0, 100, items};
  auto bytes = [](const std::vector<float>& data) { return std::as_bytes(std::span(data)); };
  EXPECT_EQ(compare_batch_in_parallel(Dtype::f32, Tolerance{}, everything, item_elements, bytes(values), bytes(values), 4),
            std::nullopt);
  // Unwritten elements (NaN) in the third and the last stretch of four: the earlier one is named.
  values[30 * item_elements + 4] = std::nanf("");
  values[12 * item_elements + 2] = std::nanf("");
  for (int threads : {1, 2, 4, 16, 64}) {
    std::optional<std::string> found =
        compare_batch_in_parallel(Dtype::f32, Tolerance{}, everything, item_elements, bytes(values), bytes(values), threads);
    ASSERT_TRUE(found) << threads;
    EXPECT_EQ(*found, *compare_batch(Dtype::f32, Tolerance{}, everything, item_elements, bytes(values), bytes(values)));
    EXPECT_NE(found->find("batch 0 (item 112, element 2)"), std::string::npos) << *found;
  }
  // A size mismatch is compare_batch's message.
  std::vector<float> shorter(values.begin(), values.end() - 1);
  std::optional<std::string> sizes =
      compare_batch_in_parallel(Dtype::f32, Tolerance{}, everything, item_elements, bytes(shorter), bytes(values), 4);
  ASSERT_TRUE(sizes);
  EXPECT_NE(sizes->find("output bytes, the reference has"), std::string::npos) << *sizes;
}

}  // namespace
