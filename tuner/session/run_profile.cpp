#include "tuner/session/run_profile.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace kernlathe {

double RunProfile::startup_seconds() const {
  double sum = 0;
  for (const ProfilePhase& phase : startup)
    if (!phase.alongside) sum += phase.seconds;
  return sum;
}

std::string format_lanes_and_strategy(const RunProfile& profile) {
  std::string text;
  const LaneTimes& lanes = profile.lanes;
  if (lanes.lanes > 0)
    text += fmt::format(
        "profile  lanes: {} x the loop = {:.2f} lane-seconds, measuring {:.2f}, idle {:.2f} waiting for the strategy "
        "{:.2f}, compilation {:.2f}, records {:.2f}, the loop {:.2f}, nothing left to hand out {:.2f}\n",
        lanes.lanes, lanes.lane_seconds, lanes.measuring_seconds, lanes.idle_total(), lanes.idle(LoopActivity::strategy),
        lanes.idle(LoopActivity::compilation), lanes.idle(LoopActivity::records), lanes.idle(LoopActivity::loop),
        lanes.idle(LoopActivity::results));
  const StrategyTimes& strategy = profile.strategy;
  if (strategy.asks > 0)
    text += fmt::format(
        "profile  strategy ({}): {:.2f} s (tell {:.2f}, ask {:.2f}), {} proposals in {} asks; {} model updates "
        "{:.2f} s\n",
        profile.strategy_in_background ? "on its own thread" : "on the loop's thread", strategy.seconds(),
        strategy.tell_seconds, strategy.ask_seconds, strategy.proposals, strategy.asks, strategy.model_updates.count,
        strategy.model_updates.seconds);
  return text;
}

std::string format_profile(const RunProfile& profile) {
  std::string text;
  std::string phases;
  if (profile.process_start_seconds >= 0) phases = fmt::format("process start {:.2f}", profile.process_start_seconds);
  // Phases that ran alongside others are grouped in parentheses after the phase they overlapped.
  bool in_group = false;
  for (const ProfilePhase& phase : profile.startup) {
    if (phase.alongside) {
      phases += fmt::format("{}{} {:.2f}", in_group ? ", " : (phases.empty() ? "(alongside: " : " (alongside: "),
                            phase.name, phase.seconds);
      in_group = true;
      continue;
    }
    if (in_group) phases += ")";
    in_group = false;
    phases += fmt::format("{}{} {:.2f}", phases.empty() ? "" : ", ", phase.name, phase.seconds);
  }
  if (in_group) phases += ")";
  text += fmt::format("profile  start-up {:.2f} s: {}\n",
                      profile.startup_seconds() + std::max(profile.process_start_seconds, 0.0), phases);
  if (profile.evaluations == 0) {
    text += fmt::format("profile  no evaluation; total {:.2f} s\n", profile.total_seconds);
    return text;
  }
  text += fmt::format("profile  first configuration sent to a GPU {:.2f} s after the run started, first result "
                      "{:.2f} s\n",
                      profile.first_request_seconds, profile.first_result_seconds);
  const WorkerStageTimes& worker = profile.worker;
  const double worker_seconds = worker.total_ms() / 1e3;
  text += fmt::format(
      "profile  {} evaluations: the worker {:.2f} s (preparation {:.2f}, verification {:.2f}, warm-up {:.2f}, "
      "sampling {:.2f}, clocks and power {:.2f}, energy {:.2f}); the loop waited {:.2f} s for results and {:.2f} s "
      "for compilation, and spent {:.2f} s on records and {:.2f} s on the strategy while the GPU worked\n",
      profile.evaluations, worker_seconds, worker.preparation_ms / 1e3, worker.verification_ms / 1e3,
      worker.warmup_ms / 1e3, worker.sampling_ms / 1e3, worker.conditions_ms / 1e3, worker.energy_ms / 1e3,
      profile.evaluate_seconds, profile.compile_wait_seconds, profile.record_seconds, profile.strategy_seconds);
  text += format_lanes_and_strategy(profile);
  text += fmt::format("profile  final round {:.2f} s; total {:.2f} s\n", profile.final_round_seconds,
                      profile.total_seconds);
  return text;
}

