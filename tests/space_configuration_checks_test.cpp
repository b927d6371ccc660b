// Checks of a spec that need its space enumerated with device properties and problem values (`tune validate`):
// default and reference configurations against the constraints, buffer counts, launch geometry.
#include "tuner/space/configuration_checks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

Constants constants_for(const KernelSpec& spec) {
  Constants constants = device_property_values(device_profile("sm_90"));
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  return constants;
}

class ConfigurationChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / fmt::format("configuration_checks_test_{}_{}", getpid(),
                                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(directory_);
    std::ofstream(directory_ / "kernel.cu") << "__global__ void k(float* x) {}\n";
  }
  void TearDown() override { fs::remove_all(directory_); }

  // Line numbers: the constraint is on line 7, the buffer count on line 9, launch on line 10, extra lines from 11.
  KernelSpec spec(const std::string& constraint, const std::string& count, const std::string& launch,
                  const std::string& extra = "") {
    return parse_kernel_spec("name: t\n"                                                   // 1
                             "template: kernel.cu\n"                                       // 2
                             "entry: k\n"                                                  // 3
                             "problem: {N: 4096}\n"                                        // 4
                             "space:\n  parameters: [{name: B, values: [64, 128, 256], default: 128}]\n"  // 5, 6
                             "  constraints: [\"" + constraint + "\"]\n"                     // 7
                             "arguments:\n  - {name: x, type: f32, count: \"" + count + "\"}\n"  // 8, 9
                             "launch: " + launch + "\n" + extra,                           // 10, 11...
                             file());
  }
  std::string error_of(const KernelSpec& kernel) {
    try {
      SpaceEnumerator space(kernel.space, constants_for(kernel));
      check_spec_configurations(kernel, space);
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  }
  fs::path file() const { return directory_ / "spec.yaml"; }
  std::string at(int line) const { return fmt::format("{}:{}:", file().string(), line); }

  fs::path directory_;
};

const std::string good_launch = "{grid: [\"N // B\"], block: [B], shared_memory: \"B * 4\"}";

TEST_F(ConfigurationChecksTest, AValidSpecPasses) {
  EXPECT_EQ(error_of(spec("B <= max_threads_per_block", "N", good_launch, "verify: {reference: {B: 64}}\n")),
            "no error");
}

TEST_F(ConfigurationChecksTest, ADefaultBreakingAConstraintGivesWayToTheFirstValidConfiguration) {
  const KernelSpec kernel = spec("B != 128", "N", good_launch);
  EXPECT_EQ(error_of(kernel), "no error");
  const SpaceEnumerator space(kernel.space, constants_for(kernel));
  const RunDefault run_default = run_default_configuration(kernel, space);
  EXPECT_EQ(run_default.values, (Configuration{Value{std::int64_t{64}}}));
  EXPECT_NE(run_default.fallback_note.find("the declared default configuration (B=128) breaks the constraint "
                                           "'B != 128' (" + at(7)),
            std::string::npos)
      << run_default.fallback_note;
  EXPECT_NE(run_default.fallback_note.find("the first valid configuration (B=64) stands for the default"),
            std::string::npos)
      << run_default.fallback_note;
}

TEST_F(ConfigurationChecksTest, AValidDefaultStandsAsDeclared) {
  const KernelSpec kernel = spec("B >= 128", "N", good_launch);
  const SpaceEnumerator space(kernel.space, constants_for(kernel));
  const RunDefault run_default = run_default_configuration(kernel, space);
  EXPECT_EQ(run_default.values, (Configuration{Value{std::int64_t{128}}}));
  EXPECT_EQ(run_default.fallback_note, "");
}

