#pragma once
// Large host buffers made resident at once, on several threads. A streamed spec's reference outputs are as large
// as its dataset (512 MiB-1 GiB for the shipped examples); zero-filling them on one thread, page fault by page
// fault, took 0.29-0.61 s of the start-up on the H200 host ("open the stream's items"). Here the buffer is an
// anonymous mapping aligned to 2 MiB and advised for transparent huge pages (one fault per 2 MiB where the kernel
// allows it), and its pages are touched by several threads, each on its own stretch of whole 2 MiB regions.
// No CUDA here: tested on any machine.

#include <cstddef>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace kernlathe::loader {

// [begin, end) stretches splitting [0, count) into at most `parts` (at least 1) non-empty pieces, in order, each
// starting at a multiple of `alignment` (at least 1): so two threads never touch the same 2 MiB page, or one item.
std::vector<std::pair<std::size_t, std::size_t>> split_range(std::size_t count, int parts, std::size_t alignment);

// The threads a large host-side job uses: the cores there are, at most 16 (beyond that the page faults and copies
// of these jobs contend for memory rather than cores), at least 1.
int host_job_threads();

// Runs job(begin, end) for every stretch of split_range(count, parts, alignment), one thread each (the first on the
// calling thread), and waits for all. The first exception a job throws is rethrown after all have ended.
void run_in_parallel(std::size_t count, int parts, std::size_t alignment,
                     const std::function<void(std::size_t, std::size_t)>& job);

class ResidentBuffer {
 public:
  static constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

  ResidentBuffer() = default;
  // `bytes` zero bytes, every page already faulted in by `threads` threads. Throws TunerError when the memory
  // cannot be mapped.
  ResidentBuffer(std::size_t bytes, int threads);
  ~ResidentBuffer();
  ResidentBuffer(ResidentBuffer&& other) noexcept;
  ResidentBuffer& operator=(ResidentBuffer&& other) noexcept;
  ResidentBuffer(const ResidentBuffer&) = delete;
  ResidentBuffer& operator=(const ResidentBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  std::span<std::byte> span() { return {data_, bytes_}; }
  std::span<const std::byte> span() const { return {data_, bytes_}; }

 private:
  void release();
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t mapped_bytes_ = 0;  // whole huge pages
};

}  // namespace kernlathe::loader
