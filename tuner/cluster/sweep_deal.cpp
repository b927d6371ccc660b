#include "tuner/cluster/sweep_deal.h"

#include <set>
#include <utility>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/session/workload_schedule.h"

namespace kernlathe {

SweepDeal::SweepDeal(std::vector<std::string> record_keys, const std::vector<bool>& done_before, int ranks)
    : record_keys_(std::move(record_keys)),
      phase_(record_keys_.size(), Phase::waiting),
      running_on_(record_keys_.size(), -1),
      standing_(static_cast<std::size_t>(ranks > 0 ? ranks : 0), Standing::serving),
      offered_(standing_.size(), 0) {
  if (done_before.size() != record_keys_.size())
    throw TunerError(fmt::format("sweep deal: {} done-before flags for {} problems", done_before.size(),
                                 record_keys_.size()));
  for (std::size_t problem = 0; problem < phase_.size(); ++problem)
    if (done_before[problem]) phase_[problem] = Phase::done_before;
}

void SweepDeal::offer(int rank, std::size_t free) {
  offered_.at(static_cast<std::size_t>(rank)) = standing_.at(static_cast<std::size_t>(rank)) == Standing::serving ? free : 0;
}

std::vector<RankDeal> SweepDeal::deal() {
  std::vector<RankDeal> deals;
  for (int rank = 0; rank < static_cast<int>(standing_.size()); ++rank) {
    std::size_t& offered = offered_[static_cast<std::size_t>(rank)];
    if (offered == 0 || !dealable_to(rank)) continue;
    std::vector<std::size_t> startable = startable_now();
    if (startable.empty()) continue;
    if (startable.size() > offered) startable.resize(offered);
    for (std::size_t problem : startable) {
      phase_[problem] = Phase::running;
      running_on_[problem] = rank;
    }
    offered = 0;
    deals.push_back(RankDeal{rank, std::move(startable)});
  }
  return deals;
}

void SweepDeal::finished(std::size_t problem) {
  phase_.at(problem) = Phase::finished;
  running_on_[problem] = -1;
}

void SweepDeal::no_gpu(std::size_t problem, int rank) {
  phase_.at(problem) = Phase::waiting;
  running_on_[problem] = -1;
  standing_.at(static_cast<std::size_t>(rank)) = Standing::without_gpu;
  offered_[static_cast<std::size_t>(rank)] = 0;
}

std::vector<std::size_t> SweepDeal::lose(int rank) {
  standing_.at(static_cast<std::size_t>(rank)) = Standing::lost;
  offered_[static_cast<std::size_t>(rank)] = 0;
  std::vector<std::size_t> lost;
  for (std::size_t problem = 0; problem < phase_.size(); ++problem)
    if (phase_[problem] == Phase::running && running_on_[problem] == rank) {
      phase_[problem] = Phase::lost;
      lost.push_back(problem);
    }
  return lost;
}

std::optional<int> SweepDeal::rank_of(std::size_t problem) const {
  if (phase_.at(problem) != Phase::running) return std::nullopt;
  return running_on_[problem];
}

std::vector<std::size_t> SweepDeal::startable_now() const {
  std::set<std::string> taken_keys;
  for (std::size_t problem = 0; problem < phase_.size(); ++problem)
    // A lost rank may still be writing its problems' records: their keys stay taken.
    if (phase_[problem] == Phase::running || phase_[problem] == Phase::lost) taken_keys.insert(record_keys_[problem]);
  return startable_problems(waiting(), record_keys_, taken_keys);
}

bool SweepDeal::dealable_to(int rank) const { return standing_.at(static_cast<std::size_t>(rank)) == Standing::serving; }

bool SweepDeal::over() const {
  for (Phase phase : phase_)
    if (phase == Phase::running) return false;
  // Nothing runs, so what cannot start now never will: its key is a lost problem's.
  if (startable_now().empty()) return true;
  // Problems can start: the deal goes on while a rank with a GPU is left to take them (it offers once its runs end).
  for (int rank = 0; rank < static_cast<int>(standing_.size()); ++rank)
    if (dealable_to(rank)) return false;
  return true;
}

std::vector<std::size_t> SweepDeal::waiting() const {
  std::vector<std::size_t> problems;
  for (std::size_t problem = 0; problem < phase_.size(); ++problem)
    if (phase_[problem] == Phase::waiting) problems.push_back(problem);
  return problems;
}

std::vector<int> SweepDeal::ranks_without_gpu() const {
  std::vector<int> ranks;
  for (int rank = 0; rank < static_cast<int>(standing_.size()); ++rank)
    if (standing_[static_cast<std::size_t>(rank)] == Standing::without_gpu) ranks.push_back(rank);
  return ranks;
}

std::vector<int> SweepDeal::lost_ranks() const {
  std::vector<int> ranks;
  for (int rank = 0; rank < static_cast<int>(standing_.size()); ++rank)
    if (standing_[static_cast<std::size_t>(rank)] == Standing::lost) ranks.push_back(rank);
  return ranks;
}

}  // namespace kernlathe
