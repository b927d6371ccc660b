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
