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

}  // namespace kernlathe
