#include "tuner/compile/compile_worker.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "tuner/compile/message_pipe.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {

int compile_worker_main(int in_fd, int out_fd) {
  // A parent that goes away must end this process through EPIPE, not a signal that reads like a crash.
  std::signal(SIGPIPE, SIG_IGN);
  // The protocol owns out_fd. When that is stdout, anything else in the process printing there would corrupt the
  // stream, so the protocol moves to a private descriptor and stdout becomes stderr.
  if (out_fd == STDOUT_FILENO) {
    std::fflush(stdout);
    out_fd = ::dup(STDOUT_FILENO);
    if (out_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      std::perror("compile worker: cannot set up its output");
      return 1;
    }
  }
  try {
    while (std::optional<std::string> message = read_message(in_fd)) {
      WorkerRequest worker_request = worker_request_from_json(nlohmann::json::parse(*message));
      CompileResult result = compile_cubin(worker_request.request, worker_request.cache_dir, worker_request.use_cache);
      if (!write_message(out_fd, dump_json(to_json(result)))) return 0;  // the pool is gone
    }
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "compile worker: %s\n", failure.what());
    return 1;
  }
  return 0;
}

}  // namespace kernlathe
