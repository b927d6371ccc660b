// The database of tuned configurations (kernlathe/database.h): reading and writing, staleness, and the fallback
// ladder on a hand-written database with several devices, archs and problem sizes.
#include "kernlathe/database.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime_test_support.h"
#include "tuner/spec/model.h"

namespace kernlathe {
namespace {

KernelDescription scale_description() {
  KernelDescription description;
  description.kernel = "scale";
  description.template_name = "scale.cu";
  description.template_hash = "0123456789abcdef";
  description.spec_hash = "current";
  description.entry_point = "scale";
  description.problem = {{"N", 1024}};
  description.parameters = {{"BLOCK", "integer", {std::int64_t{64}, std::int64_t{128}, std::int64_t{256}}}};
  description.derived = {{"ITEMS", "N // BLOCK"}};
  description.constraints = {"N % BLOCK == 0", "BLOCK <= max_threads_per_block"};
  description.grid = {"ITEMS", "1", "1"};
  description.block = {"BLOCK", "1", "1"};
  description.arguments = {{"data", "buffer", "f32", "inout", "N", "", false, "", {}, {}, "", {}}};
  description.default_configuration = {{"BLOCK", std::int64_t{64}}};
  description.default_origin = "space defaults";
  return description;
}

DatabaseEntry tuned(const std::string& device, const std::string& arch, std::int64_t n, std::int64_t block,
                    const std::string& spec_hash = "current") {
  DatabaseEntry entry;
  entry.device_name = device;
  entry.arch = arch;
  entry.problem = {{"N", n}};
  entry.configuration = {{"BLOCK", block}};
  entry.time = {0.1, 0.01, 20};
  entry.spec_hash = spec_hash;
  entry.date = "2026-11-23T00:00:00Z";
  return entry;
}

KernelDatabase scale_database() {
  KernelDatabase database;
  database.kernel = "scale";
  database.description = scale_description();
  database.entries = {
      tuned("NVIDIA H200", "sm_90", 1024, 256),
      tuned("NVIDIA H200", "sm_90", 65536, 128),
      tuned("NVIDIA A100-SXM4-80GB", "sm_80", 1024, 64),
      tuned("NVIDIA H200", "sm_90", 4096, 64, "an older spec"),
  };
  return database;
}

DeviceIdentity device(const std::string& name, int major, int minor) {
  return {name, major, minor, {{"max_threads_per_block", std::int64_t{1024}}}};
}

std::int64_t block_of(const Selection& selection) { return std::get<std::int64_t>(selection.configuration.at("BLOCK")); }

TEST(DatabaseLadder, ExactDeviceAndProblem) {
  Selection selection = select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 1024}});
  EXPECT_EQ(selection.rung, Rung::exact);
  EXPECT_EQ(block_of(selection), 256);
  ASSERT_TRUE(selection.entry);
  EXPECT_EQ(selection.entry->device_name, "NVIDIA H200");
  EXPECT_NE(selection.reason.find("tuned on this device"), std::string::npos) << selection.reason;
}

TEST(DatabaseLadder, OtherDeviceOfTheSameArchTakesTheEntryThroughTheArchRung) {
  Selection selection = select(scale_database(), device("NVIDIA H100 80GB HBM3", 9, 0), {{"N", 1024}});
  EXPECT_EQ(selection.rung, Rung::same_arch_nearest_problem);
  EXPECT_EQ(block_of(selection), 256);
  EXPECT_EQ(selection.problem_distance, 0);
  EXPECT_NE(selection.reason.find("NVIDIA H200"), std::string::npos) << selection.reason;
}

TEST(DatabaseLadder, NearestProblemInLogSpacePassingOverStaleEntries) {
  // N=2048: 1 from N=1024 (log2 2), 5 from N=65536; the stale N=4096 entry would be 1 too, but is passed over.
  Selection selection = select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 2048}});
  EXPECT_EQ(selection.rung, Rung::same_arch_nearest_problem);
  EXPECT_EQ(block_of(selection), 256);
  EXPECT_DOUBLE_EQ(selection.problem_distance, 1.0);
  EXPECT_NE(selection.reason.find("1 stale entry passed over"), std::string::npos) << selection.reason;
}

