#pragma once
// Keeps the host's cost of launching out of a timed window. A timed sample is queued as: wait for a flag, start
// event, the launches, stop event; the flag is raised only once all of it is queued, so the GPU runs the launches
// back to back however long the host took to submit them. Without it, a sample of one launch between two events
// also times the host's call: the GPU reaches the start event and then idles until the kernel arrives (a cuBLAS
// call spends microseconds choosing its algorithm on the host before it launches anything).
//
// The wait is a stream memory operation (cuStreamWaitValue32) on a word of pinned host memory mapped into the
// device. Where the driver refuses it, the gate stays open and timing is as without it (usable() says which).
// Only a bounded number of launches may be queued behind a closed gate: the host blocks when the stream's queue
// is full, and would wait forever for a GPU that waits for the host (max_gated_launches). The same holds for a
// launch that synchronises inside (a library's first call loading its kernels, a synchronous copy): a watchdog
// raises the flag when the gate has been held longer than watchdog_ms, and fired() tells the caller that the
// sample then timed the wait and must be dropped (the timer then stops gating).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "tuner/driver/cuda_driver.h"

namespace kernlathe {

class LaunchGate {
 public:
  // Launches that may be queued behind the closed gate: the longest batch of the measurement rule
  // (launches_per_sample), which a GPU test queues behind the gate on the device. A longer batch runs ungated.
  static constexpr int max_gated_launches = 256;

  LaunchGate() = default;  // an open gate: hold() does nothing
  explicit LaunchGate(CUstream stream);  // in the current context
  ~LaunchGate();
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;
  LaunchGate(LaunchGate&&) = delete;
  LaunchGate& operator=(LaunchGate&&) = delete;

  // How long the gate may stay held before the watchdog raises the flag.
  static constexpr std::chrono::milliseconds watchdog_ms{250};

  bool usable() const { return flag_ != nullptr && !disabled_; }
  // Whether the watchdog raised the flag since the last call (the sample held behind it timed the wait); clears.
  bool fired();
  // Stops gating for good (hold() does nothing afterwards).
  void disable() { disabled_ = true; }

  // Queues the wait; what is queued after it runs once release() is called. Returns whether it holds (false:
  // the gate is unusable, and the work runs as it is queued).
  bool hold();
  // Raises the flag for the last hold(). Safe to call when not holding.
  void release();

  // Holds the gate for a scope and releases it on leaving, also when a launch throws.
  class Scope {
   public:
    Scope(LaunchGate& gate, bool wanted) : gate_(gate), holding_(wanted && gate.hold()) {}
    ~Scope() { if (holding_) gate_.release(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    bool holding() const { return holding_; }

   private:
    LaunchGate& gate_;
    bool holding_;
  };

 private:
  void raise(std::uint32_t generation);  // writes the flag
  void watch();                          // the watchdog thread

  CUstream stream_ = nullptr;
  volatile std::uint32_t* flag_ = nullptr;  // pinned, mapped host memory
  CUdeviceptr flag_on_device_ = 0;
  bool disabled_ = false;

  std::mutex mutex_;  // guards what follows, shared with the watchdog
  std::condition_variable changed_;
  std::uint32_t generation_ = 0;  // the value the last hold() waits for; the flag only grows
  bool held_ = false;
  bool fired_ = false;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point deadline_{};
  std::thread watchdog_;  // started by the first hold()
};

}  // namespace kernlathe
