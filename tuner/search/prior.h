#pragma once
// What earlier tunings of the same kernel say about a new one (issue 32): recordings of other GPUs or other problem
// sizes, as a ranked list of configurations valid in the target's space, and a strategy that tries them first and
// hands the rest of the search to another strategy (the default), which is told every result, the transfers'
// included: its model learns from them and its local moves start from the best of them.
//
// A prior can mislead (another vendor's GPU, a problem where other tiles win). The transfers are interleaved with
// the inner strategy's own proposals from the start, and once a few of each have measured, the prior is dropped when
// the best transfer is slower than the median of the inner strategy's own results: the rest of the budget is the
// inner strategy's alone. A misleading prior therefore costs a few evaluations, which the inner strategy's model
// still learns from.
//
// A prior can also be half right: its best configurations are good on the target but not the best, and the
// target's fastest lie where the sources rate them lower (dedispersion on the MI250X from the A4000's and the
// A6000's recordings: transfers at 1.5-1.8 of the optimum, better than 95% of that landscape, the optimum ranked
// about 1,000th of 11,130). Told the transfers, the default strategy's local part refines them into the best the
// prior's region holds (a plateau at 1.33 there) and stays; its model is the part that leaves. So while a prior is
// in play the default strategy gives its model a larger share of its own proposals (PriorSettings::model_share).

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "tuner/search/strategy.h"

namespace kernlathe {

// One recording used as a prior: its evaluations (failures included), configurations in the parameter order of the
// target's space.
struct PriorSource {
  std::string name;  // the file, for messages
  std::vector<Evaluation> evaluations;
};

// A configuration of the prior with its combined score: the geometric mean, over the sources that measured it, of
// its time over that source's best (1 = the best of every source that measured it). A failure in a source counts as
// that source's slowest ratio.
struct RankedTransfer {
  Configuration configuration;
  double score = 0;
  std::size_t sources = 0;  // sources that recorded it
};

// The configurations of the sources that are valid in space (canonical form), best combined score first; ties go to
// the one more sources recorded. Sources without a verified result add nothing.
std::vector<RankedTransfer> rank_transfers(const std::vector<PriorSource>& sources, const SpaceEnumerator& space);

struct PriorSettings {
  // Transfers proposed at most, in rank order. 6, from bench_search_transfer (10 seeds, results/transfer): with 5, 6,
  // 8 and 10, the T4 landscapes reached 1.034, 1.034, 1.041 and 1.035 of the optimum at 20 evaluations and the
  // project's records 1.005, 1.004, 1.008 and 1.007; more transfers cost the searches whose prior is a little off
  // (softmax on the H100 from the H200's record: 1.031 at 20 with 8, 1.005 with 6, 1.003 without a prior). Checked
  // again with the model share below (benchmarks/transfer_settings.py, 3 x 50 seeds, at 20 evaluations): 4 did
  // better on the T4 files with two GPUs as prior (1.0231 against 1.0263) and worse with one (1.0444 against 1.0292:
  // with the MI250X's recording alone, the convolution on the A4000 and the A6000 gets its better transfers only
  // from the fifth on), 8 worse with both (1.0337, 1.0345), so 6 stays.
  std::size_t transfers = 6;
  // Transfers before the alternation with the inner strategy begins, which itself opens with a transfer: 1 puts
  // the two best transfers first. On the T4 landscapes (bench_search_transfer, 10 seeds), a lead of two (three
  // transfers first) gave 1.046 of the optimum at 20 evaluations against 1.035 with one.
  std::size_t lead = 1;
  // Verified results of each side needed before the prior is judged.
  std::size_t judge_after = 3;
  // Share of the default strategy's own proposals (the portfolio named without settings, portfolio.h) that its model
  // makes while a prior is in play; without a prior the portfolio keeps its own, 0.25, which cross-validation chose
  // for 50 to 200 evaluations without one. From benchmarks/transfer_settings.py (results/transfer, 3 x 50 seeds,
  // geometric mean at 20 / 50 evaluations), 0.5 against 0.25 with 6 transfers: the T4 files 1.0351 / 1.0041 to
  // 1.0263 / 1.0013; the T4 files with one other GPU as prior 1.0419 / 1.0152 to 1.0292 / 1.0067, and no target
  // worse with the prior than without beyond the noise (2 with 0.25); with 4 transfers too (1.0264 to 1.0231). It
  // costs the project's records 1.0052 / 1.0007 to 1.0059 / 1.0011: their priors are right and their searches
  // refine a good transfer, which local moves do faster. 0.375 gained less (one GPU as prior: 1.0365 / 1.0104),
  // 0.75 a little more on the T4 files (1.0249 / 1.0010) for more on the records (1.0069 / 1.0013).
  double model_share = 0.5;
};

class PriorStrategy final : public Strategy {
 public:
  // The strategy keeps a reference to space. transfers: rank_transfers' order (only the configurations are used).
  PriorStrategy(const SpaceEnumerator& space, std::vector<Configuration> transfers, std::unique_ptr<Strategy> inner,
                PriorSettings settings = {});
  std::string name() const override { return inner_->name() + "+prior"; }
  std::vector<Configuration> ask(std::size_t count) override;
  void tell(const Evaluation& evaluation) override;
  ModelUpdates model_updates() const override { return inner_->model_updates(); }

  bool trusted() const { return trusted_; }
  std::size_t transfers_proposed() const { return next_transfer_; }

 private:
  std::optional<Configuration> next_transfer();
  std::optional<Configuration> next_own();
  void judge();

  const SpaceEnumerator& space_;
  std::vector<Configuration> transfers_;
  std::unique_ptr<Strategy> inner_;
  PriorSettings settings_;
  std::size_t next_transfer_ = 0;
  std::size_t proposals_ = 0;
  bool trusted_ = true;
  bool judged_ = false;
  std::unordered_set<std::uint64_t> proposed_;            // by either side
  std::unordered_set<std::uint64_t> transferred_;         // proposed from the prior
  std::vector<double> transfer_values_;                   // verified results of transfers
  std::vector<double> own_values_;                        // verified results of the inner strategy's proposals
};

// make_strategy(name, space, seed) wrapped in a PriorStrategy when transfers is not empty, "portfolio" named
// without settings then built with settings.model_share (a name with settings, "portfolio:model_share=0.25", is
// taken as given). Without transfers: make_strategy(name, space, seed) itself, the search a run without a prior makes.
std::unique_ptr<Strategy> make_strategy_with_prior(std::string_view name, const SpaceEnumerator& space,
                                                   std::uint64_t seed, std::vector<Configuration> transfers,
                                                   PriorSettings settings = {});

}  // namespace kernlathe
