#pragma once
// The run's queue of proposed configurations between the strategy and the lanes: each waits here while the compile
// pool builds it. A lane takes the first one whose compilation is done, in the order they were proposed as long as
// that order's front is ready. A configuration that compiles slowly (hundreds of milliseconds where most take tens)
// then holds up no lane: taken strictly in order, it left every GPU of a run idle behind it (two H200s, conv3x3 with
// the default strategy: gaps of 0.1-0.2 s with both GPUs waiting, 0.853 of linear scaling).

#include <chrono>
#include <cstddef>
#include <deque>
#include <future>
#include <optional>

#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/space/space.h"

namespace kernlathe {

struct QueuedConfiguration {
  Configuration configuration;
  std::optional<std::future<CompileResult>> compiled;  // none where nothing is compiled (a replay)
};

class CompileQueue {
 public:
  void push(QueuedConfiguration item);
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }

  // The first configuration, in queue order, whose compilation is done or which needs none; nullopt when none is.
  std::optional<QueuedConfiguration> take_ready();
  // The first one ready, waiting for whichever compilation finishes first when none is. The queue must not be empty.
  QueuedConfiguration take_next(std::chrono::milliseconds poll = std::chrono::milliseconds(2));

 private:
  std::deque<QueuedConfiguration> items_;
};

}  // namespace kernlathe
