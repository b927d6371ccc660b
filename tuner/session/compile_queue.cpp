#include "tuner/session/compile_queue.h"

#include <stdexcept>

namespace kernlathe {

namespace {

bool is_ready(const QueuedConfiguration& item) {
  return !item.compiled || item.compiled->wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

void CompileQueue::push(QueuedConfiguration item) { items_.push_back(std::move(item)); }

std::optional<QueuedConfiguration> CompileQueue::take_ready() {
  for (auto item = items_.begin(); item != items_.end(); ++item) {
    if (!is_ready(*item)) continue;
    QueuedConfiguration taken = std::move(*item);
    items_.erase(item);
    return taken;
  }
  return std::nullopt;
}

QueuedConfiguration CompileQueue::take_next(std::chrono::milliseconds poll) {
  if (items_.empty()) throw std::logic_error("CompileQueue::take_next on an empty queue");
  while (true) {
    if (std::optional<QueuedConfiguration> item = take_ready()) return std::move(*item);
    // Nothing is ready, so the front has a compilation in flight: sleep on it, then look at every one again.
    items_.front().compiled->wait_for(poll);
  }
}

}  // namespace kernlathe
