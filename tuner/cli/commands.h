#pragma once
namespace kernlathe {
// Parses the command line and runs one subcommand; returns its exit code. Library exceptions propagate.
int run_cli(int argc, char** argv);
}  // namespace kernlathe