TEST(DatabaseLadder, FarProblemIsTheAnyProblemRung) {
  // N=2^20: 4 from N=65536 (beyond the default limit of 2), 10 from N=1024.
  Selection selection = select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 1 << 20}});
  EXPECT_EQ(selection.rung, Rung::same_arch_any_problem);
  EXPECT_EQ(block_of(selection), 128);
  EXPECT_DOUBLE_EQ(selection.problem_distance, 4.0);
  SelectOptions wider;
  wider.nearest_problem_distance = 4.0;
  EXPECT_EQ(select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 1 << 20}}, wider).rung,
            Rung::same_arch_nearest_problem);
}

TEST(DatabaseLadder, ASymbolThatIsZeroOnOneSideIsFarButNotUnusable) {
  // A problem symbol whose 0 means "packed" (attention's Q_ROW_STRIDE) against a row stride of 6144 has no ratio: it
  // counts as 16 doublings, so the entry is the "any problem" rung, not passed over for the default configuration.
  KernelDatabase database = scale_database();
  database.description.problem = {{"N", 1024}, {"STRIDE", 0}};
  for (DatabaseEntry& entry : database.entries) entry.problem["STRIDE"] = 0;
  Selection selection = select(database, device("NVIDIA H200", 9, 0), {{"N", 1024}, {"STRIDE", 6144}});
  EXPECT_EQ(selection.rung, Rung::same_arch_any_problem) << selection.reason;
  EXPECT_EQ(block_of(selection), 256);
  EXPECT_DOUBLE_EQ(selection.problem_distance, 16.0);
  // A strided entry, however far in N, is nearer than any packed one.
  database.entries.push_back(tuned("NVIDIA H200", "sm_90", 65536, 64));
  database.entries.back().problem["STRIDE"] = 6144;
  selection = select(database, device("NVIDIA H200", 9, 0), {{"N", 1024}, {"STRIDE", 6144}});
  EXPECT_EQ(block_of(selection), 64);
  EXPECT_DOUBLE_EQ(selection.problem_distance, 6.0);
}

TEST(DatabaseLadder, ConfigurationBreakingAConstraintAtTheRequestedProblemIsPassedOver) {
  // N=1152 is a multiple of 128 and 64 but not of 256: the nearest entry (BLOCK=256, N=1024) cannot run it.
  Selection selection = select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 1152}});
  EXPECT_EQ(block_of(selection), 128);
  EXPECT_EQ(selection.entry->problem.at("N"), 65536);
  EXPECT_NE(selection.reason.find("breaks the constraint N % BLOCK == 0"), std::string::npos) << selection.reason;
}

TEST(DatabaseLadder, SameMajorArchThenTheDefault) {
  Selection ampere = select(scale_database(), device("NVIDIA A10", 8, 6), {{"N", 1024}});
  EXPECT_EQ(ampere.rung, Rung::same_major_arch);
  EXPECT_EQ(block_of(ampere), 64);
  EXPECT_NE(ampere.reason.find("sm_80"), std::string::npos) << ampere.reason;

  Selection turing = select(scale_database(), device("NVIDIA T4", 7, 5), {{"N", 1024}});
  EXPECT_EQ(turing.rung, Rung::default_configuration);
  EXPECT_FALSE(turing.entry);
  EXPECT_EQ(block_of(turing), 64);
  EXPECT_NE(turing.reason.find("default configuration (space defaults)"), std::string::npos) << turing.reason;
}

