#include "tuner/cli/analyze_command.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "tuner/analysis/report.h"
#include "tuner/common/error.h"
#include "tuner/report/roofline.h"

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
  command.add_option("--kernels", kernels, "where specs are looked for by kernel name, for the roofline (default kernels)");
  command.add_option("--ceilings", ceilings,
                     "JSON file of one GPU's ceilings (tune ceilings --json plus \"gpu\"), for records whose run.json "
                     "holds none; repeatable, one file per GPU")
      ->check(CLI::ExistingFile);
}

int AnalyzeCommand::run() const {
  const auto started = std::chrono::steady_clock::now();
  // Read first: a bad ceiling file is exit 2 before any figure is computed.
  const std::vector<RooflineCeilings> ceiling_files =
      read_ceiling_files(std::vector<std::filesystem::path>(ceilings.begin(), ceilings.end()));
  std::vector<std::filesystem::path> paths(results.begin(), results.end());
  std::vector<Recording> recordings =
      load_recordings(paths, [](const std::filesystem::path& file) { fmt::print(stderr, "reading {}\n", file.string()); });

  ImportanceOptions options;
  options.seed = seed;
  options.resamples = bootstrap;
  const AnalysisReport report = analyse_recordings(std::move(recordings), options, [](const std::string& line) {
    fmt::print(stderr, "{}\n", line);
  });
  // The roofline of every recording: its best against the ceilings measured on its GPU (as tune report draws it).
  std::vector<nlohmann::ordered_json> rooflines;
  for (std::size_t index = 0; index < report.recordings.size(); ++index)
    rooflines.push_back(roofline_json(report.recordings[index], report.analyses[index].landscape, kernels, ceiling_files));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (json) {
    nlohmann::ordered_json output = report_to_json(report);
    output["rooflines"] = rooflines;
    output["seconds"] = seconds;
    // Recorded messages are the compiler's and the driver's text: bytes that are not UTF-8 are replaced, not fatal.
    fmt::print("{}\n", output.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  } else {
    fmt::print("{}", report_to_text(report));
    fmt::print("\nroofline (best configuration against the ceilings measured on its GPU)\n");
    for (std::size_t index = 0; index < rooflines.size(); ++index) {
      const nlohmann::ordered_json& roofline = rooflines[index];
      const std::string label = report.recordings[index].label();
      if (roofline.contains("unavailable")) {
        fmt::print("  {}: not placed: {}\n", label, roofline.at("unavailable").get<std::string>());
        continue;
      }
      const std::string bound = roofline.at("bound").get<std::string>();
      fmt::print("  {}: {:.1f} GFLOP/s at {:.3g} flop/B, {:.1f}% of the attainable {:.1f} GFLOP/s ({})\n", label,
                 roofline.at("gflops").get<double>(), roofline.at("intensity").get<double>(),
                 100 * roofline.at("fraction").get<double>(), roofline.at("attainable_gflops").get<double>(),
                 bound == "unknown" ? "memory roof only: no compute ceiling for this kernel" : bound + "-bound");
      if (const std::string warning = roofline.value("warning", ""); !warning.empty())
        fmt::print("    warning: {}\n", warning);
    }
  }
  fmt::print(stderr, "analysed in {:.2f} s\n", seconds);
  return exit_ok;
}

}  // namespace kernlathe