TEST_F(ConfigurationChecksTest, TheRunStartsFromTheSpacesDefaultForItsProblem) {
  const auto kernel_at = [&](std::int64_t n) {
    return parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: 4096}\n"            // 1-4
                             "space:\n  parameters: [{name: B, values: [64, 128, 256], default: 128}]\n"  // 5, 6
                             "  constraints: [\"N % B == 0\"]\n"                                          // 7
                             "  problem_defaults:\n"                                                    // 8
                             "    - {when: N <= 512, values: {B: 256}}\n"                                // 9
                             "    - {when: N > 512 and N <= 1024, values: {B: 64}}\n"                   // 10
                             "arguments:\n  - {name: x, type: f32, count: N}\nlaunch: {grid: [\"N // B\"], block: [B]}\n",
                             file(), {{"N", n}});
  };
  const auto run_default_at = [&](std::int64_t n) {
    const KernelSpec kernel = kernel_at(n);
    return run_default_for_problem(kernel, SpaceEnumerator(kernel.space, constants_for(kernel)));
  };
  // No condition holds: the declared default, nothing said.
  const RunDefault at_4096 = run_default_at(4096);
  EXPECT_EQ(at_4096.values, (Configuration{Value{std::int64_t{128}}}));
  EXPECT_EQ(at_4096.fallback_note, "");
  // N=640: the second holds.
  const RunDefault at_640 = run_default_at(640);
  EXPECT_EQ(at_640.values, (Configuration{Value{std::int64_t{64}}}));
  EXPECT_EQ(at_640.fallback_note, fmt::format("the space's default for this problem (N > 512 and N <= 1024 holds, "
                                              "{}:10:7) stands for the default configuration: B=64",
                                              file().string()));
  // N=384: the first holds but 256 does not divide 384; the declared default does, and the note says why.
  const RunDefault at_384 = run_default_at(384);
  EXPECT_EQ(at_384.values, (Configuration{Value{std::int64_t{128}}}));
  EXPECT_EQ(at_384.fallback_note.rfind(fmt::format("the space's default for this problem (N <= 512 holds, {}:9:7) "
                                                   "breaks the constraint 'N % B == 0' ({}:7:",
                                                   file().string(), file().string()),
                                       0),
            0u)
      << at_384.fallback_note;
  EXPECT_NE(at_384.fallback_note.find("; the declared defaults stand for the default configuration"), std::string::npos)
      << at_384.fallback_note;
  // --config keeps the declared defaults for what it does not name.
  const KernelSpec kernel = kernel_at(640);
  EXPECT_EQ(run_default_configuration(kernel, SpaceEnumerator(kernel.space, constants_for(kernel))).values,
            (Configuration{Value{std::int64_t{128}}}));
}

