#pragma once
// The final round of a run (issue 16): the best configurations of the search, the default, the configuration
// the best cache holds and the baseline (cuBLAS for GEMM) are measured again, interleaved round-robin in the same process under the same conditions,
// so the ranking, the figures reported and the best cache do not rest on one measurement each taken minutes apart
// (clocks and temperature drift over a run at the power cap). Each round measures every candidate once with the
// usual rule (tuner/measure/measurement.h); a candidate's figure is the mean of its round medians with a 95% interval.
// How many rounds run is sized by the noise (run_final_round_sized): rounds are added until the leader's interval
// separates from every other contender's, or the two are known to be within a tolerance of each other, or a cap.

#include <functional>
#include <string>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/space/space.h"

namespace kernlathe {

struct FinalFigures {
  std::vector<double> round_ms;  // the median of each round, in round order
  double mean_ms = 0;
  double low_ms = 0;             // 95% interval of the mean (Student t over the rounds)
  double high_ms = 0;
  bool complete = false;         // measured correctly in every round
  std::string failure;           // why not, when not
  // Energy per launch, when every round that asked for it measured it: the same summary over those figures (one
  // figure gives an interval of zero width).
  std::vector<double> round_energy_mj;
  double energy_mj = 0;
  double energy_low_mj = 0;
  double energy_high_mj = 0;
};

// The mean and its 95% interval from round medians (at least one; one round gives an interval of zero width).
FinalFigures summarise_rounds(std::vector<double> round_ms);

// The mean and the half width of its 95% interval (Student t), for any per-round figure.
std::pair<double, double> mean_and_half_width(const std::vector<double>& values);

// Whether `a` is faster than `b` beyond the noise: a's interval lies wholly below b's.
bool faster_beyond_noise(const FinalFigures& a, const FinalFigures& b);

// Measures each of `candidates` candidates `rounds` times through measure(index, with_energy). Round r measures the
// candidates in order starting at r % n, so none is always first (after a pause) or last. The last energy_rounds
// rounds ask for energy too (one energy figure costs 0.1-0.3 s: tuner/measure/kernel_timer.h). A candidate that
// fails in a round is not measured again (complete false, failure says the status and message). `measured` is told
// each measurement as it comes (for progress).
std::vector<FinalFigures> run_final_round(std::size_t candidates, int rounds,
                                          const std::function<Evaluation(std::size_t candidate, bool with_energy)>& measure,
                                          const std::function<void(int round, std::size_t candidate)>& measured = {},
                                          int energy_rounds = 0);

// How many rounds the final round may run, and which candidates may win it.
struct FinalRoundPlan {
  int min_rounds = 3;
  int max_rounds = 15;
  // The leader and another contender count as decided when the leader could be slower than the other by at most
  // this fraction of the leader's mean (the leader's upper bound minus the other's lower bound): picking either
  // then costs at most that much.
  double tolerance = 0.005;
  // Candidates that may win (the baseline, timed in the same rounds, does not); empty: every candidate.
  std::vector<bool> contends;
  bool energy_every_round = false;  // ask each measurement for energy (an objective that ranks by it)
};

struct FinalRoundOutcome {
  std::vector<FinalFigures> figures;  // per candidate, as run_final_round gives them
  int rounds = 0;                     // rounds that ran
  // Why the rounds stopped: "separated" (the leader's interval lies below every other contender's), "within
  // tolerance" (some contender could be faster, but by no more than the tolerance), "cap" (max_rounds reached
  // undecided), "single contender".
  std::string stopped_because;
  int leader = -1;                    // the contender with the lowest mean, -1 if none completed
  int runner_up = -1;                 // the next one, -1 if none
  // How sure the selection is: the probability that the leader is faster than the runner-up, from the normal
  // approximation of the difference of their means (1 with no runner-up).
  double confidence = 0;
  // The most the leader could be slower than the fastest contender: max over the others of (leader's upper bound -
  // other's lower bound), relative to the leader's mean, never below 0.
  double worst_regret = 0;
};

// Measures the candidates in interleaved rounds (as run_final_round) until the plan says the selection is decided.
FinalRoundOutcome run_final_round_sized(std::size_t candidates, const FinalRoundPlan& plan,
                                        const std::function<Evaluation(std::size_t candidate, bool with_energy)>& measure,
                                        const std::function<void(int round, std::size_t candidate)>& measured = {});

// The stopping decision of run_final_round_sized on figures measured so far (exposed for tests and reports):
// fills stopped_because ("" while undecided), leader, runner_up, confidence and worst_regret.
void decide_final_round(const std::vector<FinalFigures>& figures, const FinalRoundPlan& plan, FinalRoundOutcome& outcome);

}  // namespace kernlathe
