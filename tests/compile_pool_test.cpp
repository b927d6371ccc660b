#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "compile_test_support.h"
#include "tuner/compile/compile_pool.h"
#include "tuner/compile/compile_worker.h"
#include "tuner/compile/message_pipe.h"

namespace kernlathe {
namespace {

using compile_test::broken_request;
using compile_test::read_file;
using compile_test::scale_request;
using compile_test::TemporaryDirectory;

// The test executable doubles as the compile worker (`test_compile __compile-worker`), so these tests need only
// this module built, not the whole `tune` binary. Runs before main, so gtest never sees the worker's arguments.
const bool started_as_worker = [] {
  std::string arguments = read_file("/proc/self/cmdline");  // argv[0] NUL argv[1] NUL ...
  std::size_t first_end = arguments.find('\0');
  if (first_end != std::string::npos && arguments.compare(first_end + 1, std::string::npos,
                                                          std::string("__compile-worker\0", 17)) == 0) {
    std::exit(compile_worker_main(0, 1));
  }
  return false;
}();

std::filesystem::path this_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

CompilePoolOptions pool_options(const std::filesystem::path& cache_dir, int jobs) {
  CompilePoolOptions options;
  options.jobs = jobs;
  options.cache_dir = cache_dir;
  options.worker_executable = this_executable();
  return options;
}

// ------------------------------------------------------------------------------------------ message framing

TEST(MessagePipe, RoundTripsMessagesLargerThanThePipeBuffer) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  std::string large(1 << 20, 'x');
  large[12345] = '\n';
  large[777] = '\0';
  std::thread writer([&] {
    EXPECT_TRUE(write_message(pipe_ends[1], "first\nline"));
    EXPECT_TRUE(write_message(pipe_ends[1], ""));
    EXPECT_TRUE(write_message(pipe_ends[1], large));
    ::close(pipe_ends[1]);
  });
  EXPECT_EQ(read_message(pipe_ends[0]), std::optional<std::string>("first\nline"));
  EXPECT_EQ(read_message(pipe_ends[0]), std::optional<std::string>(""));
  EXPECT_EQ(read_message(pipe_ends[0]), std::optional<std::string>(large));
  EXPECT_EQ(read_message(pipe_ends[0]), std::nullopt);
  writer.join();
  ::close(pipe_ends[0]);
}

TEST(MessagePipe, EndOfFileInsideAMessageThrows) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const unsigned char header[8] = {10, 0, 0, 0, 0, 0, 0, 0};  // promises 10 bytes, delivers 3
  ASSERT_EQ(::write(pipe_ends[1], header, 8), 8);
  ASSERT_EQ(::write(pipe_ends[1], "abc", 3), 3);
  ::close(pipe_ends[1]);
  EXPECT_THROW(read_message(pipe_ends[0]), TunerError);
  ::close(pipe_ends[0]);
}

TEST(MessagePipe, WritingToAClosedReaderFailsWithoutASignal) {
  std::signal(SIGPIPE, SIG_IGN);
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  ::close(pipe_ends[0]);
  EXPECT_FALSE(write_message(pipe_ends[1], "nobody listens"));
  ::close(pipe_ends[1]);
}

TEST(MessagePipe, RequestAndResultSurviveJson) {
  WorkerRequest original{scale_request(64, true), "/tmp/cubins", false};
  WorkerRequest copy = worker_request_from_json(nlohmann::json::parse(dump_json(to_json(original))));
  EXPECT_EQ(copy.request.source, original.request.source);
  EXPECT_EQ(copy.request.source_name, "scale.cu");
  EXPECT_EQ(copy.request.name_expression, "scale<64, true>");
  EXPECT_EQ(copy.request.options, original.request.options);
  EXPECT_EQ(copy.request.arch, "sm_90");
  EXPECT_EQ(copy.request.headers, original.request.headers);
  EXPECT_EQ(copy.cache_dir, "/tmp/cubins");
  EXPECT_FALSE(copy.use_cache);

  CompileResult result;
  result.ok = true;
  result.log = "warning\nline two";
  result.lowered_name = "_Z1kv";
  result.cubin_path = "/tmp/cubins/abc.cubin";
  result.key = "abc";
  result.compile_ms = 12.5;
  result.cached = true;
  result.error = "none";
  CompileResult back = compile_result_from_json(nlohmann::json::parse(dump_json(to_json(result))));
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.log, result.log);
  EXPECT_EQ(back.lowered_name, "_Z1kv");
  EXPECT_EQ(back.cubin_path, result.cubin_path);
  EXPECT_EQ(back.key, "abc");
  EXPECT_EQ(back.compile_ms, 12.5);
  EXPECT_TRUE(back.cached);
  EXPECT_EQ(back.error, "none");
}

