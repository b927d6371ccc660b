#include "tuner/record/evaluation.h"

#include <array>
#include <utility>

namespace kernlathe {

namespace {

// The names are written into every record file, so they are part of the file format: never rename one.
constexpr std::array<std::pair<Status, std::string_view>, 8> status_names{{
    {Status::ok, "ok"},
    {Status::compile_error, "compile_error"},
    {Status::resources_exceeded, "resources_exceeded"},
    {Status::launch_error, "launch_error"},
    {Status::wrong_result, "wrong_result"},
    {Status::timeout, "timeout"},
    {Status::crashed, "crashed"},
    {Status::invalid, "invalid"},
}};

}  // namespace

std::string_view status_name(Status status) {
  for (const auto& [candidate, name] : status_names) {
    if (candidate == status) return name;
  }
  return "unknown";
}

std::optional<Status> parse_status(std::string_view name) {
  for (const auto& [status, candidate] : status_names) {
    if (candidate == name) return status;
  }
  return std::nullopt;
}

std::string_view objective_name(Objective objective) {
  switch (objective) {
    case Objective::time: return "time";
    case Objective::energy: return "energy";
    case Objective::edp: return "edp";
  }
  return "time";
}

std::optional<Objective> parse_objective(std::string_view text) {
  for (Objective objective : {Objective::time, Objective::energy, Objective::edp})
    if (objective_name(objective) == text) return objective;
  return std::nullopt;
}

double objective_value(const Evaluation& evaluation, Objective objective) {
  if (!evaluation.ok() || evaluation.time.median_ms <= 0) return 0;
  switch (objective) {
    case Objective::time: return evaluation.time.median_ms;
    case Objective::energy: return evaluation.energy_mj;
    case Objective::edp: return evaluation.energy_mj * evaluation.time.median_ms;
  }
  return 0;
}

std::string clock_policy_flag(std::uint64_t throttle_reasons) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {0x8, "hw_slowdown"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "power_brake"}};
  std::string flag;
  for (const auto& [bit, name] : names) {
    if ((throttle_reasons & bit) != 0) flag += (flag.empty() ? "" : "+") + std::string(name);
  }
  return flag;
}

}  // namespace kernlathe
