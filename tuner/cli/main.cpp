// `tune`: the command-line front end. Subcommands live in tuner/cli/commands.cpp; this file only routes the
// hidden worker entry points, which must start before any option parsing.
#include <cstring>

#include "tuner/compile/compile_worker.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "__compile-worker") == 0) return tuner::compile_worker_main(0, 1);
  return 0;
}
