#include "tuner/cli/analyze_command.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "tuner/analysis/report.h"
#include "tuner/common/error.h"

namespace kernlathe {

void AnalyzeCommand::add_to(CLI::App& command) {
  command.add_option("results", results,
                     "record folders or evaluations.csv files (results/runs/...) and T4 files (*.T4.json, "
                     "*.T4.json.gz, with their T1 space beside them); a folder stands for every record below it")
      ->required();
  command.add_flag("--json", json, "every figure as JSON on stdout");
  command.add_option("--seed", seed, "seed of the bootstrap resamples and forests (default 1)");
  command.add_option("--bootstrap", bootstrap, "bootstrap resamples for the importance intervals (default 32)")
      ->check(CLI::Range(2, 10000));
}

int AnalyzeCommand::run() const {
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::filesystem::path> paths(results.begin(), results.end());
  std::vector<Recording> recordings =
      load_recordings(paths, [](const std::filesystem::path& file) { fmt::print(stderr, "reading {}\n", file.string()); });

  ImportanceOptions options;
  options.seed = seed;
  options.resamples = bootstrap;
  const AnalysisReport report = analyse_recordings(std::move(recordings), options, [](const std::string& line) {
    fmt::print(stderr, "{}\n", line);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (json) {
    nlohmann::ordered_json output = report_to_json(report);
    output["seconds"] = seconds;
    // Recorded messages are the compiler's and the driver's text: bytes that are not UTF-8 are replaced, not fatal.
    fmt::print("{}\n", output.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  } else {
    fmt::print("{}", report_to_text(report));
  }
  fmt::print(stderr, "analysed in {:.2f} s\n", seconds);
  return exit_ok;
}

}  // namespace kernlathe