TEST(DatabaseLadder, StaleEntriesAreUsedOnlyWhenAskedFor) {
  SelectOptions options;
  options.use_stale_entries = true;
  Selection selection = select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 4096}}, options);
  EXPECT_EQ(selection.rung, Rung::exact);
  EXPECT_EQ(block_of(selection), 64);
  EXPECT_EQ(select(scale_database(), device("NVIDIA H200", 9, 0), {{"N", 4096}}).rung, Rung::same_arch_nearest_problem);
}

TEST(DatabaseLadder, MissingDevicePropertyMakesTheCandidateUnusableNotAnException) {
  // The default reads max_threads_per_block too, so nothing can be checked here: no configuration, and the reason.
  DeviceIdentity bare{"NVIDIA H200", 9, 0, {}};
  Selection selection = select(scale_database(), bare, {{"N", 1024}});
  EXPECT_EQ(selection.rung, Rung::none);
  EXPECT_FALSE(selection.usable());
  EXPECT_TRUE(selection.configuration.empty());
  EXPECT_NE(selection.reason.find("cannot be checked here"), std::string::npos) << selection.reason;
  EXPECT_NE(selection.reason.find("max_threads_per_block"), std::string::npos) << selection.reason;
}

// ---------------------------------------------------------------- the default is checked too (issue 30)

// A GEMM as the runtime sees it: tiles that must divide the problem. The space defaults (BM=128, BN=128) hold at
// the default problem (4096^3) and break M % BM == 0 at M=1000, where launching them left 10% of a bf16 GEMM's
// output wrong on an H200.
KernelDatabase tiled_database() {
  return runtime_test::tiled_database_with({{"BM", "integer", {std::int64_t{8}, std::int64_t{64}, std::int64_t{128}}},
                                            {"BN", "integer", {std::int64_t{64}, std::int64_t{128}}}},
                                           {"M % BM == 0", "N % BN == 0"}, {"N // BN", "M // BM", "1"},
                                           {{"BM", std::int64_t{128}}, {"BN", std::int64_t{128}}}, "");
}

DatabaseEntry tiled_entry(std::int64_t m, std::int64_t bm) {
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.problem = {{"M", m}, {"N", 4096}, {"K", 4096}};
  entry.configuration = {{"BM", bm}, {"BN", std::int64_t{128}}};
  entry.time = {1.0, 0.01, 20};
  entry.spec_hash = "current";
  return entry;
}

TEST(DatabaseLadderChecksTheDefault, DefaultBreakingADivisibilityConstraintIsNoConfiguration) {
  KernelDatabase database = tiled_database();
  database.entries = {tiled_entry(4096, 128)};  // valid at M=4096, not at M=1000
  Selection selection = select(database, device("NVIDIA H200", 9, 0), {{"M", 1000}});
  EXPECT_EQ(selection.rung, Rung::none);
  EXPECT_STREQ(rung_name(selection.rung), "no usable configuration");
  EXPECT_FALSE(selection.entry);
  EXPECT_TRUE(selection.configuration.empty());
  EXPECT_EQ(selection.reason,
            "no usable configuration for NVIDIA H200 (sm_90) at M=1000,N=4096,K=4096: the default configuration "
            "(space defaults): it breaks the constraint M % BM == 0; 1 entry unusable here, e.g. the entry of NVIDIA "
            "H200 for M=4096,N=4096,K=4096: it breaks the constraint M % BM == 0");
}

TEST(DatabaseLadderChecksTheDefault, EntryValidAtItsProblemButNotAtTheRequestedOneIsPassedOver) {
  KernelDatabase database = tiled_database();
  // At M=1000 the M=4096 entry is nearer (log2 4.096 = 2.03) than the M=16384 one (4.03), but BM=128 does not
  // divide 1000; BM=8 does.
  database.entries = {tiled_entry(4096, 128), tiled_entry(16384, 8)};
  Selection at_1000 = select(database, device("NVIDIA H200", 9, 0), {{"M", 1000}});
  EXPECT_EQ(at_1000.rung, Rung::same_arch_any_problem);
  EXPECT_EQ(std::get<std::int64_t>(at_1000.configuration.at("BM")), 8);
  ASSERT_TRUE(at_1000.entry);
  EXPECT_EQ(at_1000.entry->problem.at("M"), 16384);
  EXPECT_NE(at_1000.reason.find("1 entry unusable here, e.g. the entry of NVIDIA H200 for M=4096,N=4096,K=4096: it "
                                "breaks the constraint M % BM == 0"),
            std::string::npos)
      << at_1000.reason;
  // At its own problem the BM=128 entry is the exact rung.
  Selection at_4096 = select(database, device("NVIDIA H200", 9, 0), {{"M", 4096}});
  EXPECT_EQ(at_4096.rung, Rung::exact);
  EXPECT_EQ(std::get<std::int64_t>(at_4096.configuration.at("BM")), 128);
}

