#pragma once
// Entry point of a compile worker process (`tune __compile-worker`): reads compile requests from in_fd and
// writes results to out_fd until in_fd closes. NVRTC barely scales with threads inside one process but does
// across processes, so the compile pool (compile_pool.h) runs several of these.
namespace kernlathe {
int compile_worker_main(int in_fd, int out_fd);
}
