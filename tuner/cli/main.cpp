// `tune`: routes the hidden worker entry points (which must start before any option parsing), then runs a
// subcommand and maps library exceptions to the documented exit codes:
//   0 ok, 1 failure, 2 bad input or usage, 3 no usable GPU.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "tuner/cli/commands.h"
#include "tuner/common/error.h"
#include "tuner/compile/compile_worker.h"
#include "tuner/run/evaluation_worker.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "__compile-worker") == 0) return kernlathe::compile_worker_main(0, 1);
  if (argc >= 2 && std::strcmp(argv[1], "__evaluation-worker") == 0) return kernlathe::evaluation_worker_main(0, 1);
  // A closed pipe to a worker must show up as an error from write(), not kill the tuner.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return kernlathe::run_cli(argc, argv);
  } catch (const kernlathe::NoGpuError& error) {
    std::fprintf(stderr, "tune: no usable GPU: %s\n", error.what());
    return kernlathe::exit_no_gpu;
  } catch (const kernlathe::InputError& error) {
    std::fprintf(stderr, "tune: %s\n", error.what());
    return kernlathe::exit_bad_input;
  } catch (const std::bad_alloc&) {
    // The limits (space enumeration, --sample, streamed --list) should keep every command far from this; should
    // something still ask for more memory than there is, say so and exit with the documented failure code
    // instead of aborting.
    std::fprintf(stderr, "tune: error: out of memory (std::bad_alloc): the command needed more memory than this "
                         "process may use; constrain the space or ask for less\n");
    return kernlathe::exit_failure;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tune: error: %s\n", error.what());
    return kernlathe::exit_failure;
  } catch (...) {
    std::fprintf(stderr, "tune: error: an unknown exception stopped the command\n");
    return kernlathe::exit_failure;
  }
}
