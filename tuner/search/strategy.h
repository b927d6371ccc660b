#pragma once
// Ask/tell search: a strategy proposes configurations and is told every result, failures included. When to
// stop (budget, time, target) is decided elsewhere (stop_condition.h), so any strategy combines with any stop
// condition, and a strategy runs the same against the GPU or a recorded CSV (replay.h).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/space/space.h"

namespace kernlathe {

// What a strategy spent on updating its model (a fit of the surrogate's forest), for the run's profile; zero for
// strategies without one.
struct ModelUpdates {
  std::uint64_t count = 0;
  double seconds = 0;
};

class Strategy {
 public:
  virtual ~Strategy();
  virtual std::string name() const = 0;
  // Up to count valid configurations never proposed before; empty when the strategy has nothing left.
  virtual std::vector<Configuration> ask(std::size_t count) = 0;
  // Every result of a proposed configuration, whatever its status.
  virtual void tell(const Evaluation& evaluation) = 0;
  // The model updates so far (their time is part of the ask or tell that made them).
  virtual ModelUpdates model_updates() const { return {}; }
};

// "exhaustive": valid configurations in index order 0, 1, ..., valid_count() - 1.
// "random": uniformly without replacement, the same order for the same seed; O(1) memory whatever the size.
// The strategy keeps a reference to space, which must outlive it. Unknown name -> InputError listing the names.
// "portfolio:model_share=X,local_learns_from_model=0" is the portfolio with other settings (for benchmarks).
std::unique_ptr<Strategy> make_strategy(std::string_view name, const SpaceEnumerator& space, std::uint64_t seed);
// InputError when make_strategy would refuse the name (an unknown strategy, settings of one that takes none, a bad
// portfolio setting): lets a command refuse it before it opens a GPU.
void check_strategy_name(std::string_view full_name);
std::vector<std::string> strategy_names();
// What `tune run` and `tune tune` use when no --strategy is given: chosen by cross-validation (README).
std::string default_strategy_name();

}  // namespace kernlathe
