#pragma once
// Entry point of an evaluation worker process (`tune __evaluation-worker`): owns the CUDA context, buffers and
// reference outputs; evaluates one configuration per request. A fault that poisons the context ends this process,
// never the tuner driving it.
namespace kernlathe {
int evaluation_worker_main(int in_fd, int out_fd);
}
