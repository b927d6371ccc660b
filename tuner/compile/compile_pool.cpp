#include "tuner/compile/compile_pool.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/compile/message_pipe.h"

extern char** environ;

namespace kernlathe {

namespace {

struct Pending {
  CompileRequest request;
  std::string key;
  std::promise<CompileResult> promise;
};

// One compiler process. pid, descriptors and busy change under mutex, so the destructor can kill a busy worker
// while its dispatcher thread is blocked reading the reply.
struct WorkerProcess {
  std::mutex mutex;
  pid_t pid = -1;
  int to_worker = -1;
  int from_worker = -1;
  bool busy = false;
};

void close_descriptor(int& descriptor) {
  if (descriptor >= 0) ::close(descriptor);
  descriptor = -1;
}

CompileResult failed_result(const std::string& key, std::string error) {
  CompileResult result;
  result.key = key;
  result.error = std::move(error);
  return result;
}

std::string describe_exit(int wait_status) {
  if (WIFSIGNALED(wait_status)) return fmt::format("compiler process died (signal {})", WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return fmt::format("compiler process exited with status {}", WEXITSTATUS(wait_status));
  return "compiler process ended";
}

// How long a worker that closed its pipe, or was told to stop, may take to exit before it is killed.
constexpr std::chrono::milliseconds exit_grace{2000};

const char* const shutdown_message = "compile pool shut down before this request was compiled";

}  // namespace

struct CompilePool::Impl {
  CompilePoolOptions options;
  std::string version;
  std::optional<CubinCache> cache;

  std::mutex queue_mutex;
  std::condition_variable queue_ready;
  std::deque<Pending> queue;
  std::atomic<bool> stopping{false};

  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<std::thread> dispatchers;

  void dispatch_loop(WorkerProcess& worker) {
    // Start the process now, so loading NVRTC overlaps with whatever the caller does before its first submit.
    // A failure here is retried, and reported, with the first request.
    if (!options.worker_executable.empty()) {
      std::lock_guard lock(worker.mutex);
      if (!stopping.load() && worker.pid < 0) start(worker);
    }
    while (true) {
      Pending item;
      {
        std::unique_lock lock(queue_mutex);
        queue_ready.wait(lock, [&] { return stopping.load() || !queue.empty(); });
        if (stopping.load()) return;  // the destructor fails what is left in the queue
        item = std::move(queue.front());
        queue.pop_front();
      }
      // An exception escaping this thread would terminate the process; it becomes this request's failure.
      CompileResult result;
      try {
        result = compile(worker, item.request, item.key);
      } catch (const std::exception& failure) {
        result = failed_result(item.key, failure.what());
      }
      item.promise.set_value(std::move(result));
    }
  }

  CompileResult compile(WorkerProcess& worker, const CompileRequest& request, const std::string& key) {
    if (options.worker_executable.empty()) return compile_cubin(request, options.cache_dir, options.use_cache);

    std::string payload = dump_json(to_json(WorkerRequest{request, options.cache_dir.string(), options.use_cache}));
    {
      std::lock_guard lock(worker.mutex);
      if (stopping.load()) return failed_result(key, shutdown_message);
      // A worker that died while idle is replaced before it can fail a request that it never saw.
      int ignored_status = 0;
      if (worker.pid > 0 && ::waitpid(worker.pid, &ignored_status, WNOHANG) == worker.pid) {
        worker.pid = -1;
        stop(worker, std::chrono::milliseconds(0));
      }
      if (worker.pid < 0) {
        if (std::string error = start(worker); !error.empty()) return failed_result(key, error);
      }
      worker.busy = true;
    }
    std::optional<CompileResult> reply;
    std::string protocol_error;
    if (write_message(worker.to_worker, payload)) {
      try {
        if (std::optional<std::string> message = read_message(worker.from_worker)) {
          reply = compile_result_from_json(nlohmann::json::parse(*message));
        }
      } catch (const std::exception& failure) {  // a torn message or garbage: the worker cannot be trusted
        protocol_error = failure.what();
      }
    }
    std::lock_guard lock(worker.mutex);
    worker.busy = false;
    if (reply) return *reply;
    int wait_status = stop(worker, protocol_error.empty() ? exit_grace : std::chrono::milliseconds(0));
    if (stopping.load()) return failed_result(key, shutdown_message);
    if (!protocol_error.empty()) return failed_result(key, "compiler process protocol error: " + protocol_error);
    return failed_result(key, describe_exit(wait_status));
  }

