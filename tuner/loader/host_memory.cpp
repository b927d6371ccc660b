#include "tuner/loader/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe::loader {

std::vector<std::pair<std::size_t, std::size_t>> split_range(std::size_t count, int parts, std::size_t alignment) {
  std::vector<std::pair<std::size_t, std::size_t>> stretches;
  if (count == 0) return stretches;
  alignment = std::max<std::size_t>(alignment, 1);
  const std::size_t units = (count + alignment - 1) / alignment;
  const std::size_t pieces = std::min<std::size_t>(static_cast<std::size_t>(std::max(parts, 1)), units);
  std::size_t begin = 0;
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    // The first (units % pieces) pieces take one unit more.
    const std::size_t piece_units = units / pieces + (piece < units % pieces ? 1 : 0);
    const std::size_t end = std::min(count, begin + piece_units * alignment);
    stretches.emplace_back(begin, end);
    begin = end;
  }
  return stretches;
}

int host_job_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(cores, 1, 16));
}

void run_in_parallel(std::size_t count, int parts, std::size_t alignment,
                     const std::function<void(std::size_t, std::size_t)>& job) {
  const std::vector<std::pair<std::size_t, std::size_t>> stretches = split_range(count, parts, alignment);
  if (stretches.empty()) return;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto run = [&](std::size_t index) {
    try {
      job(stretches[index].first, stretches[index].second);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(stretches.size() - 1);
  for (std::size_t index = 1; index < stretches.size(); ++index) threads.emplace_back(run, index);
  run(0);
  for (std::thread& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

ResidentBuffer::ResidentBuffer(std::size_t bytes, int threads) : bytes_(bytes) {
  if (bytes == 0) return;
  mapped_bytes_ = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  // One huge page more than needed, so that a 2 MiB-aligned stretch fits; the ends are given back.
  const std::size_t reserved = mapped_bytes_ + huge_page_bytes;
  void* mapping = ::mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    throw TunerError(fmt::format("cannot map {} bytes of host memory: {}", reserved, std::strerror(errno)));
  }
  const auto start = reinterpret_cast<std::uintptr_t>(mapping);
  const std::uintptr_t aligned = (start + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  if (aligned > start) ::munmap(mapping, aligned - start);
  const std::uintptr_t tail = aligned + mapped_bytes_;
  if (start + reserved > tail) ::munmap(reinterpret_cast<void*>(tail), start + reserved - tail);
  data_ = reinterpret_cast<std::byte*>(aligned);
  // Advice only: where huge pages are off, 4 KiB pages serve as well, one fault each.
  ::madvise(data_, mapped_bytes_, MADV_HUGEPAGE);
  // A write per 4 KiB page faults it in (a zero page); the mapping's contents are zero already.
  run_in_parallel(mapped_bytes_, threads, huge_page_bytes, [this](std::size_t begin, std::size_t end) {
    for (std::size_t offset = begin; offset < end; offset += 4096) data_[offset] = std::byte{0};
  });
}

ResidentBuffer::~ResidentBuffer() { release(); }

ResidentBuffer::ResidentBuffer(ResidentBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}

ResidentBuffer& ResidentBuffer::operator=(ResidentBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
  }
  return *this;
}

void ResidentBuffer::release() {
  if (data_ != nullptr) ::munmap(data_, mapped_bytes_);
  data_ = nullptr;
  bytes_ = mapped_bytes_ = 0;
}

}  // namespace kernlathe::loader
