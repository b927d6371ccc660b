#pragma once
// What a record file was measured with: kernel, spec hash, device, driver and tool versions, problem size and
// strategy. Kept in a JSON file next to the CSV (evaluations.csv + run.json) so the CSV stays a plain table that
// pandas or a spreadsheet reads directly.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/spec/model.h"

namespace kernlathe {

struct RunMetadata {
  std::string kernel;
  std::string spec_hash;
  std::string gpu_name;
  std::string arch;  // "sm_90"
  std::string driver_version;
  std::string nvrtc_version;
  std::string project_version;
  std::string build_commit;  // build_commit.h: the commit the measuring binaries were built from, "" if unknown
  std::string problem;     // "N=1048576"
  std::string strategy;
  std::string started_at;  // ISO 8601, UTC
  std::map<std::string, std::string> extra;

  bool operator==(const RunMetadata&) const = default;
};

// The companion file of a record CSV: "run.json" beside "evaluations.csv", otherwise "<stem>.run.json" beside
// "<stem>.csv", so several record files may share a directory.
std::filesystem::path metadata_path(const std::filesystem::path& csv);

// Adds one run to the companion file, creating it when missing. A resumed run appends a second entry rather
// than overwriting the first, so the file tells which sessions (and which driver, which tool version) produced
// the rows. Written to a temporary file and renamed, so a reader never sees half a file. The space is written
// beside the runs: its parameters (name, type, values, default), derived values and constraints as written.
void append_run_metadata(const std::filesystem::path& csv, const Space& space, const RunMetadata& metadata);

// Adds extra fields to the last run of the companion file (what the run learnt about itself once it ended: its
// profile), written as append_run_metadata writes. TunerError when the file holds no run.
void add_to_last_run(const std::filesystem::path& csv, const std::map<std::string, std::string>& extra);

// Every run recorded in the companion file, oldest first. Missing file -> empty; unreadable JSON -> InputError.
std::vector<RunMetadata> read_run_metadata(const std::filesystem::path& csv);

// The number a run keeps under `key` in its extra fields ("copy_bandwidth_gbps": "1450.2"); nullopt when absent.
// Text that is not a number is an InputError naming the companion file of csv, the key and the text.
std::optional<double> extra_number(const RunMetadata& run, const std::string& key, const std::filesystem::path& csv);

// The current time as "2024-05-01T12:34:56Z".
std::string iso8601_now();

}  // namespace kernlathe