  // Starts the worker's process; returns an error message, empty on success. Called with worker.mutex held.
  std::string start(WorkerProcess& worker) {
    // CLOEXEC on every end: a worker started later by another dispatcher must not inherit this worker's pipe,
    // or closing our write end would never reach this worker as end of file.
    int to_pipe[2];
    int from_pipe[2];
    if (::pipe2(to_pipe, O_CLOEXEC) != 0) return fmt::format("cannot create a pipe: {}", std::strerror(errno));
    if (::pipe2(from_pipe, O_CLOEXEC) != 0) {
      int saved_errno = errno;
      ::close(to_pipe[0]);
      ::close(to_pipe[1]);
      return fmt::format("cannot create a pipe: {}", std::strerror(saved_errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_pipe[1], STDOUT_FILENO);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t empty_mask;
    sigemptyset(&empty_mask);
    posix_spawnattr_setsigmask(&attributes, &empty_mask);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);

    std::string executable = options.worker_executable.string();
    std::string argument = "__compile-worker";
    char* argv[] = {executable.data(), argument.data(), nullptr};
    pid_t pid = -1;
    int spawn_error = ::posix_spawn(&pid, executable.c_str(), &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(to_pipe[0]);
    ::close(from_pipe[1]);
    if (spawn_error != 0) {
      ::close(to_pipe[1]);
      ::close(from_pipe[0]);
      return fmt::format("cannot start the compiler process {}: {}", executable, std::strerror(spawn_error));
    }
    worker.pid = pid;
    worker.to_worker = to_pipe[1];
    worker.from_worker = from_pipe[0];
    return {};
  }

  // Ends the worker's process and returns its wait status. A worker whose pipe reached end of file is exiting
  // already: wait up to `grace` for it, so its own signal is reported rather than our SIGKILL.
  // Called with worker.mutex held.
  static int stop(WorkerProcess& worker, std::chrono::milliseconds grace) {
    close_descriptor(worker.to_worker);
    close_descriptor(worker.from_worker);
    int wait_status = 0;
    if (worker.pid > 0) {
      auto deadline = std::chrono::steady_clock::now() + grace;
      while (true) {
        pid_t reaped = ::waitpid(worker.pid, &wait_status, WNOHANG);
        if (reaped == worker.pid || (reaped < 0 && errno != EINTR)) break;
        if (reaped == 0 && std::chrono::steady_clock::now() >= deadline) {
          ::kill(worker.pid, SIGKILL);
          while (::waitpid(worker.pid, &wait_status, 0) < 0 && errno == EINTR) {
          }
          break;
        }
        if (reaped == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    worker.pid = -1;
    return wait_status;
  }
};

CompilePool::CompilePool(CompilePoolOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  if (options.jobs <= 0) options.jobs = host_compile_jobs();
  if (options.cache_dir.empty()) options.cache_dir = std::filesystem::temp_directory_path() / "tuner-cubins";
  options.cache_dir = std::filesystem::absolute(options.cache_dir);
  if (!options.worker_executable.empty() && ::access(options.worker_executable.c_str(), X_OK) != 0) {
    throw TunerError(fmt::format("compiler worker {} cannot be executed: {}", options.worker_executable.string(),
                                 std::strerror(errno)));
  }
  impl.cache.emplace(options.cache_dir);
  impl.version = nvrtc_version();
  impl.options = std::move(options);

  // Writing to a worker that died must come back as EPIPE, not end this process.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);

  for (int index = 0; index < impl.options.jobs; ++index) impl.workers.push_back(std::make_unique<WorkerProcess>());
  for (auto& worker : impl.workers) {
    impl.dispatchers.emplace_back([&impl, worker = worker.get()] { impl.dispatch_loop(*worker); });
  }
}

CompilePool::~CompilePool() {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.queue_mutex);
    impl.stopping.store(true);
  }
  impl.queue_ready.notify_all();
  for (auto& worker : impl.workers) {
    std::lock_guard lock(worker->mutex);
    // Its dispatcher is blocked reading the reply; killing the process ends that read with end of file.
    if (worker->busy && worker->pid > 0) ::kill(worker->pid, SIGKILL);
  }
  for (std::thread& dispatcher : impl.dispatchers) dispatcher.join();
  for (Pending& item : impl.queue) item.promise.set_value(failed_result(item.key, shutdown_message));
  for (auto& worker : impl.workers) {
    std::lock_guard lock(worker->mutex);
    Impl::stop(*worker, exit_grace);
  }
}

std::future<CompileResult> CompilePool::submit(CompileRequest request) {
  Impl& impl = *impl_;
  Pending item;
  item.key = cache_key(request, impl.version);
  std::future<CompileResult> future = item.promise.get_future();
  if (impl.options.use_cache) {
    if (std::optional<CachedCubin> entry = impl.cache->lookup(item.key)) {
      CompileResult result;
      result.ok = true;
      result.cached = true;
      result.key = item.key;
      result.cubin_path = entry->cubin_path;
      result.lowered_name = entry->lowered_name;
      item.promise.set_value(std::move(result));
      return future;
    }
  }
  item.request = std::move(request);
  {
    std::lock_guard lock(impl.queue_mutex);
    impl.queue.push_back(std::move(item));
  }
  impl.queue_ready.notify_one();
  return future;
}

int host_compile_jobs() {
  // The cores this process may run on: a container or `taskset` limits them below what the host has, and a pool
  // sized by std::thread::hardware_concurrency() would start processes that wait for each other.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::size_t compile_lookahead(int jobs, std::size_t lanes) {
  // A replay compiles nothing: the queue only lets the strategy answer in batches.
  if (jobs <= 0) return 64 + lanes;
  // The pool compiles `jobs` at a time with as many waiting behind them, and each lane needs the configuration it
  // measures next compiled while it measures one: twice the jobs and twice the lanes (one lane: 2 * jobs + 2, the
  // lookahead runs measured before issue 35).
  return 2 * static_cast<std::size_t>(jobs) + 2 * lanes;
}

int CompilePool::jobs() const { return impl_->options.jobs; }

const std::filesystem::path& CompilePool::cache_dir() const { return impl_->options.cache_dir; }

}  // namespace kernlathe