TEST(DatabaseLadderChecksTheDefault, DefaultValidAtTheProblemIsTheLastRung) {
  Selection selection = select(tiled_database(), device("NVIDIA H200", 9, 0), {{"M", 1024}});
  EXPECT_EQ(selection.rung, Rung::default_configuration);
  EXPECT_TRUE(selection.usable());
  EXPECT_EQ(std::get<std::int64_t>(selection.configuration.at("BM")), 128);
}

TEST(DatabaseLadderChecksTheDefault, UnusableReasonNamesTheFirstBrokenConstraint) {
  const KernelDescription description = tiled_database().description;
  const ConfigurationValues defaults = description.default_configuration;
  const DeviceIdentity h200 = device("NVIDIA H200", 9, 0);
  EXPECT_EQ(unusable_reason(description, h200, {}, defaults), "");  // the default problem, 4096^3
  EXPECT_EQ(unusable_reason(description, h200, {{"M", 1000}}, defaults), "it breaks the constraint M % BM == 0");
  EXPECT_EQ(unusable_reason(description, h200, {{"N", 4000}}, defaults), "it breaks the constraint N % BN == 0");
  EXPECT_EQ(unusable_reason(description, h200, {}, {{"BM", std::int64_t{64}}}), "it has no value for parameter BN");
}

// A persistent kernel launching one CTA per SM: a configuration for 132 SMs cannot run on the 114 of an H100 PCIe.
KernelDatabase persistent_database(std::int64_t default_ctas) {
  KernelDatabase database = tiled_database();
  database.kernel = database.description.kernel = "persistent";
  database.description.parameters.push_back({"CTAS", "integer", {std::int64_t{114}, std::int64_t{132}}});
  database.description.constraints.push_back("CTAS <= sm_count");
  database.description.default_configuration["CTAS"] = default_ctas;
  DatabaseEntry entry = tiled_entry(4096, 128);
  entry.configuration["CTAS"] = std::int64_t{132};
  database.entries = {entry};
  return database;
}

TEST(DatabaseLadderChecksTheDefault, FewerSmsOnTheDeviceProfileChangeTheOutcome) {
  const DeviceIdentity h200 = runtime_identity(named_device_profile("NVIDIA H200"));
  const DeviceIdentity h100_pcie = runtime_identity(named_device_profile("NVIDIA H100 PCIe"));
  ASSERT_EQ(h100_pcie.arch(), "sm_90");

  Selection on_h200 = select(persistent_database(114), h200, {});
  EXPECT_EQ(on_h200.rung, Rung::exact);
  EXPECT_EQ(std::get<std::int64_t>(on_h200.configuration.at("CTAS")), 132);

  Selection on_pcie = select(persistent_database(114), h100_pcie, {});
  EXPECT_EQ(on_pcie.rung, Rung::default_configuration);
  EXPECT_EQ(std::get<std::int64_t>(on_pcie.configuration.at("CTAS")), 114);
  EXPECT_NE(on_pcie.reason.find("breaks the constraint CTAS <= sm_count"), std::string::npos) << on_pcie.reason;

  Selection nothing = select(persistent_database(132), h100_pcie, {});
  EXPECT_EQ(nothing.rung, Rung::none);
  EXPECT_NE(nothing.reason.find("NVIDIA H100 PCIe (sm_90) at M=4096,N=4096,K=4096: the default configuration (space "
                                "defaults): it breaks the constraint CTAS <= sm_count"),
            std::string::npos)
      << nothing.reason;
}

