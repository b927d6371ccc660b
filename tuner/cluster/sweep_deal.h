#pragma once
// Which rank tunes which problem of a sweep under mpirun (`mpirun -n R tune sweep WORKLOAD`): pure decisions, no
// messages, no threads, no GPU, so that the rules are tested on any machine. Rank 0 keeps one SweepDeal and asks it
// each time a rank says how many problems it can take (its free devices), a problem finishes, or a rank is lost.
//
//   - A dynamic deal in workload order: a rank that offers free devices gets the next waiting problems, at most one
//     per free device; ranks waiting for work are served in rank order. A fast rank takes more problems than a slow
//     one, and no problem is dealt twice.
//   - Problems with the same record key (the same spec and problem: one record folder, one best-cache entry) are
//     never dealt while another of their key runs on any rank (startable_problems of workload_schedule.h).
//   - A rank that finds no GPU gives its problem back: it is dealt to another rank, and that rank takes no more.
//   - A rank that falls silent is lost: its running problems are not dealt again in this sweep (the rank may still
//     be writing their records); their state stays "started", so the next sweep resumes them from their records.
//   - The deal is over when nothing runs and nothing waiting can be dealt: every problem finished, lost, or left
//     waiting because no rank with a GPU is left or a lost problem holds its key.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kernlathe {

struct RankDeal {
  int rank = 0;
  std::vector<std::size_t> problems;  // indices in the workload, in workload order
};

class SweepDeal {
 public:
  // record_keys[i]: problem i's record key; done_before[i]: finished in an earlier sweep (never dealt).
  SweepDeal(std::vector<std::string> record_keys, const std::vector<bool>& done_before, int ranks);

  // The rank can take `free` problems now (its free devices); replaces what it offered before.
  void offer(int rank, std::size_t free);
  // What to start now, by rank: each rank that offered gets the next startable problems, up to its offer, and its
  // offer is then spent (its devices are all busy once it starts them).
  std::vector<RankDeal> deal();

  void finished(std::size_t problem);
  // The rank found no GPU: the problem waits again for another rank, and the rank is dealt nothing more.
  void no_gpu(std::size_t problem, int rank);
  // The rank fell silent: it is dealt nothing more; returns its running problems (not dealt again).
  std::vector<std::size_t> lose(int rank);

  std::optional<int> rank_of(std::size_t problem) const;  // the rank running it
  bool over() const;
  // Problems never dealt, or given back and never dealt again (no rank with a GPU was left).
  std::vector<std::size_t> waiting() const;
  std::vector<int> ranks_without_gpu() const;
  std::vector<int> lost_ranks() const;

 private:
  enum class Phase { waiting, running, finished, lost, done_before };
  enum class Standing { serving, without_gpu, lost };

  bool dealable_to(int rank) const;
  // The waiting problems no running or lost problem's key holds, in workload order.
  std::vector<std::size_t> startable_now() const;

  std::vector<std::string> record_keys_;
  std::vector<Phase> phase_;
  std::vector<int> running_on_;  // by problem: its rank while it runs
  std::vector<Standing> standing_;
  std::vector<std::size_t> offered_;
};

}  // namespace kernlathe
