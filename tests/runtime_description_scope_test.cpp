// A description's expressions parsed and bound once per device and problem (tuner/runtime/description_scope.h):
// every configuration checked on one scope gets the answer a fresh check gives, whatever was checked before it, and
// an expression that cannot be parsed or bound fails where it is reached, not earlier.
#include "tuner/runtime/description_scope.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime_test_support.h"

namespace kernlathe {
namespace {

const DeviceIdentity h200{"NVIDIA H200", 9, 0, {{"sm_count", std::int64_t{132}}}};

ConfigurationValues tiles(std::int64_t bm, std::int64_t bn) { return {{"BM", bm}, {"BN", bn}}; }

// Tiles BM x BN over M x N, at most four waves of tiles on the device.
KernelDescription tiled_description() {
  KernelDatabase database = runtime_test::tiled_database_with(
      {{"BM", "integer", {std::int64_t{64}, std::int64_t{128}}}, {"BN", "integer", {std::int64_t{64}, std::int64_t{128}}}},
      {"M % BM == 0", "N % BN == 0", "TILES <= 4 * sm_count"}, {"TILES", "1", "1"}, tiles(128, 128), "hash");
  database.description.derived = {{"TILES", "(M // BM) * (N // BN)"}};
  return database.description;
}

TEST(DescriptionScope, ConfigurationsCheckedInAnyOrderGetTheAnswerOfAFreshCheck) {
  const KernelDescription description = tiled_description();
  const Problem problem{{"M", 2048}, {"N", 2000}};
  DescriptionScope scope(description, h200, problem);
  const std::vector<ConfigurationValues> checks = {tiles(128, 128), tiles(64, 80), tiles(128, 80),
                                                   {{"BM", std::int64_t{128}}}, tiles(128, 128), tiles(128, 80)};
  for (const ConfigurationValues& configuration : checks) {
    DescriptionScope fresh(description, h200, problem);
    EXPECT_EQ(unusable_reason(scope, configuration), unusable_reason(fresh, configuration));
  }
  EXPECT_EQ(unusable_reason(scope, {{"BM", std::int64_t{128}}}), "it has no value for parameter BN");
  EXPECT_EQ(unusable_reason(scope, tiles(64, 80)), "it breaks the constraint TILES <= 4 * sm_count");  // 32 x 25 tiles
  EXPECT_EQ(unusable_reason(scope, tiles(128, 128)), "it breaks the constraint N % BN == 0");
  EXPECT_EQ(unusable_reason(scope, tiles(128, 80)), "");
  EXPECT_EQ(scope.evaluate("TILES"), Value{std::int64_t{16 * 25}});  // of the last configuration checked
  EXPECT_EQ(scope.problem().at("K"), 4096);                           // completed with the description's defaults
}

TEST(DescriptionScope, ADerivedValueSeesOnlyTheOnesBeforeIt) {
  KernelDescription description = tiled_description();
  description.derived = {{"HALF", "TILES // 2"}, {"TILES", "(M // BM) * (N // BN)"}};
  DescriptionScope scope(description, h200, {});
  const std::string why = unusable_reason(scope, tiles(128, 128));
  EXPECT_EQ(why.rfind("its constraints cannot be checked here (unknown name 'TILES' in 'TILES // 2'", 0), 0u) << why;
  EXPECT_EQ(scope.derived_reads(0), (std::vector<std::string>{"TILES"}));  // parsed, though not bound
}

TEST(DescriptionScope, AnUnreadableConstraintFailsOnlyWhereItIsReached) {
  KernelDescription description = tiled_description();
  description.constraints = {"M % BM == 0", "BM +* 2 > 0"};
  DescriptionScope scope(description, h200, {{"M", 1000}});
  EXPECT_EQ(unusable_reason(scope, tiles(128, 128)), "it breaks the constraint M % BM == 0");
  const std::string why = unusable_reason(scope, tiles(8, 128));
  EXPECT_EQ(why.rfind("its constraints cannot be checked here (in expression 'BM +* 2 > 0'", 0), 0u) << why;
  EXPECT_THROW(scope.evaluate("BM +"), InputError);
  EXPECT_THROW(scope.evaluate("BM +"), InputError);  // the kept error, thrown again
}

TEST(DescriptionScope, EveryConfigurationStartsFromTheProblemItsNamesShadow) {
  // A parameter K and a derived value N rebind problem symbols; the next configuration and the problem defaults'
  // conditions still read the problem's values.
  KernelDescription description = tiled_description();
  description.parameters.push_back({"K", "integer", {std::int64_t{1}, std::int64_t{2}}});
  description.derived = {{"N", "N * 2"}, {"TILES", "(M // BM) * (N // BN)"}};
  description.constraints = {"N == 8192", "K < 4096"};
  description.problem_defaults = {{"K == 4096 and N == 4096", tiles(64, 64)}};
  DescriptionScope scope(description, h200, {});
  ConfigurationValues configuration = tiles(128, 128);
  configuration["K"] = std::int64_t{2};
  EXPECT_EQ(unusable_reason(scope, configuration), "");
  EXPECT_EQ(scope.evaluate("N"), Value{std::int64_t{8192}});
  EXPECT_EQ(unusable_reason(scope, configuration), "");  // N * 2 of the problem's N again, not of 8192
  EXPECT_EQ(scope.problem_default_condition(0), Value{true});
}

TEST(DescriptionScope, SelectOverAScopeIsSelect) {
  KernelDatabase database;
  database.kernel = "tiled";
  database.description = tiled_description();
  database.description.constraints = {"M % BM == 0", "N % BN == 0"};
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.problem = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
  entry.configuration = tiles(128, 64);
  entry.spec_hash = "current";
  database.entries = {entry, entry};
  database.entries[1].problem["N"] = 2000;
  database.entries[1].configuration = tiles(128, 80);
  // exact, exact (the other entry), nearest problem, no usable configuration twice
  for (const Problem& problem : {Problem{}, Problem{{"N", 2000}}, Problem{{"N", 8000}}, Problem{{"N", 1000}}, Problem{{"M", 1000}}}) {
    DescriptionScope scope(database.description, h200, problem);
    const Selection over_scope = select(database, h200, scope, {});
    const Selection plain = select(database, h200, problem);
    EXPECT_EQ(over_scope.rung, plain.rung);
    EXPECT_EQ(over_scope.configuration, plain.configuration);
    EXPECT_EQ(over_scope.reason, plain.reason);
    EXPECT_NE(over_scope.reason, "");
  }
  DescriptionScope other(tiled_description(), h200, {});
  EXPECT_THROW(select(database, h200, other, {}), std::invalid_argument);  // a scope of another description
}

}  // namespace
}  // namespace kernlathe