TEST(DatabaseLadderChecksTheDefault, AnArchConstraintRefusesTheDefaultOnAnotherArch) {
  // attention_bf16's wgmma path: Hopper only. Without an sm_80 entry, an A100 has nothing to launch.
  KernelDatabase database = tiled_database();
  database.description.constraints.push_back("arch == 90");
  Selection hopper = select(database, runtime_identity(device_profile("sm_90")), {});
  EXPECT_EQ(hopper.rung, Rung::default_configuration);
  Selection ampere = select(database, runtime_identity(device_profile("sm_80")), {});
  EXPECT_EQ(ampere.rung, Rung::none);
  EXPECT_NE(ampere.reason.find("(sm_80) at M=4096,N=4096,K=4096: the default configuration (space defaults): it "
                               "breaks the constraint arch == 90"),
            std::string::npos)
      << ampere.reason;
}

// ---------------------------------------------------------------- the space's default for this problem

// A GEMM with two paths as the runtime sees it: simt tiles must divide M, wgmma runs on sm_90 only and takes any M.
// The problem default (decode: M <= 128) is the wgmma configuration with 64-row tiles; the 4096-row entry has 128.
KernelDatabase decode_database() {
  KernelDatabase database = runtime_test::tiled_database_with(
      {{"PATH", "enumeration", {std::string("simt"), std::string("wgmma")}},
       {"BM", "integer", {std::int64_t{16}, std::int64_t{64}, std::int64_t{128}}},
       {"BN", "integer", {std::int64_t{64}, std::int64_t{128}}}},
      {"PATH == 'wgmma' or M % BM == 0", "N % BN == 0", "PATH != 'wgmma' or arch == 90"}, {"N // BN", "M // BM", "1"},
      {{"PATH", std::string("simt")}, {"BM", std::int64_t{128}}, {"BN", std::int64_t{128}}}, "");
  database.description.problem_defaults = {
      {"M <= 128", {{"PATH", std::string("wgmma")}, {"BM", std::int64_t{64}}, {"BN", std::int64_t{128}}}}};
  return database;
}

DatabaseEntry decode_entry(std::int64_t m, std::int64_t bm, const std::string& arch = "sm_90") {
  DatabaseEntry entry = tiled_entry(m, bm);
  entry.arch = arch;
  entry.configuration["PATH"] = std::string("wgmma");
  return entry;
}

std::string path_of(const Selection& selection) { return std::get<std::string>(selection.configuration.at("PATH")); }
std::int64_t bm_of(const Selection& selection) { return std::get<std::int64_t>(selection.configuration.at("BM")); }

const DeviceIdentity& h200() {
  static const DeviceIdentity identity = runtime_identity(named_device_profile("NVIDIA H200"));
  return identity;
}

TEST(DatabaseLadderProblemDefaults, TakenOverAnEntryOfAFarProblem) {
  KernelDatabase database = decode_database();
  database.entries = {decode_entry(4096, 128)};  // M=16: log2(4096 / 16) = 8 from it, beyond 2
  Selection selection = select(database, h200(), {{"M", 16}});
  EXPECT_EQ(selection.rung, Rung::problem_default);
  EXPECT_STREQ(rung_name(selection.rung), "the space's default for this problem");
  EXPECT_TRUE(selection.usable());
  EXPECT_FALSE(selection.entry);
  EXPECT_EQ(path_of(selection), "wgmma");
  EXPECT_EQ(bm_of(selection), 64);
  EXPECT_EQ(selection.reason,
            "no usable entry of sm_90 within problem distance 2.00 of M=16,N=4096,K=4096; took the space's default for "
            "this problem (M <= 128 holds), preferred to the entry of NVIDIA H200 (sm_90) for M=4096,N=4096,K=4096, "
            "problem distance 8.00");
}

