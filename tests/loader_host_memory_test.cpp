// Large host buffers made resident on several threads (tuner/loader/host_memory.h), and the split of a job into
// aligned stretches that the threads share.

#include "tuner/loader/host_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace kernlathe::loader {
namespace {

using Stretches = std::vector<std::pair<std::size_t, std::size_t>>;

TEST(SplitRange, AlignedStretchesCoverTheRangeOnceInOrder) {
  // 10 units of 4 over 3 parts: 4, 3 and 3 units; the last stretch ends at the count, not at a unit's end.
  EXPECT_EQ(split_range(38, 3, 4), (Stretches{{0, 16}, {16, 28}, {28, 38}}));
  EXPECT_EQ(split_range(12, 2, 1), (Stretches{{0, 6}, {6, 12}}));
  // Fewer units than parts: one stretch per unit, none empty.
  EXPECT_EQ(split_range(5, 8, 2), (Stretches{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(split_range(7, 1, 1000), (Stretches{{0, 7}}));
  EXPECT_TRUE(split_range(0, 4, 16).empty());
  // Parts and alignment below 1 count as 1.
  EXPECT_EQ(split_range(3, 0, 0), (Stretches{{0, 3}}));
}

TEST(RunInParallel, EveryStretchRunsOnceOnItsOwnThread) {
  std::mutex mutex;
  Stretches seen;
  std::vector<std::thread::id> threads;
  run_in_parallel(100, 4, 10, [&](std::size_t begin, std::size_t end) {
    std::lock_guard lock(mutex);
    seen.emplace_back(begin, end);
    threads.push_back(std::this_thread::get_id());
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (Stretches{{0, 30}, {30, 60}, {60, 80}, {80, 100}}));
  std::sort(threads.begin(), threads.end());
  EXPECT_EQ(std::unique(threads.begin(), threads.end()), threads.end());
  EXPECT_NE(std::find(threads.begin(), threads.end(), std::this_thread::get_id()), threads.end());
}

TEST(RunInParallel, AFailingStretchIsRethrownAfterTheOthersEnd) {
  std::atomic<int> finished{0};
  EXPECT_THROW(run_in_parallel(40, 4, 10,
                               [&](std::size_t begin, std::size_t) {
                                 if (begin == 20) throw std::runtime_error("stretch 20");
                                 ++finished;
                               }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
}

TEST(ResidentBuffer, ZeroBytesAlignedToHugePagesAndWritableToTheEnd) {
  constexpr std::size_t bytes = (std::size_t{9} << 20) + 123;  // not a whole number of pages
  ResidentBuffer buffer(bytes, 3);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), bytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % ResidentBuffer::huge_page_bytes, 0u);
  EXPECT_TRUE(std::all_of(buffer.span().begin(), buffer.span().end(), [](std::byte b) { return b == std::byte{0}; }));
  buffer.data()[0] = std::byte{1};
  buffer.data()[bytes - 1] = std::byte{2};
  ResidentBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_EQ(moved.size(), bytes);
  EXPECT_EQ(moved.data()[0], std::byte{1});
  EXPECT_EQ(moved.data()[bytes - 1], std::byte{2});
  ResidentBuffer empty(0, 4);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

}  // namespace
}  // namespace kernlathe::loader
