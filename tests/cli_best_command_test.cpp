// `tune best --select` end to end without a GPU: what the runtime would launch for a problem on an arch's profile or
// a named board, from a planted database (a tiled kernel whose space defaults break M % BM == 0 at M=1000), the
// runtime's own error with exit 1 when nothing is usable, and exit 2 for bad options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_support.h"
#include "kernlathe/database.h"
#include "runtime_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

using cli_test::CommandResult;
using cli_test::run_tune;

// Tiles that must divide the problem, and a persistent CTA count that must fit the SMs. One entry, tuned on an H200
// at the default problem.
KernelDatabase tiled_database() {
  KernelDatabase database = runtime_test::tiled_database_with(
      {{"BM", "integer", {std::int64_t{8}, std::int64_t{128}}},
       {"BN", "integer", {std::int64_t{64}, std::int64_t{128}}},
       {"CTAS", "integer", {std::int64_t{114}, std::int64_t{132}}}},
      {"M % BM == 0", "N % BN == 0", "CTAS <= sm_count"}, {"CTAS", "1", "1"},
      {{"BM", std::int64_t{128}}, {"BN", std::int64_t{128}}, {"CTAS", std::int64_t{114}}}, "0123456789abcdef");
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.problem = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
  entry.configuration = {{"BM", std::int64_t{128}}, {"BN", std::int64_t{64}}, {"CTAS", std::int64_t{132}}};
  entry.time = {1.0, 0.01, 20};
  entry.spec_hash = "current";
  database.entries = {entry};
  return database;
}

class BestSelect : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("tune_best_select_" + std::to_string(::getpid()));
    fs::create_directories(directory_);
    std::ofstream(directory_ / "tiled.json") << database_json(tiled_database());
  }
  void TearDown() override { fs::remove_all(directory_); }

  CommandResult best(const std::string& options) const {
    return run_tune("best tiled --dir '" + directory_.string() + "' --select " + options);
  }

  fs::path directory_;
};