TEST_F(ConfigurationChecksTest, GivenConfigurationsTakeTheirValuesAndTheDefaultForTheRest) {
  const KernelSpec kernel = parse_kernel_spec(
      "name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: 4096}\n"
      "space: {parameters: [{name: B, values: [64, 128, 256], default: 128}, {name: U, type: bool, default: true},"
      " {name: L, type: enum, values: [row, col]}], constraints: [\"B * 2 <= 256 or not U\"]}\n"
      "arguments:\n  - {name: x, type: f32, count: N}\nlaunch: {grid: [1], block: [B]}\n",
      file());
  const SpaceEnumerator space(kernel.space, constants_for(kernel));
  const auto configuration = [](std::int64_t b, bool u, const char* l) {
    return Configuration{Value{b}, Value{u}, Value{std::string(l)}};
  };
  EXPECT_EQ(given_configuration("B=64", kernel, space), configuration(64, true, "row"));
  EXPECT_EQ(given_configuration("L=col,U=false,B=256", kernel, space), configuration(256, false, "col"));
  const auto refusal = [&](const std::string& text) {
    try {
      given_configuration(text, kernel, space);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("B=96"), "--config B=96: 96 is not one of the values of 'B' (64, 128, 256)");
  EXPECT_EQ(refusal("U=maybe"), "--config U=maybe: maybe is not one of the values of 'U' (false, true)");
  const std::string unknown = refusal("THREADS=1");
  EXPECT_EQ(unknown.rfind("--config THREADS=1: 'THREADS' is not a parameter of the space", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("; the parameters are B, U, L"), std::string::npos) << unknown;
  EXPECT_EQ(refusal("B=64,B=128"), "--config B=64,B=128: 'B' is given twice");
  EXPECT_EQ(refusal("B=64,"), "--config B=64,: '' is not NAME=VALUE (configurations are given as B=...,U=...)");
  EXPECT_EQ(refusal("B=256"), "--config B=256: the configuration B=256 U=true L=row breaks the constraint "
                              "'B * 2 <= 256 or not U' (" + file().string() + ":5:168)");
}

TEST_F(ConfigurationChecksTest, ReferenceConfigurationBreakingAConstraint) {
  std::string message = error_of(spec("B >= 128", "N", good_launch, "verify: {reference: {B: 64}}\n"));
  EXPECT_EQ(message.rfind(at(11) + "21:", 0), 0u) << message;
  EXPECT_NE(message.find("verify.reference (B=64, unnamed parameters at their defaults) breaks the constraint "
                         "'B >= 128' (" + at(7)),
            std::string::npos)
      << message;
}

// A list of references: the first valid at the problem is the reference (the fused GEMMs: simt where it applies,
// else wgmma); where none is, the error names the first's broken constraint and that the others break too.
TEST_F(ConfigurationChecksTest, ReferenceListTakesTheFirstValidMapping) {
  const KernelSpec kernel = spec("B >= 128", "N", good_launch, "verify: {reference: [{B: 64}, {B: 256}]}\n");
  EXPECT_EQ(error_of(kernel), "no error");
  ASSERT_EQ(kernel.verification.reference_alternatives.size(), 1u);
  const SpaceEnumerator space(kernel.space, constants_for(kernel));
  EXPECT_EQ(reference_configuration(kernel, space), (Configuration{Value{std::int64_t{256}}}));
  const KernelSpec valid_first = spec("B >= 64", "N", good_launch, "verify: {reference: [{B: 64}, {B: 256}]}\n");
  const SpaceEnumerator all(valid_first.space, constants_for(valid_first));
  EXPECT_EQ(reference_configuration(valid_first, all), (Configuration{Value{std::int64_t{64}}}));
}

TEST_F(ConfigurationChecksTest, ReferenceListWithNoValidMappingNamesTheFirst) {
  std::string message = error_of(spec("B == 128", "N", good_launch, "verify: {reference: [{B: 64}, {B: 256}]}\n"));
  EXPECT_EQ(message.rfind(at(11) + "21:", 0), 0u) << message;
  EXPECT_NE(message.find("verify.reference (B=64, unnamed parameters at their defaults) breaks the constraint "
                         "'B == 128' (" + at(7) + "18) with problem N=4096, and the list's other mapping breaks a "
                         "constraint too"),
            std::string::npos)
      << message;
}

TEST_F(ConfigurationChecksTest, ReferenceIsNotCheckedWhenVerificationIsOff) {
  EXPECT_EQ(error_of(spec("B >= 128", "N", good_launch, "verify: {enabled: false, reference: {B: 64}}\n")),
            "no error");
}

TEST_F(ConfigurationChecksTest, NegativeBufferCount) {
  std::string message = error_of(spec("True", "N - 5000", good_launch));
  EXPECT_EQ(message.rfind(at(9), 0), 0u) << message;
  EXPECT_NE(message.find("the count of buffer 'x' ('N - 5000') is -904 with problem N=4096; a count may not be "
                         "negative"),
            std::string::npos)
      << message;
}

TEST_F(ConfigurationChecksTest, BufferBytesOverflowing) {
  std::string message = error_of(spec("True", "N * 2 ** 50", good_launch));
  EXPECT_EQ(message.rfind(at(9), 0), 0u) << message;
  EXPECT_NE(message.find("is 4611686018427387904 elements of 4 bytes with problem N=4096: more bytes than a 64-bit "
                         "size holds"),
            std::string::npos)
      << message;
}

TEST_F(ConfigurationChecksTest, BlockDimensionBelowOneForTheDefault) {
  std::string message = error_of(spec("True", "N", "{grid: [1], block: [\"B - 128\"]}"));
  EXPECT_EQ(message.rfind(at(10), 0), 0u) << message;
  EXPECT_NE(message.find("launch.block[0] 'B - 128' is 0 for the default configuration B=128 and problem N=4096; a "
                         "dimension must be at least 1"),
            std::string::npos)
      << message;
  std::string constant = error_of(spec("True", "N", "{grid: [1], block: [32, -2]}"));
  EXPECT_NE(constant.find("launch.block[1] '-2' is -2"), std::string::npos) << constant;
}

TEST_F(ConfigurationChecksTest, GridDimensionBelowOne) {
  std::string message = error_of(spec("True", "N", "{grid: [\"N // 8192\"], block: [B]}"));
  EXPECT_NE(message.find("launch.grid[0] 'N // 8192' is 0 for the default configuration"), std::string::npos)
      << message;
}

TEST_F(ConfigurationChecksTest, NegativeSharedMemory) {
  std::string message = error_of(spec("True", "N", "{grid: [1], block: [B], shared_memory: \"1024 - B * 16\"}"));
  EXPECT_EQ(message.rfind(at(10), 0), 0u) << message;
  EXPECT_NE(message.find("launch.shared_memory '1024 - B * 16' is -1024 bytes for the default configuration B=128"),
            std::string::npos)
      << message;
}

TEST_F(ConfigurationChecksTest, AnInvalidDefaultIsAllowedWhereTheBaselineIsTheReference) {
  const std::string baseline =
      "baseline: {library: cublas, operation: gemm, compute: f32, m: N, n: 1, k: 1, a: x, b: x, c: x, alpha: s, "
      "beta: s}\nverify: {reference: baseline}\n";
  KernelSpec kernel = parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: 4096}\n"
                                        "space: {parameters: [{name: B, values: [64, 128], default: 128}], "
                                        "constraints: [B != 128]}\n"
                                        "arguments:\n  - {name: x, type: f32, count: N}\n  - {name: s, type: f32, value: 1}\n"
                                        "launch: {grid: [1], block: [\"B - 64\"]}\n" + baseline,
                                        file());
  // The geometry is then checked with the first valid configuration, B=64.
  std::string message = error_of(kernel);
  EXPECT_NE(message.find("launch.block[0] 'B - 64' is 0 for the first valid configuration B=64 and problem N=4096"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace kernlathe