TEST(DatabaseLadderProblemDefaults, NotWhereItsConditionFailsNorOverANearOrExactEntry) {
  KernelDatabase database = decode_database();
  database.entries = {decode_entry(4096, 128), decode_entry(128, 128)};
  // M=2048: the condition fails, and the 4096 entry is near (distance 1).
  Selection at_2048 = select(database, h200(), {{"M", 2048}});
  EXPECT_EQ(at_2048.rung, Rung::same_arch_nearest_problem);
  EXPECT_EQ(bm_of(at_2048), 128);
  // M=64: the condition holds, but the M=128 entry is 1 away: the nearest rung wins.
  Selection at_64 = select(database, h200(), {{"M", 64}});
  EXPECT_EQ(at_64.rung, Rung::same_arch_nearest_problem);
  EXPECT_EQ(at_64.entry->problem.at("M"), 128);
  // M=128: the exact entry.
  Selection at_128 = select(database, h200(), {{"M", 128}});
  EXPECT_EQ(at_128.rung, Rung::exact);
  EXPECT_EQ(bm_of(at_128), 128);
  // With a wider nearest distance the 4096 entry is near for M=16 too.
  SelectOptions wider;
  wider.nearest_problem_distance = 8.0;
  EXPECT_EQ(select(database, h200(), {{"M", 16}}, wider).rung, Rung::same_arch_nearest_problem);
}

TEST(DatabaseLadderProblemDefaults, PreferredToTheDefaultWhereThereIsNoEntry) {
  Selection selection = select(decode_database(), h200(), {{"M", 16}});  // no entries; simt's BM=128 breaks M % BM
  EXPECT_EQ(selection.rung, Rung::problem_default);
  EXPECT_EQ(bm_of(selection), 64);
  EXPECT_NE(selection.reason.find("(M <= 128 holds), preferred to the default configuration (space defaults)"),
            std::string::npos)
      << selection.reason;
  // At the default problem (M=4096) the condition fails: the default configuration as before.
  EXPECT_EQ(select(decode_database(), h200(), {}).rung, Rung::default_configuration);
}

TEST(DatabaseLadderProblemDefaults, UnusableOnTheDeviceIsSkippedAndTheLadderGoesOn) {
  const DeviceIdentity a100 = runtime_identity(device_profile("sm_80"));
  KernelDatabase database = decode_database();
  database.entries = {decode_entry(4096, 128)};  // sm_90: not a candidate on sm_80
  // M=128: wgmma breaks the arch constraint on sm_80; the default (simt, BM=128) divides 128.
  Selection at_128 = select(database, a100, {{"M", 128}});
  EXPECT_EQ(at_128.rung, Rung::default_configuration);
  EXPECT_EQ(path_of(at_128), "simt");
  EXPECT_NE(at_128.reason.find("the space's default for M <= 128 passed over: it breaks the constraint PATH != "
                               "'wgmma' or arch == 90"),
            std::string::npos)
      << at_128.reason;
  // M=16: the default breaks M % BM == 0 too: no configuration, as without problem defaults.
  Selection at_16 = select(database, a100, {{"M", 16}});
  EXPECT_EQ(at_16.rung, Rung::none);
  EXPECT_TRUE(at_16.configuration.empty());
  EXPECT_EQ(at_16.reason.rfind("no usable configuration for profile sm_80 (A100) (sm_80) at M=16,N=4096,K=4096: the "
                               "default configuration (space defaults): it breaks the constraint PATH == 'wgmma' or "
                               "M % BM == 0",
                               0),
            0u)
      << at_16.reason;
}