TEST_F(BestSelect, NamedBoardTakesItsOwnEntryExactly) {
  CommandResult result = best("--device 'NVIDIA H200'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("problem        M=4096,N=4096,K=4096\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("device         NVIDIA H200 (sm_90, built-in profile, 132 SMs)\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("rung           exact\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("configuration  BM=128 BN=64 CTAS=132\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("reason         tuned on this device (NVIDIA H200, sm_90)"), std::string::npos) << result.out;
}

TEST_F(BestSelect, FewerSmsPassOverTheEntryToTheDefault) {
  CommandResult result = best("--arch sm_90 --device 'NVIDIA H100 PCIe' --problem M=2048 --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json output = nlohmann::json::parse(result.out);
  EXPECT_EQ(output["kernel"], "tiled");
  EXPECT_EQ(output["problem"], "M=2048,N=4096,K=4096");
  EXPECT_EQ(output["arch"], "sm_90");
  EXPECT_EQ(output["device"], "NVIDIA H100 PCIe");
  EXPECT_EQ(output["rung"], "default configuration");
  EXPECT_EQ(output["configuration"], (nlohmann::json{{"BM", 128}, {"BN", 128}, {"CTAS", 114}}));
  EXPECT_NE(output["reason"].get<std::string>().find("breaks the constraint CTAS <= sm_count"), std::string::npos)
      << output["reason"];
}

TEST_F(BestSelect, NothingUsableIsTheRuntimesErrorWithExitOne) {
  const std::string expected =
      "tiled: no usable configuration for profile sm_90 (H100 SXM) (sm_90) at M=1000,N=4096,K=4096: the default "
      "configuration (space defaults): it breaks the constraint M % BM == 0; 1 entry unusable here, e.g. the entry of "
      "NVIDIA H200 for M=4096,N=4096,K=4096: it breaks the constraint M % BM == 0";
  CommandResult text = best("--arch sm_90 --problem M=1000");
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_EQ(text.out, "");
  EXPECT_EQ(text.err, "tune best: " + expected + "\n");

  CommandResult json = best("--arch sm_90 --problem M=1000 --json");
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(json.out), (nlohmann::json{{"error", expected}}));
}

TEST_F(BestSelect, BadOptionsExitTwo) {
  CommandResult unknown = best("--device 'NVIDIA H300'");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown --device 'NVIDIA H300': known devices are"), std::string::npos) << unknown.err;
  CommandResult other_arch = best("--arch sm_80 --device 'NVIDIA H200'");
  EXPECT_EQ(other_arch.exit_code, 2);
  EXPECT_NE(other_arch.err.find("--device 'NVIDIA H200' is sm_90, not sm_80"), std::string::npos) << other_arch.err;
  EXPECT_EQ(best("").exit_code, 2);                                // neither --arch nor --device
  EXPECT_EQ(best("--arch sm_90 --problem Q=5").exit_code, 2);      // tiled has no symbol Q
  EXPECT_EQ(best("--arch sm_90 --problem M=1x").exit_code, 2);     // not an integer
  EXPECT_EQ(run_tune("best tiled --device 'NVIDIA H200'").exit_code, 2);  // --device needs --select
}

TEST_F(BestSelect, HelpListsTheKnownDevices) {
  CommandResult help = run_tune("best --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--select"), std::string::npos);
  EXPECT_NE(help.out.find("NVIDIA H100 PCIe"), std::string::npos) << help.out;
}

TEST_F(BestSelect, NoDatabaseIsAFailure) {
  CommandResult result = run_tune("best missing --dir '" + directory_.string() + "' --select --arch sm_90");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no database for kernel 'missing'"), std::string::npos) << result.err;
}

// ---------------------------------------------------------------- the space's default for this problem

TEST_F(BestSelect, TheSpacesDefaultForThisProblemIsARungOfItsOwn) {
  KernelDatabase database = tiled_database();
  database.description.problem_defaults = {
      {"M <= 512", {{"BM", std::int64_t{8}}, {"BN", std::int64_t{64}}, {"CTAS", std::int64_t{114}}}}};
  std::ofstream(directory_ / "tiled.json") << database_json(database);
  // M=256: the 4096 entry is usable but 4 away, beyond the nearest rung's 2.
  CommandResult text = best("--device 'NVIDIA H200' --problem M=256");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("rung           the space's default for this problem\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("configuration  BM=8 BN=64 CTAS=114\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("reason         no usable entry of sm_90 within problem distance 2.00 of M=256,N=4096,K=4096; "
                          "took the space's default for this problem (M <= 512 holds), preferred to the entry of NVIDIA "
                          "H200 (sm_90) for M=4096,N=4096,K=4096, problem distance 4.00\n"),
            std::string::npos)
      << text.out;
  CommandResult json = best("--device 'NVIDIA H200' --problem M=256 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json output = nlohmann::json::parse(json.out);
  EXPECT_EQ(output["rung"], "the space's default for this problem");
  EXPECT_EQ(output["configuration"], (nlohmann::json{{"BM", 8}, {"BN", 64}, {"CTAS", 114}}));
  // M=2048: the entry is near, and the condition fails anyway.
  EXPECT_NE(best("--device 'NVIDIA H200' --problem M=2048").out.find("rung           same arch, nearest problem\n"),
            std::string::npos);
}

// The shipped gemm_bf16 database, its problem defaults taken out, refreshed from kernels/gemm_bf16.yaml: they come
// back, every entry is kept, and the file is the shipped one again byte for byte.
TEST_F(BestSelect, RefreshingTheDescriptionBringsTheSpacesProblemDefaults) {
  const fs::path shipped = fs::path(KERNLATHE_SOURCE_DIR) / "results/best/gemm_bf16.json";
  std::ifstream input(shipped);
  const std::string shipped_text((std::istreambuf_iterator<char>(input)), {});
  KernelDatabase older = parse_database(shipped_text);
  ASSERT_FALSE(older.description.problem_defaults.empty());
  older.description.problem_defaults.clear();
  std::ofstream(directory_ / "gemm_bf16.json") << database_json(older);

  CommandResult refresh = run_tune("best gemm_bf16 --refresh-description --json --dir '" + directory_.string() + "'");
  ASSERT_EQ(refresh.exit_code, 0) << refresh.err;
  nlohmann::json output = nlohmann::json::parse(refresh.out);
  EXPECT_EQ(output["changed"], (nlohmann::json{"problem_defaults"}));
  EXPECT_EQ(output["entries"], older.entries.size());
  std::ifstream refreshed(directory_ / "gemm_bf16.json");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(refreshed)), {}), shipped_text);
  CommandResult again = run_tune("best gemm_bf16 --refresh-description --dir '" + directory_.string() + "'");
  EXPECT_NE(again.out.find("nothing changed"), std::string::npos) << again.out;
  // With --select: refused, one or the other.
  EXPECT_EQ(run_tune("best gemm_bf16 --refresh-description --select --arch sm_90 --dir '" + directory_.string() + "'")
                .exit_code,
            2);
}

}  // namespace
}  // namespace kernlathe
