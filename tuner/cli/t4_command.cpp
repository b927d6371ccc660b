#include "tuner/cli/t4_command.h"

#include <fmt/format.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tuner/analysis/t4_export.h"
#include "tuner/common/error.h"
#include "tuner/common/output_folder.h"

namespace kernlathe {

void T4Command::add_to(CLI::App& command) {
  command.add_option("results", results,
                     "record folders or evaluations.csv files (results/runs/...); a folder stands for every record below it")
      ->required();
  command.add_option("-o,--out", out, "folder for the .T4.json files and their .T1.json spaces")->required();
  command.add_flag("--json", json, "the files written, as JSON on stdout");
}

int T4Command::run() const {
  check_output_folder("-o", out, "the T4 files");
  std::vector<std::filesystem::path> paths(results.begin(), results.end());
  std::vector<Recording> recordings =
      load_recordings(paths, [](const std::filesystem::path& file) { fmt::print(stderr, "reading {}\n", file.string()); });
  nlohmann::ordered_json written = nlohmann::ordered_json::array();
  for (const Recording& recording : recordings) {
    if (is_t4_file_name(recording.source)) {
      fmt::print(stderr, "{}: already a T4 file, left as it is\n", recording.source.string());
      continue;
    }
    T4Files files = write_t4_files(recording, out);
    if (json) {
      written.push_back({{"recording", recording.label()}, {"results", recording.evaluations.size()},
                         {"t4", files.t4.string()}, {"t1", files.t1.string()}});
    } else {
      fmt::print("{}: {} results -> {} (space: {})\n", recording.label(), recording.evaluations.size(), files.t4.string(),
                 files.t1.string());
    }
  }
  if (json) fmt::print("{}\n", written.dump(2));
  return exit_ok;
}

}  // namespace kernlathe