// ------------------------------------------------------------------------------------------ worker

TEST(CompileWorker, AnswersEachRequestAndExitsZeroOnEndOfFile) {
  TemporaryDirectory cache;
  int requests[2];
  int replies[2];
  ASSERT_EQ(::pipe(requests), 0);
  ASSERT_EQ(::pipe(replies), 0);
  for (const CompileRequest& request : {scale_request(32, false), broken_request()}) {
    ASSERT_TRUE(write_message(requests[1], dump_json(to_json(WorkerRequest{request, cache.path().string(), true}))));
  }
  ::close(requests[1]);
  EXPECT_EQ(compile_worker_main(requests[0], replies[1]), 0);
  ::close(replies[1]);
  CompileResult good = compile_result_from_json(nlohmann::json::parse(read_message(replies[0]).value()));
  CompileResult bad = compile_result_from_json(nlohmann::json::parse(read_message(replies[0]).value()));
  EXPECT_EQ(read_message(replies[0]), std::nullopt);
  ::close(requests[0]);
  ::close(replies[0]);
  ASSERT_TRUE(good.ok) << good.error;
  EXPECT_EQ(good.lowered_name, "_Z5scaleILi32ELb0EEvPfif");
  EXPECT_TRUE(std::filesystem::is_regular_file(good.cubin_path));
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("broken.cu(3): error"), std::string::npos) << bad.log;
}

// ------------------------------------------------------------------------------------------ pool

TEST(CompilePool, EightRequestsOnTwoWorkersMatchInProcessCompilation) {
  TemporaryDirectory pool_cache;
  TemporaryDirectory serial_cache;
  std::vector<CompileRequest> requests;
  for (int block : {32, 64, 128, 256}) {
    for (bool negate : {false, true}) requests.push_back(scale_request(block, negate));
  }
  std::vector<std::future<CompileResult>> futures;
  {
    ASSERT_FALSE(started_as_worker);
    CompilePool pool(pool_options(pool_cache.path(), 2));
    EXPECT_EQ(pool.jobs(), 2);
    for (const CompileRequest& request : requests) futures.push_back(pool.submit(request));
    for (std::size_t index = 0; index < requests.size(); ++index) {
      CompileResult pooled = futures[index].get();
      CompileResult serial = compile_cubin(requests[index], serial_cache.path());
      ASSERT_TRUE(pooled.ok) << requests[index].name_expression << ": " << pooled.error;
      ASSERT_TRUE(serial.ok) << serial.error;
      EXPECT_FALSE(pooled.cached);
      EXPECT_GT(pooled.compile_ms, 0);
      EXPECT_EQ(pooled.lowered_name, serial.lowered_name);
      EXPECT_EQ(pooled.key, serial.key);
      EXPECT_EQ(pooled.cubin_path, pool_cache.path() / (serial.key + ".cubin"));
      EXPECT_EQ(read_file(pooled.cubin_path), read_file(serial.cubin_path)) << requests[index].name_expression;
    }
    // Submitted again: answered from the cache without a worker round trip.
    std::future<CompileResult> again = pool.submit(requests[3]);
    ASSERT_EQ(again.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    CompileResult hit = again.get();
    EXPECT_TRUE(hit.ok);
    EXPECT_TRUE(hit.cached);
    EXPECT_EQ(hit.compile_ms, 0);
    EXPECT_EQ(hit.lowered_name, "_Z5scaleILi64ELb1EEvPfif");
  }
}

TEST(CompilePool, CompileErrorArrivesWithItsLog) {
  TemporaryDirectory cache;
  CompilePool pool(pool_options(cache.path(), 1));
  CompileResult result = pool.submit(broken_request()).get();
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("broken.cu(3): error"), std::string::npos) << result.log;
  EXPECT_EQ(result.error.rfind("broken.cu(3): error", 0), 0u) << result.error;
  // The worker survives a compile error and serves the next request.
  CompileResult next = pool.submit(scale_request(32, true)).get();
  EXPECT_TRUE(next.ok) << next.error;
}