TEST(DatabaseLadderProblemDefaults, TheFirstUsableOneWhoseConditionHoldsIsTakenOverAnotherArchsEntry) {
  const DeviceIdentity a10 = runtime_identity(device_profile("sm_86"));
  KernelDatabase database = decode_database();
  database.description.problem_defaults.push_back(
      {"M <= 4096", {{"PATH", std::string("simt")}, {"BM", std::int64_t{16}}, {"BN", std::int64_t{64}}}});
  database.description.problem_defaults.push_back(
      {"M <= 128", {{"PATH", std::string("simt")}, {"BM", std::int64_t{64}}, {"BN", std::int64_t{64}}}});
  DatabaseEntry ampere = decode_entry(64, 64, "sm_80");
  ampere.configuration["PATH"] = std::string("simt");
  database.entries = {ampere};  // same major arch, the same problem
  Selection selection = select(database, a10, {{"M", 64}});
  EXPECT_EQ(selection.rung, Rung::problem_default);  // wgmma passed over on sm_86; then M <= 4096
  EXPECT_EQ(bm_of(selection), 16);
  EXPECT_NE(selection.reason.find("preferred to the entry of NVIDIA H200 (sm_80) for M=64,N=4096,K=4096, problem "
                                  "distance 0.00; the space's default for M <= 128 passed over"),
            std::string::npos)
      << selection.reason;
}

TEST(DatabaseLadderProblemDefaults, AConditionThatCannotBeEvaluatedIsPassedOverWithTheReason) {
  KernelDatabase database = decode_database();
  database.description.problem_defaults[0].when = "M <= sm_count";
  Selection selection = select(database, device("NVIDIA H200", 9, 0), {{"M", 1024}});  // no sm_count, no arch
  EXPECT_EQ(selection.rung, Rung::none);
  EXPECT_NE(selection.reason.find("the space's default for M <= sm_count cannot be checked here"), std::string::npos)
      << selection.reason;
}

TEST(DatabaseFile, ProblemDefaultsRoundTripAndOlderFilesHaveNone) {
  KernelDatabase database = decode_database();
  KernelDatabase read = parse_database(database_json(database));
  EXPECT_EQ(read.description.problem_defaults, database.description.problem_defaults);
  EXPECT_EQ(database_json(read), database_json(database));
  // A description without problem defaults is written without the field, as before they existed, and reads back so.
  const std::string older = database_json(scale_database());
  EXPECT_EQ(older.find("problem_defaults"), std::string::npos);
  EXPECT_TRUE(parse_database(older).description.problem_defaults.empty());
  std::string malformed = database_json(database);
  malformed.replace(malformed.find("\"problem_defaults\": ["), 21, "\"problem_defaults\": 7, \"x\": [");
  EXPECT_THROW(parse_database(malformed, "db.json"), DatabaseError);
}

TEST(DatabaseFile, RoundTripsEveryField) {
  KernelDatabase database = scale_database();
  database.description.loader = {{"workers", "WORKERS"}};
  database.description.arguments.push_back({"map", "tensor_map", "f32", "", "", "", false, "data", {"N"}, {"BLOCK"}, "128", {}});
  database.description.arguments.push_back({"counters", "buffer", "i32", "in", "2", "", true, "", {}, {}, "", {}});
  KernelDatabase read = parse_database(database_json(database));
  EXPECT_EQ(read.kernel, "scale");
  EXPECT_EQ(read.description.derived[0].expression, "N // BLOCK");
  EXPECT_EQ(read.description.constraints, database.description.constraints);
  EXPECT_EQ(read.description.arguments.size(), 3u);
  EXPECT_EQ(read.description.arguments[1].box, std::vector<std::string>{"BLOCK"});
  EXPECT_TRUE(read.description.arguments[2].scratch);
  EXPECT_EQ(read.description.loader.at("workers"), "WORKERS");
  ASSERT_EQ(read.entries.size(), 4u);
  for (const DatabaseEntry& entry : database.entries) {
    EXPECT_NE(std::find(read.entries.begin(), read.entries.end(), entry), read.entries.end()) << entry.device_name;
  }
  EXPECT_EQ(database_json(read), database_json(database));  // stable text
}

