#include "tuner/run/protocol.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace kernlathe {
namespace {

KernelLaunch sample_launch() {
  KernelLaunch launch;
  launch.cubin_path = "/tmp/cubins/abc.cubin";
  launch.lowered_name = "_Z5saxpyILi128EEvifPKfPf";
  launch.grid = {4096, 2, 1};
  launch.block = {128, 1, 1};
  launch.dynamic_shared_bytes = 65536;
  launch.scalar_values["n"] = std::int64_t{1} << 40;  // beyond what a double would keep if read as float
  launch.scalar_values["alpha"] = 2.0;                // a whole double stays a double
  return launch;
}

TEST(Protocol, KernelLaunchRoundTripKeepsIntegerAndFloatScalars) {
  KernelLaunch decoded = protocol::decode_launch(protocol::encode(sample_launch()));
  EXPECT_EQ(decoded.cubin_path, "/tmp/cubins/abc.cubin");
  EXPECT_EQ(decoded.lowered_name, "_Z5saxpyILi128EEvifPKfPf");
  EXPECT_EQ(decoded.grid, (std::array<std::int64_t, 3>{4096, 2, 1}));
  EXPECT_EQ(decoded.block, (std::array<std::int64_t, 3>{128, 1, 1}));
  EXPECT_EQ(decoded.dynamic_shared_bytes, 65536);
  ASSERT_TRUE(std::holds_alternative<std::int64_t>(decoded.scalar_values.at("n")));
  EXPECT_EQ(std::get<std::int64_t>(decoded.scalar_values.at("n")), std::int64_t{1} << 40);
  ASSERT_TRUE(std::holds_alternative<double>(decoded.scalar_values.at("alpha")));
  EXPECT_EQ(std::get<double>(decoded.scalar_values.at("alpha")), 2.0);
}

TEST(Protocol, SetupRoundTrip) {
  WorkerSetup setup;
  setup.device = 1;
  WorkerArgument x{"x", Dtype::bf16, true, 1 << 20, {}, Role::in, -1, {}, {}};
  x.init = {Initialisation::Kind::random, 7, -0.5, 0.5, 0, 0, 1};
  WorkerArgument y{"y", Dtype::f32, true, 1 << 20, {}, Role::inout, -1, {}, {}};
  y.init = {Initialisation::Kind::sequence, 1, -1, 1, 0, 3.0, 0.25};
  WorkerArgument n{"n", Dtype::i32, false, 0, {}, Role::in, -1, {}, {}};
  setup.arguments = {x, y, n};
  setup.tolerance[Dtype::f32] = {1e-5, 1e-6};
  setup.tolerance[Dtype::bf16] = {1e-2, 1e-3};
  setup.verification_enabled = false;
  setup.reference = sample_launch();
  setup.measurement.cold = true;
  setup.measurement.max_samples = 77;
  setup.measurement.min_seconds = 0.25;
  setup.measurement.energy_periods = 4;
  setup.measurement.busy_warmup_ms = 3.5;
  setup.measurement.idle_gap_ms = 80;

  WorkerSetup decoded = protocol::decode_setup(protocol::encode(setup));
  EXPECT_EQ(decoded.device, 1);
  ASSERT_EQ(decoded.arguments.size(), 3u);
  EXPECT_EQ(decoded.arguments[0].dtype, Dtype::bf16);
  EXPECT_EQ(decoded.arguments[0].init.seed, 7u);
  EXPECT_EQ(decoded.arguments[0].init.low, -0.5);
  EXPECT_EQ(decoded.arguments[1].role, Role::inout);
  EXPECT_EQ(decoded.arguments[1].init.kind, Initialisation::Kind::sequence);
  EXPECT_EQ(decoded.arguments[1].init.step, 0.25);
  EXPECT_EQ(decoded.arguments[1].element_count, 1 << 20);
  EXPECT_FALSE(decoded.arguments[2].is_buffer);
  EXPECT_EQ(decoded.tolerance.at(Dtype::bf16).relative, 1e-2);
  EXPECT_EQ(decoded.tolerance.at(Dtype::f32).absolute, 1e-6);
  EXPECT_FALSE(decoded.verification_enabled);
  ASSERT_TRUE(decoded.reference.has_value());
  EXPECT_EQ(decoded.reference->lowered_name, "_Z5saxpyILi128EEvifPKfPf");
  EXPECT_TRUE(decoded.measurement.cold);
  EXPECT_EQ(decoded.measurement.max_samples, 77);
  EXPECT_EQ(decoded.measurement.min_seconds, 0.25);
  EXPECT_EQ(decoded.measurement.energy_periods, 4);
  EXPECT_EQ(decoded.measurement.busy_warmup_ms, 3.5);
  EXPECT_EQ(decoded.measurement.idle_gap_ms, 80);
}

TEST(Protocol, TensorMapsAndBaselineRoundTrip) {
  WorkerSetup setup;
  WorkerArgument a{"a", Dtype::f16, true, 64 * 16, {}, Role::in, -1, {}, {}};
  WorkerArgument map{"a_map", Dtype::f16, false, 0, {}, Role::in, -1, {}, {}};
  map.tensor_buffer = 0;
  map.tensor_dims = {16, 64};
  map.tensor_strides = {24};  // rows of 24 elements, 16 of them in the view
  WorkerArgument c{"c", Dtype::f16, true, 64 * 32, {}, Role::out, -1, {}, {}};
  setup.arguments = {a, map, c};
  setup.reference = sample_launch();
  setup.reference->tensor_maps["a_map"] = {{16, 128}, 32};
  BaselineCall call;
  call.library = "cublas";
  call.operation = "gemm";
  call.compute = "tf32";
  call.m = 64;
  call.n = 32;
  call.k = 16;
  call.a = 0;
  call.b = 0;
  call.c = 2;
  call.alpha = 1.5;
  call.beta = -0.25;
  setup.baseline = call;
  setup.reference_from_baseline = true;

  WorkerSetup decoded = protocol::decode_setup(protocol::encode(setup));
  ASSERT_EQ(decoded.arguments.size(), 3u);
  EXPECT_FALSE(decoded.arguments[0].is_tensor_map());
  EXPECT_TRUE(decoded.arguments[1].is_tensor_map());
  EXPECT_EQ(decoded.arguments[1].tensor_buffer, 0);
  EXPECT_EQ(decoded.arguments[1].tensor_dims, (std::vector<std::int64_t>{16, 64}));
  EXPECT_EQ(decoded.arguments[1].tensor_strides, std::vector<std::int64_t>{24});
  EXPECT_TRUE(decoded.arguments[0].tensor_strides.empty());
  const TensorMapBox& box = decoded.reference->tensor_maps.at("a_map");
  EXPECT_EQ(box.box, (std::vector<std::int64_t>{16, 128}));
  EXPECT_EQ(box.swizzle_bytes, 32);
  ASSERT_TRUE(decoded.baseline.has_value());
  EXPECT_EQ(decoded.baseline->compute, "tf32");
  EXPECT_EQ(decoded.baseline->m, 64);
  EXPECT_EQ(decoded.baseline->c, 2);
  EXPECT_EQ(decoded.baseline->alpha, 1.5);
  EXPECT_EQ(decoded.baseline->beta, -0.25);
  EXPECT_TRUE(decoded.reference_from_baseline);

  WorkerSetup without = protocol::decode_setup(protocol::encode(WorkerSetup{}));
  EXPECT_FALSE(without.baseline.has_value());
  EXPECT_FALSE(without.reference_from_baseline);
  // The reference launch travels in its own message when the tuner compiles it during the setup.
  EXPECT_FALSE(without.reference.has_value());
  EXPECT_TRUE(without.cubin_cache_dir.empty());
}

TEST(Protocol, TheCubinCacheTravelsAndWhoWaitsForAReferenceLaunchIsDecidedByTheSetup) {
  WorkerSetup setup;
  setup.cubin_cache_dir = "/tmp/kernlathe-cubins";
  EXPECT_EQ(protocol::decode_setup(protocol::encode(setup)).cubin_cache_dir, "/tmp/kernlathe-cubins");
  // A kernel of the template is the reference: verified, baseline not the reference.
  EXPECT_TRUE(needs_reference_kernel(setup));
  setup.reference_from_baseline = true;  // cuBLAS computes the reference (GEMM)
  EXPECT_FALSE(needs_reference_kernel(setup));
  setup.reference_from_baseline = false;
  setup.verification_enabled = false;  // nothing verified: no reference run
  EXPECT_FALSE(needs_reference_kernel(setup));
  setup.stream = WorkerStream{};  // a streamed spec always runs its naive reference pass
  EXPECT_TRUE(needs_reference_kernel(setup));
}

TEST(Protocol, RequestRoundTrip) {
  EvaluationRequest request{sample_launch(), false, 2.5, std::nullopt};
  request.measure_energy = true;
  request.burst = true;
  request.sustained_seconds = 0.5;
  EvaluationRequest decoded = protocol::decode_request(protocol::encode(request));
  EXPECT_FALSE(decoded.verify);
  EXPECT_TRUE(decoded.measure_energy);
  EXPECT_TRUE(decoded.burst);
  EXPECT_EQ(decoded.sustained_seconds, 0.5);
  EXPECT_FALSE(protocol::decode_request(protocol::encode(EvaluationRequest{sample_launch(), true, 1, std::nullopt})).burst);
  EXPECT_EQ(decoded.timeout_seconds, 2.5);
  EXPECT_EQ(decoded.launch.grid[0], 4096);
}

TEST(Protocol, EvaluationRoundTripLeavesConfigurationOut) {
  Evaluation evaluation;
  evaluation.configuration = {Value{std::int64_t{128}}};
  evaluation.status = Status::wrong_result;
  evaluation.message = "y: 1 of 8 elements differ, first at index 3: got nan, expected 1";
  evaluation.time = {0.5, 0.4, 0.9, 0.01, 42, 0.45, 0.55};
  evaluation.registers = 40;
  evaluation.static_shared_bytes = 1024;
  evaluation.dynamic_shared_bytes = 70000;
  evaluation.threads_per_block = 256;
  evaluation.occupancy = 0.75;
  evaluation.sm_clock_mhz = 1980;
  evaluation.throttle_reasons = 0x4;
  evaluation.power_w = 612.5;
  evaluation.temperature_c = 61;
  evaluation.energy_mj = 0.31;
  evaluation.energy_window_ms = 201.5;
  evaluation.max_error = 1e-3;
  evaluation.timestamp = 1.7e9;
  evaluation.worker_stages = {0.25, 1.5, 2.0, 3.25, 0.125, 0.0};

  nlohmann::json document = protocol::encode(evaluation);
  EXPECT_FALSE(document.contains("configuration"));
  Evaluation decoded = protocol::decode_evaluation(document);
  EXPECT_TRUE(decoded.configuration.empty());
  EXPECT_EQ(decoded.status, Status::wrong_result);
  EXPECT_EQ(decoded.message, evaluation.message);
  EXPECT_EQ(decoded.time.median_ms, 0.5);
  EXPECT_EQ(decoded.time.samples, 42);
  EXPECT_EQ(decoded.time.low_ms, 0.45);
  EXPECT_EQ(decoded.time.high_ms, 0.55);
  EXPECT_EQ(decoded.power_w, 612.5);
  EXPECT_EQ(decoded.temperature_c, 61);
  EXPECT_EQ(decoded.energy_mj, 0.31);
  EXPECT_EQ(decoded.energy_window_ms, 201.5);
  EXPECT_EQ(decoded.registers, 40);
  EXPECT_EQ(decoded.dynamic_shared_bytes, 70000);
  EXPECT_EQ(decoded.occupancy, 0.75);
  EXPECT_EQ(decoded.throttle_reasons, 0x4u);
  EXPECT_EQ(decoded.max_error, 1e-3);
  EXPECT_EQ(decoded.timestamp, 1.7e9);
  EXPECT_EQ(decoded.worker_stages.preparation_ms, 0.25);
  EXPECT_EQ(decoded.worker_stages.verification_ms, 1.5);
  EXPECT_EQ(decoded.worker_stages.warmup_ms, 2.0);
  EXPECT_EQ(decoded.worker_stages.sampling_ms, 3.25);
  EXPECT_EQ(decoded.worker_stages.conditions_ms, 0.125);
  EXPECT_EQ(decoded.worker_stages.total_ms(), 7.125);
}

TEST(Protocol, DeviceInfoRoundTrip) {
  gpu::DeviceInfo info;
  info.properties.name = "NVIDIA H200";
  info.properties.arch_major = 9;
  info.properties.sm_count = 132;
  info.properties.max_shared_memory_per_block = 232448;
  info.properties.l2_cache_bytes = 52428800;
  info.properties.from_hardware = true;
  info.pci_bus_id = "0000:3B:00.0";
  info.cuda_driver_version = "13.0";
  info.driver_version = "580.159";
  info.total_memory_bytes = 150000000000;
  gpu::DeviceInfo decoded = protocol::decode_device_info(protocol::encode(info));
  EXPECT_EQ(decoded.properties.name, "NVIDIA H200");
  EXPECT_EQ(decoded.properties.arch_major, 9);
  EXPECT_EQ(decoded.properties.sm_count, 132);
  EXPECT_EQ(decoded.properties.max_shared_memory_per_block, 232448);
  EXPECT_EQ(decoded.properties.l2_cache_bytes, 52428800);
  EXPECT_TRUE(decoded.properties.from_hardware);
  EXPECT_EQ(decoded.pci_bus_id, "0000:3B:00.0");
  EXPECT_EQ(decoded.driver_version, "580.159");
  EXPECT_EQ(decoded.total_memory_bytes, 150000000000);
}

TEST(Protocol, MalformedDocumentNamesTheMessage) {
  nlohmann::json document = protocol::encode(sample_launch());
  document.erase("lowered_name");
  try {
    protocol::decode_launch(document);
    FAIL() << "no exception";
  } catch (const TunerError& error) {
    EXPECT_NE(std::string(error.what()).find("malformed kernel launch message"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("lowered_name"), std::string::npos) << error.what();
  }
  nlohmann::json evaluation = protocol::encode(Evaluation{});
  evaluation["status"] = "exploded";
  EXPECT_THROW(protocol::decode_evaluation(evaluation), TunerError);
}

TEST(Framing, MessagesCrossASocketAndCloseReadsAsClosed) {
  int sockets[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sockets), 0);
  nlohmann::json big = {{"type", "setup"}, {"payload", std::string(1 << 20, 'x')}};  // larger than a socket buffer
  std::thread writer([&] {
    protocol::write_message(sockets[0], big);
    protocol::write_message(sockets[0], {{"type", "second"}});
    close(sockets[0]);
  });
  protocol::ReadResult first = protocol::read_message(sockets[1]);
  protocol::ReadResult second = protocol::read_message(sockets[1]);
  protocol::ReadResult end = protocol::read_message(sockets[1]);
  writer.join();
  close(sockets[1]);
  ASSERT_EQ(first.outcome, protocol::ReadOutcome::message);
  EXPECT_EQ(first.message, big);
  ASSERT_EQ(second.outcome, protocol::ReadOutcome::message);
  EXPECT_EQ(second.message["type"], "second");
  EXPECT_EQ(end.outcome, protocol::ReadOutcome::closed);
}

TEST(Framing, DeadlinePassesWithoutAMessage) {
  int sockets[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sockets), 0);
  auto start = std::chrono::steady_clock::now();
  protocol::ReadResult result = protocol::read_message(sockets[1], start + std::chrono::milliseconds(100));
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.outcome, protocol::ReadOutcome::timed_out);
  EXPECT_GE(waited, 0.09);
  EXPECT_LT(waited, 2.0);
  close(sockets[0]);
  close(sockets[1]);
}

TEST(Framing, WritingToAClosedPeerThrowsInsteadOfSigpipe) {
  int sockets[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sockets), 0);
  close(sockets[1]);
  EXPECT_THROW(protocol::write_message(sockets[0], {{"type", "x"}}), TunerError);
  close(sockets[0]);
}

}  // namespace
}  // namespace kernlathe
