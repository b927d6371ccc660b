// `tune`'s command line: one subcommand per file (tuner/cli/*_command.h), each parsing its own options and calling
// the library; this file registers them, says which one a mistyped first word was meant to be, and runs the one
// given. Errors become exceptions that main() maps to the documented exit codes.
#include "tuner/cli/commands.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tuner/cli/analyze_command.h"
#include "tuner/cli/best_command.h"
#include "tuner/cli/ceilings_command.h"
#include "tuner/cli/compile_check_command.h"
#include "tuner/cli/cover_command.h"
#include "tuner/cli/export_command.h"
#include "tuner/cli/replay_command.h"
#include "tuner/cli/report_command.h"
#include "tuner/cli/run_command.h"
#include "tuner/cli/space_command.h"
#include "tuner/cli/sweep_command.h"
#include "tuner/cli/t4_command.h"
#include "tuner/cli/validate_command.h"
#include "tuner/common/error.h"
#include "tuner/expr/expression.h"
#include "tuner/record/build_commit.h"

namespace kernlathe {

int run_cli(int argc, char** argv) {
  CLI::App app{"tune: a GPU kernel autotuner. Exit codes: 0 ok, 1 failure, 2 bad input or usage, 3 no usable GPU."};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);

  SpaceCommand space_command;
  CLI::App* space = app.add_subcommand("space", "count and list a spec's valid configurations");
  space_command.add_to(*space);

  ValidateCommand validate_command;
  CLI::App* validate = app.add_subcommand("validate", "check a spec, its space and its template without a GPU");
  validate_command.add_to(*validate);

  CompileCheckCommand compile_command;
  CLI::App* compile = app.add_subcommand("compile-check", "compile configurations with NVRTC (no GPU needed)");
  compile_command.add_to(*compile);

  RunCommand run_command;
  CLI::App* run = app.add_subcommand("run", "tune a kernel spec on the GPU (or replay a recorded run)");
  run_command.add_to(*run);

  SweepCommand sweep_command;
  CLI::App* sweep = app.add_subcommand(
      "sweep", "tune every problem of a workload file, one after the other, several GPUs at once, or dealt over the "
      "ranks of mpirun, resumably");
  sweep_command.add_to(*sweep);

  CoverCommand cover_command;
  CLI::App* cover = app.add_subcommand("cover", "the few configurations that serve every tuned problem of a kernel (no GPU)");
  cover_command.add_to(*cover);

  BestCommand best_command;
  CLI::App* best = app.add_subcommand(
      "best", "print the stored best configurations of a kernel, or (--select) what the runtime would launch");
  best_command.add_to(*best);

  ExportCommand export_command;
  CLI::App* export_app = app.add_subcommand("export", "write what an application ships: databases, sources, cubins");
  export_command.add_to(*export_app);

  ReplayCommand replay_command;
  CLI::App* replay = app.add_subcommand("replay", "benchmark search strategies on recorded data (no GPU)");
  replay_command.add_to(*replay);

  AnalyzeCommand analyze_command;
  CLI::App* analyze = app.add_subcommand("analyze", "which parameters matter on which GPU, from recorded data (no GPU)");
  analyze_command.add_to(*analyze);

  T4Command t4_command;
  CLI::App* t4 = app.add_subcommand("t4", "write records as community T4 result files with their T1 spaces (no GPU)");
  t4_command.add_to(*t4);

  CeilingsCommand ceilings_command;
  CLI::App* ceilings = app.add_subcommand("ceilings", "measure the GPU's copy, host-transfer, FMA and tensor-core ceilings");
  ceilings_command.add_to(*ceilings);

  ReportCommand report_command;
  CLI::App* report = app.add_subcommand("report", "HTML pages of charts per kernel from recorded data (no GPU)");
  report_command.add_to(*report);

  // A first word that is no command is a mistyped one; CLI11 alone would say only that a command is required.
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(command->get_name());
  if (argc < 2) {
    fmt::print(stderr, "tune: a command is required; the commands are {} (tune --help describes each)\n",
               fmt::join(names, ", "));
    return exit_bad_input;
  }
  if (argv[1][0] != '-') {
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string suggestion = expr::closest_match(argv[1], names);
      fmt::print(stderr, "tune: unknown command '{}'{}; the commands are {} (tune --help describes each)\n", argv[1],
                 suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", suggestion), fmt::join(names, ", "));
      return exit_bad_input;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    // One line that starts with "tune: ", as every bad input gets (CLI11's own message has no prefix), naming the
    // command whose options were wrong.
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const std::string command = chosen.empty() ? std::string("tune") : "tune " + chosen.front()->get_name();
    fmt::print(stderr, "tune: {}{} ({} --help lists the options)\n", chosen.empty() ? "" : chosen.front()->get_name() + ": ",
               error.what(), command);
    return exit_bad_input;
  }

  if (space->parsed()) return space_command.run();
  if (validate->parsed()) return validate_command.run();
  if (compile->parsed()) return compile_command.run();
  if (run->parsed()) return run_command.run();
  if (sweep->parsed()) return sweep_command.run_sweep();
  if (cover->parsed()) return cover_command.run();
  if (best->parsed()) return best_command.run();
  if (replay->parsed()) return replay_command.run();
  if (analyze->parsed()) return analyze_command.run();
  if (t4->parsed()) return t4_command.run();
  if (report->parsed()) return report_command.run();
  if (ceilings->parsed()) return ceilings_command.run();
  if (export_app->parsed()) return export_command.run();
  return exit_bad_input;
}

}  // namespace kernlathe