TEST(CompilePool, WorkerThatDiesFailsItsRequestAndIsRestarted) {
  TemporaryDirectory directory;
  std::filesystem::path crashing_worker = directory.path() / "crashing_worker.sh";
  std::ofstream(crashing_worker) << "#!/bin/sh\nkill -SEGV $$\n";
  std::filesystem::permissions(crashing_worker, std::filesystem::perms::owner_all);
  CompilePoolOptions options = pool_options(directory.path() / "cubins", 1);
  options.worker_executable = crashing_worker;
  CompilePool pool(options);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second one needs a restarted process
    CompileResult result = pool.submit(scale_request(32, false)).get();
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.error, "compiler process died (signal 11)");
    EXPECT_FALSE(result.key.empty());
  }
}

TEST(CompilePool, WorkerThatExitsIsReportedWithItsStatus) {
  TemporaryDirectory directory;
  std::filesystem::path quitting_worker = directory.path() / "quitting_worker.sh";
  std::ofstream(quitting_worker) << "#!/bin/sh\nexit 7\n";
  std::filesystem::permissions(quitting_worker, std::filesystem::perms::owner_all);
  CompilePoolOptions options = pool_options(directory.path() / "cubins", 1);
  options.worker_executable = quitting_worker;
  CompilePool pool(options);
  CompileResult result = pool.submit(scale_request(32, false)).get();
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error, "compiler process exited with status 7");
}

TEST(CompilePool, DestructorWithPendingRequestsDoesNotHang) {
  TemporaryDirectory cache;
  std::vector<std::future<CompileResult>> futures;
  auto start = std::chrono::steady_clock::now();
  {
    CompilePool pool(pool_options(cache.path(), 1));
    for (int block = 1; block <= 12; ++block) futures.push_back(pool.submit(scale_request(32 * block, false)));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  int shut_down = 0;
  for (auto& future : futures) {
    ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    CompileResult result = future.get();
    if (!result.ok) {
      EXPECT_EQ(result.error, "compile pool shut down before this request was compiled");
      ++shut_down;
    }
  }
  EXPECT_GE(shut_down, 10) << "twelve compiles cannot finish before an immediate shutdown";
}

TEST(CompilePool, UseCacheFalseCompilesAgain) {
  TemporaryDirectory cache;
  CompilePoolOptions options = pool_options(cache.path(), 1);
  options.use_cache = false;
  CompilePool pool(options);
  ASSERT_TRUE(pool.submit(scale_request(64, false)).get().ok);
  CompileResult again = pool.submit(scale_request(64, false)).get();
  EXPECT_TRUE(again.ok);
  EXPECT_FALSE(again.cached);
  EXPECT_GT(again.compile_ms, 0);
}

TEST(CompilePool, WithoutWorkerExecutableCompilesInProcess) {
  TemporaryDirectory cache;
  CompilePoolOptions options;
  options.jobs = 2;
  options.cache_dir = cache.path();
  CompilePool pool(options);
  std::future<CompileResult> first = pool.submit(scale_request(32, false));
  std::future<CompileResult> second = pool.submit(scale_request(32, true));
  CompileResult first_result = first.get();
  CompileResult second_result = second.get();
  ASSERT_TRUE(first_result.ok) << first_result.error;
  ASSERT_TRUE(second_result.ok) << second_result.error;
  EXPECT_EQ(first_result.lowered_name, "_Z5scaleILi32ELb0EEvPfif");
  EXPECT_EQ(second_result.lowered_name, "_Z5scaleILi32ELb1EEvPfif");
}

TEST(CompilePool, MissingWorkerExecutableThrows) {
  TemporaryDirectory cache;
  CompilePoolOptions options = pool_options(cache.path(), 1);
  options.worker_executable = cache.path() / "no-such-tune";
  EXPECT_THROW(CompilePool pool(options), TunerError);
}

TEST(CompilePool, ZeroJobsMeansOnePerCoreThisProcessMayUse) {
  TemporaryDirectory cache;
  CompilePool pool(pool_options(cache.path(), 0));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
  EXPECT_EQ(pool.jobs(), CPU_COUNT(&allowed));
  EXPECT_EQ(host_compile_jobs(), CPU_COUNT(&allowed));
  EXPECT_LE(pool.jobs(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(CompileLookahead, GrowsWithTheLanesAndKeepsTheOneLaneDepth) {
  EXPECT_EQ(compile_lookahead(16, 1), 34u);  // 2 * 16 + 1 + 1, the depth one GPU always had
  EXPECT_EQ(compile_lookahead(16, 4), 40u);  // every lane has its next configuration compiled
  EXPECT_EQ(compile_lookahead(64, 8), 144u);
  EXPECT_EQ(compile_lookahead(0, 3), 67u);   // a replay compiles nothing: 64 and the lanes, as before
}

}  // namespace
}  // namespace kernlathe