nlohmann::json lane_times_to_json(const LaneTimes& lanes) {
  nlohmann::json idle = nlohmann::json::object();
  for (std::size_t activity = 0; activity < loop_activity_count; ++activity)
    idle[std::string(loop_activity_name(static_cast<LoopActivity>(activity)))] = lanes.idle_seconds[activity];
  return {{"lanes", lanes.lanes},
          {"lane_seconds", lanes.lane_seconds},
          {"measuring_seconds", lanes.measuring_seconds},
          {"idle_seconds", lanes.idle_total()},
          {"idle_seconds_by_loop_activity", idle}};
}

nlohmann::json strategy_times_to_json(const StrategyTimes& strategy, bool in_background) {
  return {{"in_background", in_background},
          {"tell_seconds", strategy.tell_seconds},
          {"ask_seconds", strategy.ask_seconds},
          {"asks", strategy.asks},
          {"proposals", strategy.proposals},
          {"model_updates", strategy.model_updates.count},
          {"model_update_seconds", strategy.model_updates.seconds}};
}

std::map<std::string, std::string> profile_metadata(const RunProfile& profile) {
  const LaneTimes& lanes = profile.lanes;
  const StrategyTimes& strategy = profile.strategy;
  return {{"lanes", fmt::format("{}", lanes.lanes)},
          {"lane_seconds", fmt::format("{:.3f}", lanes.lane_seconds)},
          {"lanes_measuring_seconds", fmt::format("{:.3f}", lanes.measuring_seconds)},
          {"lanes_waited_for_strategy_seconds", fmt::format("{:.3f}", lanes.idle(LoopActivity::strategy))},
          {"lanes_waited_for_compilation_seconds", fmt::format("{:.3f}", lanes.idle(LoopActivity::compilation))},
          {"lanes_waited_otherwise_seconds",
           fmt::format("{:.3f}", lanes.idle_total() - lanes.idle(LoopActivity::strategy) -
                                     lanes.idle(LoopActivity::compilation))},
          {"strategy_seconds", fmt::format("{:.3f}", strategy.seconds())},
          {"strategy_model_updates", fmt::format("{}", strategy.model_updates.count)},
          {"strategy_model_update_seconds", fmt::format("{:.3f}", strategy.model_updates.seconds)}};
}

nlohmann::json profile_to_json(const RunProfile& profile) {
  nlohmann::json startup = nlohmann::json::array();
  for (const ProfilePhase& phase : profile.startup) {
    startup.push_back({{"phase", phase.name}, {"seconds", phase.seconds}});
    if (phase.alongside) startup.back()["alongside"] = true;
  }
  const WorkerStageTimes& worker = profile.worker;
  return {{"process_start_seconds", profile.process_start_seconds},
          {"startup", startup},
          {"startup_seconds", profile.startup_seconds()},
          {"first_request_seconds", profile.first_request_seconds},
          {"first_result_seconds", profile.first_result_seconds},
          {"evaluations", profile.evaluations},
          {"compile_wait_seconds", profile.compile_wait_seconds},
          {"evaluate_seconds", profile.evaluate_seconds},
          {"worker_seconds",
           {{"preparation", worker.preparation_ms / 1e3},
            {"verification", worker.verification_ms / 1e3},
            {"warmup", worker.warmup_ms / 1e3},
            {"sampling", worker.sampling_ms / 1e3},
            {"conditions", worker.conditions_ms / 1e3},
            {"energy", worker.energy_ms / 1e3}}},
          {"record_seconds", profile.record_seconds},
          {"strategy_seconds", profile.strategy_seconds},
          {"lanes", lane_times_to_json(profile.lanes)},
          {"strategy", strategy_times_to_json(profile.strategy, profile.strategy_in_background)},
          {"final_round_seconds", profile.final_round_seconds},
          {"total_seconds", profile.total_seconds}};
}

double process_start_for_a_run() {
  static std::atomic<bool> asked{false};
  return asked.exchange(true) ? -1 : seconds_since_process_start();
}

double seconds_since_process_start() {
  // Field 22 of /proc/self/stat is the start time in clock ticks after boot; field 2 (the command name, in
  // parentheses) may hold spaces, so fields are counted after its closing parenthesis.
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1;
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) return -1;
  std::istringstream fields(line.substr(name_end + 1));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 22) {
      start_ticks = std::stoull(field);
      break;
    }
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (start_ticks == 0 || ticks_per_second <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  const double since_boot = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  const double seconds = since_boot - static_cast<double>(start_ticks) / static_cast<double>(ticks_per_second);
  return seconds >= 0 ? seconds : -1;
}

}  // namespace kernlathe