TEST(DatabaseFile, CorruptNewerAndMalformedFilesAreClearErrors) {
  try {
    parse_database("{\"format\": 2, \"kernel\": ", "results/best/scale.json");
    FAIL() << "expected DatabaseError";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("results/best/scale.json: not valid JSON (at byte"), std::string::npos)
        << error.what();
  }
  try {
    parse_database(R"({"format": 3, "kernel": "scale", "entries": []})", "db.json");
    FAIL() << "expected DatabaseError";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("format 3, this build of kernlathe reads formats 1 to 2"), std::string::npos);
  }
  EXPECT_THROW(parse_database(R"({"format": 2, "kernel": "scale", "entries": []})", "no description"), DatabaseError);
  // Found by the database fuzz target: a number JSON cannot hold is an out_of_range exception of the JSON library.
  EXPECT_THROW(parse_database(R"({"format": 1e663, "kernel": "scale", "entries": []})", "huge"), DatabaseError);
  EXPECT_THROW(parse_database(R"({"format": 8.9e50, "kernel": "scale", "entries": []})", "real"), DatabaseError);
  EXPECT_THROW(read_database("/nonexistent/kernlathe/scale.json"), DatabaseError);
  EXPECT_THROW(parse_problem_text("N=12x"), DatabaseError);
  EXPECT_THROW(parse_problem_text("=5"), DatabaseError);
  EXPECT_EQ(parse_problem_text("M=2,N=3"), (Problem{{"M", 2}, {"N", 3}}));
}

TEST(DatabaseFile, FormatOneEntriesAreReadAndMarkedStale) {
  KernelDatabase old = parse_database(R"({"format": 1, "kernel": "saxpy", "entries": [
      {"arch": "sm_90", "problem": "N=67108864", "configuration": {"BLOCK": "256", "GRID_STRIDE": "false", "PATH": "wgmma"},
       "time_ms": 0.188, "device_name": "NVIDIA H200", "date": "2026-11-22T04:00:12Z", "spec_hash": "6f19"}]})",
                                      "saxpy.json");
  ASSERT_EQ(old.entries.size(), 1u);
  const DatabaseEntry& entry = old.entries[0];
  EXPECT_EQ(entry.configuration.at("BLOCK"), Value{std::int64_t{256}});
  EXPECT_EQ(entry.configuration.at("GRID_STRIDE"), Value{false});
  EXPECT_EQ(entry.configuration.at("PATH"), Value{std::string("wgmma")});
  EXPECT_EQ(entry.problem.at("N"), 67108864);
  EXPECT_DOUBLE_EQ(entry.time.median_ms, 0.188);
  EXPECT_NE(stale_reason(old, entry).find("format 1"), std::string::npos);
  // With no description there is nothing current: the ladder ends at the (empty) default, never an exception.
  Selection selection = select(old, device("NVIDIA H200", 9, 0), {{"N", 67108864}});
  EXPECT_EQ(selection.rung, Rung::default_configuration);
}

TEST(DatabaseFile, StaleReasonNamesBothHashes) {
  KernelDatabase database = scale_database();
  EXPECT_EQ(stale_reason(database, database.entries[0]), "");
  EXPECT_EQ(stale_reason(database, database.entries[3]), "measured against spec hash an older spec, the kernel is now current");
}

TEST(DatabaseFile, ProblemTextFollowsTheDescriptionsSymbolOrder) {
  KernelDescription description = scale_description();
  description.problem = {{"M", 1}, {"N", 2}, {"K", 3}};
  EXPECT_EQ(problem_text(description, {{"K", 8}, {"M", 2}, {"N", 4}, {"EXTRA", 1}}), "M=2,N=4,K=8,EXTRA=1");
  EXPECT_EQ(complete_problem(description, {{"N", 9}}), (Problem{{"M", 1}, {"N", 9}, {"K", 3}}));
}

}  // namespace
}  // namespace kernlathe
