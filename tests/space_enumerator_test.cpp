#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using ::testing::HasSubstr;

Value integer(std::int64_t value) { return Value{value}; }

Parameter integer_parameter(const std::string& name, std::vector<std::int64_t> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::integer;
  for (std::int64_t value : values) parameter.values.push_back(integer(value));
  parameter.default_value = parameter.values.front();
  parameter.where = {"test.yaml", 1, 1};
  return parameter;
}

Parameter boolean_parameter(const std::string& name) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::boolean;
  parameter.values = {Value{false}, Value{true}};
  parameter.default_value = Value{false};
  return parameter;
}

Constraint constraint(const std::string& text, int line = 0) {
  return Constraint{Expression::parse(text, SourceLocation{"space.yaml", line, 7})};
}

DerivedValue derived(const std::string& name, const std::string& text) {
  return DerivedValue{name, Expression::parse(text, SourceLocation{"space.yaml", 0, 0})};
}

std::vector<Configuration> cartesian_product(const Space& space) {
  std::vector<Configuration> all{{}};
  for (const Parameter& parameter : space.parameters) {
    std::vector<Configuration> extended;
    for (const Configuration& prefix : all) {
      for (const Value& value : parameter.values) {
        extended.push_back(prefix);
        extended.back().push_back(value);
      }
    }
    all = std::move(extended);
  }
  return all;
}

// The reference semantics, written independently of the enumerator: every name in one map, derived values in
// declared order, every constraint truthy.
bool brute_force_valid(const Space& space, const Constants& constants, const Configuration& configuration) {
  std::map<std::string, Value> environment(constants.begin(), constants.end());
  for (std::size_t p = 0; p < space.parameters.size(); ++p) {
    environment[space.parameters[p].name] = configuration[p];
  }
  for (const DerivedValue& value : space.derived) environment[value.name] = value.expression.evaluate(environment);
  return std::all_of(space.constraints.begin(), space.constraints.end(), [&](const Constraint& c) {
    return expr::truthy(c.expression.evaluate(environment));
  });
}

// ---------------------------------------------------------------- random spaces

class RandomSpaceBuilder {
 public:
  explicit RandomSpaceBuilder(unsigned seed) : random_(seed) {}

  Space build() {
    Space space;
    space.name = "random";
    int parameter_count = pick(1, 5);
    for (int p = 0; p < parameter_count; ++p) {
      std::string name = "P" + std::to_string(p);
      if (pick(0, 4) == 0) {
        space.parameters.push_back(boolean_parameter(name));
        flags_.push_back(name);
        continue;
      }
      std::vector<std::int64_t> values(10);
      std::iota(values.begin(), values.end(), 0);
      std::shuffle(values.begin(), values.end(), random_);
      values.resize(pick(2, 5));
      std::sort(values.begin(), values.end());
      space.parameters.push_back(integer_parameter(name, values));
      integers_.push_back(name);
    }
    integers_.push_back("K");  // a problem symbol
    int derived_count = pick(0, 2);
    for (int d = 0; d < derived_count; ++d) {
      std::string name = "D" + std::to_string(d);
      space.derived.push_back(derived(name, term(2)));
      integers_.push_back(name);
    }
    int constraint_count = pick(0, 3);
    for (int c = 0; c < constraint_count; ++c) space.constraints.push_back(constraint(condition(2), c + 1));
    return space;
  }

 private:
  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

  std::string term(int depth) {
    int choice = pick(0, depth > 0 ? 6 : 2);
    switch (choice) {
      case 0:
      case 1: return integers_[pick(0, static_cast<int>(integers_.size()) - 1)];
      case 2: return std::to_string(pick(0, 9));
      case 3: return "(" + term(depth - 1) + " + " + term(depth - 1) + ")";
      case 4: return "(" + term(depth - 1) + " - " + term(depth - 1) + ")";
      case 5: return "(" + term(depth - 1) + " * " + term(depth - 1) + ")";
      default: return "(" + term(depth - 1) + " % " + std::to_string(pick(1, 4)) + ")";
    }
  }

  std::string condition(int depth) {
    static const char* comparisons[] = {"<", "<=", "==", "!=", ">", ">="};
    int choice = pick(0, depth > 0 ? 5 : 1);
    if (choice == 1 && !flags_.empty()) return flags_[pick(0, static_cast<int>(flags_.size()) - 1)];
    switch (choice) {
      case 3: return "(" + condition(depth - 1) + " and " + condition(depth - 1) + ")";
      case 4: return "(" + condition(depth - 1) + " or " + condition(depth - 1) + ")";
      case 5: return "not (" + condition(depth - 1) + ")";
      default: return term(1) + " " + comparisons[pick(0, 5)] + " " + term(1);
    }
  }

  std::mt19937 random_;
  std::vector<std::string> integers_;
  std::vector<std::string> flags_;
};

TEST(SpaceEnumerator, MatchesBruteForceOnRandomSpaces) {
  const Constants constants{{"K", integer(6)}};
  int spaces_checked = 0;
  int spaces_with_several_groups_and_constraints = 0;
  for (unsigned seed = 0; spaces_checked < 300; ++seed) {
    Space space = RandomSpaceBuilder(seed).build();
    std::vector<Configuration> all = cartesian_product(space);
    std::set<std::string> expected;
    for (const Configuration& configuration : all) {
      if (brute_force_valid(space, constants, configuration)) expected.insert(to_string(space, configuration));
    }
    if (expected.empty()) {
      EXPECT_THROW(SpaceEnumerator(space, constants), InputError) << "seed " << seed;
      continue;
    }
    ++spaces_checked;
    SCOPED_TRACE("seed " + std::to_string(seed));
    SpaceEnumerator enumerator(space, constants);
    ASSERT_EQ(enumerator.valid_count(), expected.size());
    EXPECT_EQ(enumerator.total_combinations(), static_cast<double>(all.size()));
    std::set<std::string> enumerated;
    for (std::uint64_t i = 0; i < enumerator.valid_count(); ++i) {
      Configuration configuration = enumerator.at(i);
      std::string text = to_string(space, configuration);
      ASSERT_TRUE(expected.count(text)) << text << " is not valid";
      ASSERT_TRUE(enumerated.insert(text).second) << text << " enumerated twice";
      ASSERT_EQ(enumerator.index_of(configuration), i) << text;
    }
    for (const Configuration& configuration : all) {
      bool valid = expected.count(to_string(space, configuration)) > 0;
      ASSERT_EQ(enumerator.is_valid(configuration), valid) << to_string(space, configuration);
      ASSERT_EQ(enumerator.index_of(configuration).has_value(), valid);
    }
    if (space.constraints.size() >= 2 && space.parameters.size() >= 3) ++spaces_with_several_groups_and_constraints;
  }
  // The generator must produce interesting spaces, not only trivial ones.
  EXPECT_GT(spaces_with_several_groups_and_constraints, 50);
}

TEST(SpaceEnumerator, InOrderWalkGivesWhatAtGivesFromAnyStart) {
  const Constants constants{{"K", integer(6)}};
  int spaces_checked = 0;
  for (unsigned seed = 0; spaces_checked < 200; ++seed) {
    Space space = RandomSpaceBuilder(seed).build();
    std::optional<SpaceEnumerator> enumerator;
    try {
      enumerator.emplace(space, constants);
    } catch (const InputError&) {
      continue;  // no valid configuration
    }
    ++spaces_checked;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::uint64_t valid = enumerator->valid_count();
    for (std::uint64_t first : {std::uint64_t{0}, valid / 3, valid - 1}) {
      std::uint64_t index = first;
      enumerator->for_each_in_order(first, valid + 5, [&](std::span<const std::uint32_t> value_indices, std::size_t) {
        ASSERT_LT(index, valid);
        const Configuration expected = enumerator->at(index);
        for (std::size_t p = 0; p < space.parameters.size(); ++p)
          ASSERT_EQ(space.parameters[p].values[value_indices[p]], expected[p]) << "index " << index << " parameter " << p;
        ++index;
      });
      EXPECT_EQ(index, valid) << "from " << first;  // the count is clamped to the end
    }
    std::uint64_t visited = 0;
    enumerator->for_each_in_order(valid, 10, [&](std::span<const std::uint32_t>, std::size_t) { ++visited; });
    EXPECT_EQ(visited, 0u);
  }
}

// Three groups (the first with a conditional parameter, a derived value and a parameter of more than 64 values,
// which the walk checks value by value instead of as bit masks), listed in order by both kinds of enumerator.
Space grouped_conditional_space() {
  return parse_space(R"(
name: grouped
parameters:
  - name: PATH
    type: enum
    values: [alpha, beta]
  - name: A
    range: {from: 0, to: 79}
  - name: NAME
    type: enum
    values: [x, y, z]
  - name: B
    values: [1, 2, 4, 8]
  - name: C
    values: [1, 2, 3]
    when: PATH == "beta"
  - name: FLAG
    type: bool
  - name: D
    values: [0, 3, 5]
derived:
  S: A + B * C
constraints:
  - S % 3 != 0 or C == 1
  - A < 40 * B or PATH == "beta"
  - FLAG or D > 0
)",
                     "grouped.yaml");
}

TEST(SpaceEnumerator, BothKindsWalkInTheOrderOfAtAndSayWhatChanged) {
  const Space space = grouped_conditional_space();
  const SpaceEnumerator indexed(space, {});
  const SpaceEnumerator in_order(space, {}, EnumerationLimits{}, EnumeratorKind::in_order);
  const std::uint64_t valid = indexed.valid_count();
  ASSERT_EQ(in_order.valid_count(), valid);
  ASSERT_GT(valid, 2000u);
  for (const SpaceEnumerator* enumerator : {&indexed, &in_order}) {
    for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{1}, valid / 3 + 7, valid - 1}) {
      SCOPED_TRACE(fmt::format("{} from {}", enumerator == &indexed ? "indexed" : "in order", first));
      std::uint64_t index = first;
      std::optional<Configuration> previous;
      enumerator->for_each_in_order(first, valid, [&](std::span<const std::uint32_t> value_indices,
                                                      std::size_t first_changed) {
        ASSERT_LT(index, valid);
        const Configuration expected = indexed.at(index);
        Configuration visited;
        for (std::size_t p = 0; p < space.parameters.size(); ++p)
          visited.push_back(space.parameters[p].values[value_indices[p]]);
        ASSERT_EQ(visited, expected) << "index " << index;
        if (!previous) {
          EXPECT_EQ(first_changed, 0u);
        }
        // What comes before first_changed is the configuration before's; where it says a change starts, one is.
        for (std::size_t p = 0; previous && p < first_changed; ++p) ASSERT_EQ(visited[p], (*previous)[p]) << index;
        if (previous && first_changed < visited.size()) {
          bool differs = false;
          for (std::size_t p = first_changed; p < visited.size(); ++p)
            differs = differs || visited[p] != (*previous)[p];
          EXPECT_TRUE(differs) << "index " << index;
        }
        previous = visited;
        ++index;
      });
      EXPECT_EQ(index, valid);
    }
  }
}

TEST(SpaceEnumerator, AnInOrderEnumeratorHasNoIndex) {
  const SpaceEnumerator in_order(grouped_conditional_space(), {}, EnumerationLimits{}, EnumeratorKind::in_order);
  const SpaceEnumerator indexed(grouped_conditional_space(), {});
  const Configuration configuration = indexed.at(5);
  for (const std::function<void()>& needs_index : std::vector<std::function<void()>>{
           [&] { in_order.at(5); }, [&] { in_order.index_of(configuration); }, [&] { in_order.sample(3, 1); },
           [&] { in_order.neighbours(configuration); }}) {
    try {
      needs_index();
      ADD_FAILURE() << "expected a TunerError";
    } catch (const TunerError& error) {
      EXPECT_THAT(std::string(error.what()), HasSubstr("built to walk it in order only"));
    }
  }
  EXPECT_EQ(in_order.canonical(configuration), configuration);
}

TEST(SpaceEnumerator, NeighboursMatchBruteForceOnRandomSpaces) {
  const Constants constants{{"K", integer(6)}};
  int checked = 0;
  for (unsigned seed = 1000; checked < 100; ++seed) {
    Space space = RandomSpaceBuilder(seed).build();
    std::unique_ptr<SpaceEnumerator> enumerator;
    try {
      enumerator = std::make_unique<SpaceEnumerator>(space, constants);
    } catch (const InputError&) {
      continue;  // no valid configuration
    }
    ++checked;
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (const Configuration& configuration : cartesian_product(space)) {
      for (bool adjacent_only : {true, false}) {
        std::set<std::string> expected;
        for (std::size_t p = 0; p < space.parameters.size(); ++p) {
          const auto& values = space.parameters[p].values;
          auto position = std::find(values.begin(), values.end(), configuration[p]) - values.begin();
          for (std::size_t other = 0; other < values.size(); ++other) {
            auto distance = static_cast<std::ptrdiff_t>(other) - position;
            if (distance == 0 || (adjacent_only && std::abs(distance) != 1)) continue;
            Configuration candidate = configuration;
            candidate[p] = values[other];
            if (brute_force_valid(space, constants, candidate)) expected.insert(to_string(space, candidate));
          }
        }
        std::set<std::string> found;
        for (const Configuration& neighbour : enumerator->neighbours(configuration, adjacent_only)) {
          int differences = 0;
          for (std::size_t p = 0; p < space.parameters.size(); ++p) differences += neighbour[p] != configuration[p];
          EXPECT_EQ(differences, 1);
          EXPECT_TRUE(enumerator->is_valid(neighbour));
          found.insert(to_string(space, neighbour));
        }
        EXPECT_EQ(found, expected) << to_string(space, configuration) << " adjacent_only=" << adjacent_only;
      }
    }
  }
}

// ---------------------------------------------------------------- a GEMM-like space

Space gemm_space() {
  Space space;
  space.name = "gemm";
  space.parameters = {
      integer_parameter("BM", {16, 32, 64, 128}),      integer_parameter("BN", {16, 32, 64, 128}),
      integer_parameter("BK", {8, 16, 32}),            integer_parameter("TM", {1, 2, 4, 8}),
      integer_parameter("TN", {1, 2, 4, 8}),           boolean_parameter("DOUBLE_BUFFER"),
      integer_parameter("UNROLL", {1, 2, 4}),  // read by no constraint
  };
  space.derived = {derived("THREADS", "(BM // TM) * (BN // TN)"),
                   derived("SHARED_BYTES", "(BM + BN) * BK * 4 * (2 if DOUBLE_BUFFER else 1)")};
  space.constraints = {constraint("BM % TM == 0 and BN % TN == 0", 1),
                       constraint("32 <= THREADS <= max_threads_per_block", 2),
                       constraint("SHARED_BYTES <= max_shared_memory_per_block", 3)};
  return space;
}

const Constants gemm_constants{{"max_threads_per_block", integer(256)},
                               {"max_shared_memory_per_block", integer(16384)}};

TEST(SpaceEnumerator, GemmSpaceCountsAndKeepsAFreeParameterSeparate) {
  Space space = gemm_space();
  SpaceEnumerator enumerator(space, gemm_constants);
  std::uint64_t expected = 0;
  for (const Configuration& configuration : cartesian_product(space)) {
    expected += brute_force_valid(space, gemm_constants, configuration);
  }
  EXPECT_EQ(enumerator.valid_count(), expected);
  EXPECT_EQ(enumerator.valid_count() % 3, 0u);  // UNROLL multiplies the count
  EXPECT_EQ(enumerator.total_combinations(), 4.0 * 4 * 3 * 4 * 4 * 2 * 3);
  // Group-major order: UNROLL, a group of its own declared last, is the fastest-varying digit.
  EXPECT_EQ(enumerator.at(0)[6], integer(1));
  EXPECT_EQ(enumerator.at(1)[6], integer(2));
  EXPECT_EQ(enumerator.at(2)[6], integer(4));
  Configuration first = enumerator.at(0);
  Configuration fourth = enumerator.at(3);
  first.pop_back();
  fourth.pop_back();
  EXPECT_NE(first, fourth);
}

// ---------------------------------------------------------------- conditional parameters

Parameter enum_parameter(const std::string& name, std::vector<std::string> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::enumeration;
  for (std::string& value : values) parameter.values.push_back(Value{std::move(value)});
  parameter.default_value = parameter.values.front();
  return parameter;
}

Parameter conditional(Parameter parameter, const std::string& when, std::optional<Value> default_value = {}) {
  parameter.relevant_when = Expression::parse(when, SourceLocation{"space.yaml", 9, 11});
  if (default_value) parameter.default_value = *default_value;
  return parameter;
}

// Two paths: X matters to path a only, Y (default 5) to path b only, Z to path b with Y == 4 only (a chain).
Space two_path_space() {
  Space space;
  space.name = "paths";
  space.parameters = {enum_parameter("PATH", {"a", "b"}),
                      conditional(integer_parameter("X", {1, 2, 3}), "PATH == \"a\""),
                      conditional(integer_parameter("Y", {4, 5}), "PATH == \"b\"", integer(5)),
                      conditional(boolean_parameter("Z"), "PATH == \"b\" and Y == 4")};
  return space;
}

// The reference semantics: the canonical form sets each parameter whose condition is false (given the canonical
// values before it) to its default; the distinct canonical forms of valid configurations are the space.
Configuration brute_force_canonical(const Space& space, const Constants& constants, Configuration configuration) {
  std::map<std::string, Value> environment(constants.begin(), constants.end());
  for (std::size_t p = 0; p < space.parameters.size(); ++p) {
    const Parameter& parameter = space.parameters[p];
    if (!parameter.relevant_when.empty() && !expr::truthy(parameter.relevant_when.evaluate(environment)))
      configuration[p] = parameter.default_value;
    environment[parameter.name] = configuration[p];
  }
  return configuration;
}

TEST(SpaceEnumerator, ConditionalParametersGiveEachCanonicalConfigurationOnce) {
  Space space = two_path_space();
  SpaceEnumerator enumerator(space, {});
  // Path a: 3 values of X. Path b: Y = 5 (Z irrelevant) or Y = 4 with Z false or true.
  ASSERT_EQ(enumerator.valid_count(), 3u + 1u + 2u);
  std::set<std::string> expected;
  for (const Configuration& configuration : cartesian_product(space))
    expected.insert(to_string(space, brute_force_canonical(space, {}, configuration)));
  std::set<std::string> enumerated;
  for (std::uint64_t index = 0; index < enumerator.valid_count(); ++index) {
    Configuration configuration = enumerator.at(index);
    EXPECT_EQ(enumerator.canonical(configuration), configuration);
    EXPECT_EQ(enumerator.index_of(configuration), index);
    enumerated.insert(to_string(space, configuration));
  }
  EXPECT_EQ(enumerated, expected);
  std::set<std::string> sampled;
  for (const Configuration& configuration : enumerator.sample(100, 7)) sampled.insert(to_string(space, configuration));
  EXPECT_EQ(sampled, expected);
}

TEST(SpaceEnumerator, ConfigurationsDifferingInIrrelevantParametersAreOne) {
  SpaceEnumerator enumerator(two_path_space(), {});
  const Configuration written{Value{std::string("b")}, integer(3), integer(5), Value{true}};
  const Configuration canonical{Value{std::string("b")}, integer(1), integer(5), Value{false}};
  EXPECT_EQ(enumerator.canonical(written), canonical);
  EXPECT_TRUE(enumerator.is_valid(written));
  EXPECT_EQ(enumerator.index_of(written), enumerator.index_of(canonical));
  EXPECT_EQ(enumerator.relevance(written), (std::vector<bool>{true, false, true, false}));
  const Configuration chained{Value{std::string("b")}, integer(2), integer(4), Value{true}};
  EXPECT_EQ(enumerator.relevance(chained), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(enumerator.canonical(chained)[1], integer(1));
  EXPECT_EQ(enumerator.canonical(chained)[3], Value{true});
  EXPECT_TRUE(enumerator.has_conditions());
  EXPECT_FALSE(SpaceEnumerator(gemm_space(), gemm_constants).has_conditions());
}

TEST(SpaceEnumerator, OneMoveSwitchesThePathAndIrrelevantMovesAreNone) {
  SpaceEnumerator enumerator(two_path_space(), {});
  const Configuration on_a{Value{std::string("a")}, integer(2), integer(5), Value{false}};
  std::set<std::string> found;
  for (const Configuration& neighbour : enumerator.neighbours(on_a, false)) {
    EXPECT_EQ(enumerator.canonical(neighbour), neighbour);
    found.insert(to_string(enumerator.space(), neighbour));
  }
  // X to 1 or 3, or PATH to b (X back to its default, Y at its default 5); moving Y or Z changes nothing.
  EXPECT_EQ(found, (std::set<std::string>{"PATH=a X=1 Y=5 Z=false", "PATH=a X=3 Y=5 Z=false",
                                          "PATH=b X=1 Y=5 Z=false"}));
}

TEST(SpaceEnumerator, AMoveWhoseNewlyRelevantDefaultsAreInvalidTakesAValueThatFits) {
  Space space = two_path_space();
  space.constraints = {constraint("PATH != \"b\" or Y == 4", 1)};  // Y's default 5 never fits path b
  SpaceEnumerator enumerator(space, {});
  const Configuration on_a{Value{std::string("a")}, integer(3), integer(5), Value{false}};
  std::set<std::string> found;
  for (const Configuration& neighbour : enumerator.neighbours(on_a, true)) found.insert(to_string(space, neighbour));
  EXPECT_EQ(found, (std::set<std::string>{"PATH=a X=2 Y=5 Z=false", "PATH=b X=1 Y=4 Z=false"}));
}

TEST(SpaceEnumerator, ConditionsMatchBruteForceOnRandomSpaces) {
  const Constants constants{{"K", integer(6)}};
  int checked = 0;
  for (unsigned seed = 2000; checked < 60; ++seed) {
    Space space = RandomSpaceBuilder(seed).build();
    if (space.parameters.size() < 2) continue;
    // Every parameter after the first relevant only when the first is at one of its values or above.
    const Parameter& first = space.parameters[0];
    for (std::size_t p = 1; p < space.parameters.size(); ++p) {
      std::string threshold = expr::to_string(first.values[p % first.values.size()]);
      std::string when = first.type == ParameterType::boolean
                             ? (p % 2 ? first.name : "not " + first.name)
                             : fmt::format("{} >= {}", first.name, threshold);
      space.parameters[p] = conditional(space.parameters[p], when);
    }
    std::unique_ptr<SpaceEnumerator> enumerator;
    try {
      enumerator = std::make_unique<SpaceEnumerator>(space, constants);
    } catch (const InputError&) {
      continue;
    }
    ++checked;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::set<std::string> expected;
    for (const Configuration& configuration : cartesian_product(space)) {
      Configuration canonical = brute_force_canonical(space, constants, configuration);
      if (brute_force_valid(space, constants, canonical)) expected.insert(to_string(space, canonical));
      EXPECT_EQ(enumerator->is_valid(configuration), brute_force_valid(space, constants, canonical));
    }
    std::set<std::string> enumerated;
    for (std::uint64_t index = 0; index < enumerator->valid_count(); ++index)
      enumerated.insert(to_string(space, enumerator->at(index)));
    EXPECT_EQ(enumerated, expected);
    EXPECT_EQ(enumerator->valid_count(), expected.size());
  }
}

TEST(SpaceEnumerator, AConditionReadingALaterParameterOrADerivedValueIsAnInputError) {
  Space later = two_path_space();
  later.parameters[1] = conditional(later.parameters[1], "Y == 4");
  try {
    SpaceEnumerator enumerator(later, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("space.yaml:9:11: the condition 'Y == 4' of parameter 'X' reads the "
                                        "parameter declared after it 'Y'"));
  }
  Space reads_derived = two_path_space();
  reads_derived.derived = {derived("TWICE", "2 * X")};
  reads_derived.parameters[2] = conditional(reads_derived.parameters[2], "TWICE > 2");
  try {
    SpaceEnumerator enumerator(reads_derived, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("reads the derived value 'TWICE'"));
  }
}

TEST(SpaceEnumerator, AConditionMayReadProblemSymbols) {
  Space space = two_path_space();
  space.parameters[1] = conditional(space.parameters[1], "PATH == \"a\" and K > 4");
  EXPECT_EQ(SpaceEnumerator(space, {{"K", integer(6)}}).valid_count(), 6u);
  EXPECT_EQ(SpaceEnumerator(space, {{"K", integer(2)}}).valid_count(), 4u);  // X irrelevant: path a is one
}

TEST(SpaceEnumerator, BindingsAndDerivedValues) {
  Space space = gemm_space();
  SpaceEnumerator enumerator(space, gemm_constants);
  Configuration configuration = {integer(64), integer(32), integer(16), integer(4), integer(2), Value{true},
                                 integer(2)};
  ASSERT_TRUE(enumerator.is_valid(configuration));
  auto values = enumerator.derived_values(configuration);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].first, "THREADS");
  EXPECT_EQ(values[0].second, integer(16 * 16));
  EXPECT_EQ(values[1].first, "SHARED_BYTES");
  EXPECT_EQ(values[1].second, integer((64 + 32) * 16 * 4 * 2));
  Bindings bindings = enumerator.bindings(configuration);
  EXPECT_EQ(bindings.get("BK"), integer(16));
  EXPECT_EQ(bindings.get("max_threads_per_block"), integer(256));
  EXPECT_EQ(bindings.get("SHARED_BYTES"), integer(12288));
  EXPECT_THROW(bindings.get("NOT_A_NAME"), TunerError);
  EXPECT_EQ(to_string(space, configuration), "BM=64 BN=32 BK=16 TM=4 TN=2 DOUBLE_BUFFER=true UNROLL=2");
}

TEST(SpaceEnumerator, DefaultConfigurationIsTheDeclaredDefaults) {
  Space space = gemm_space();
  space.parameters[0].default_value = integer(128);
  SpaceEnumerator enumerator(space, gemm_constants);
  Configuration defaults = enumerator.default_configuration();
  ASSERT_EQ(defaults.size(), 7u);
  EXPECT_EQ(defaults[0], integer(128));
  EXPECT_EQ(defaults[1], integer(16));
  EXPECT_EQ(defaults[5], Value{false});
  // BM=128 BN=16 TM=1 TN=1: 2048 threads.
  EXPECT_FALSE(enumerator.is_valid(defaults));
}

TEST(SpaceEnumerator, OrderAndSamplesAreDeterministic) {
  SpaceEnumerator first(gemm_space(), gemm_constants);
  SpaceEnumerator second(gemm_space(), gemm_constants);
  ASSERT_EQ(first.valid_count(), second.valid_count());
  for (std::uint64_t i = 0; i < first.valid_count(); ++i) ASSERT_EQ(first.at(i), second.at(i));
  EXPECT_EQ(first.sample(20, 7), second.sample(20, 7));
  EXPECT_NE(first.sample(20, 7), first.sample(20, 8));
}

TEST(SpaceEnumerator, SampleReturnsDistinctValidConfigurations) {
  SpaceEnumerator enumerator(gemm_space(), gemm_constants);
  std::uint64_t valid = enumerator.valid_count();
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{10}, valid / 2, valid / 2 + 1, valid - 1, valid,
                          valid + 100}) {
    auto drawn = enumerator.sample(n, 42);
    EXPECT_EQ(drawn.size(), std::min(n, valid));
    std::set<std::uint64_t> indices;
    for (const Configuration& configuration : drawn) {
      auto index = enumerator.index_of(configuration);
      ASSERT_TRUE(index.has_value());
      indices.insert(*index);
    }
    EXPECT_EQ(indices.size(), drawn.size()) << "n=" << n;
  }
  EXPECT_TRUE(enumerator.sample(0, 1).empty());
}

// ---------------------------------------------------------------- sampling uniformity

// 50 valid configurations: A and B in 1..10 with an even sum.
Space fifty_space() {
  Space space;
  space.name = "fifty";
  space.parameters = {integer_parameter("A", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
                      integer_parameter("B", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})};
  space.constraints = {constraint("(A + B) % 2 == 0")};
  return space;
}

double chi_square(const std::vector<int>& observed, double expected_per_cell) {
  double sum = 0;
  for (int count : observed) sum += (count - expected_per_cell) * (count - expected_per_cell) / expected_per_cell;
  return sum;
}

TEST(SpaceEnumerator, SampleIsUniform) {
  SpaceEnumerator enumerator(fifty_space(), {});
  ASSERT_EQ(enumerator.valid_count(), 50u);
  const int draws = 50000;
  const double quantile_999_with_49_degrees = 85.35;
  std::vector<int> counts(50, 0);
  std::vector<int> biased_counts(50, 0);
  for (int seed = 0; seed < draws; ++seed) {
    auto drawn = enumerator.sample(1, static_cast<std::uint64_t>(seed));
    ASSERT_EQ(drawn.size(), 1u);
    ++counts[*enumerator.index_of(drawn[0])];
    // The classic mistake the test must catch: a small random range folded onto the indices with %.
    std::mt19937_64 generator(static_cast<std::uint64_t>(seed));
    ++biased_counts[(generator() % 64) % 50];
  }
  EXPECT_LT(chi_square(counts, draws / 50.0), quantile_999_with_49_degrees);
  EXPECT_GT(chi_square(biased_counts, draws / 50.0), quantile_999_with_49_degrees);

  // Several draws per seed: every position of the draw order is uniform too.
  std::vector<int> second_draw_counts(50, 0);
  for (int seed = 0; seed < draws; ++seed) {
    auto drawn = enumerator.sample(5, static_cast<std::uint64_t>(seed) + 1'000'000);
    ++second_draw_counts[*enumerator.index_of(drawn[1])];
  }
  EXPECT_LT(chi_square(second_draw_counts, draws / 50.0), quantile_999_with_49_degrees);
}

// ---------------------------------------------------------------- errors

TEST(SpaceEnumerator, DivisionByZeroNamesTheConstraintAndTheValues) {
  Space space;
  space.name = "divide";
  space.parameters = {integer_parameter("BLOCK", {32, 0, 64}), integer_parameter("VEC", {1, 2})};
  space.constraints = {constraint("N // BLOCK >= VEC", 4)};
  try {
    SpaceEnumerator enumerator(space, {{"N", integer(1024)}});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_THAT(message, HasSubstr("space.yaml:4:7"));
    EXPECT_THAT(message, HasSubstr("division"));
    EXPECT_THAT(message, HasSubstr("'N // BLOCK >= VEC'"));
    EXPECT_THAT(message, HasSubstr("BLOCK=0"));
  }
}

TEST(SpaceEnumerator, AGuardingConstraintPreventsTheDivisionByZero) {
  Space space;
  space.name = "guarded";
  space.parameters = {integer_parameter("BLOCK", {32, 0, 64}), integer_parameter("VEC", {1, 2})};
  space.constraints = {constraint("BLOCK > 0"), constraint("N // BLOCK >= VEC")};
  SpaceEnumerator enumerator(space, {{"N", integer(1024)}});
  EXPECT_EQ(enumerator.valid_count(), 4u);
}

TEST(SpaceEnumerator, DivisionByZeroInADerivedValue) {
  Space space;
  space.name = "divide";
  space.parameters = {integer_parameter("BLOCK", {32, 0}), integer_parameter("VEC", {1, 2})};
  space.derived = {derived("BLOCKS", "N // BLOCK")};
  space.constraints = {constraint("BLOCKS >= VEC", 2)};
  try {
    SpaceEnumerator enumerator(space, {{"N", integer(1024)}});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("derived value BLOCKS 'N // BLOCK' cannot be evaluated for BLOCK=0"));
    EXPECT_THAT(error.what(), HasSubstr("BLOCK=0"));
  }
}

TEST(SpaceEnumerator, NoValidConfigurationNamesTheMostRejectingConstraint) {
  Space space;
  space.name = "empty";
  space.parameters = {integer_parameter("A", {1, 2, 3}), integer_parameter("B", {1, 2, 3})};
  space.constraints = {constraint("A > 0", 1), constraint("A + B > 10", 2)};
  try {
    SpaceEnumerator enumerator(space, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_THAT(message, HasSubstr("no valid configuration"));
    EXPECT_THAT(message, HasSubstr("'A + B > 10'"));
    EXPECT_THAT(message, HasSubstr("space.yaml:2:7"));
  }
}

TEST(SpaceEnumerator, AConstraintOfConstantsOnlyThatIsFalse) {
  Space space;
  space.name = "constants";
  space.parameters = {integer_parameter("A", {1, 2})};
  space.constraints = {constraint("N % 4 == 0", 3)};
  try {
    SpaceEnumerator enumerator(space, {{"N", integer(6)}});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("no valid configuration"));
    EXPECT_THAT(error.what(), HasSubstr("N=6"));
  }
  SpaceEnumerator enumerator(space, {{"N", integer(8)}});
  EXPECT_EQ(enumerator.valid_count(), 2u);
}

TEST(SpaceEnumerator, UnknownNameIsAnInputError) {
  Space space;
  space.name = "unknown";
  space.parameters = {integer_parameter("BLOCK", {32, 64})};
  space.constraints = {constraint("BLOK <= 64", 5)};
  try {
    SpaceEnumerator enumerator(space, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("BLOK"));
    EXPECT_THAT(error.what(), HasSubstr("space.yaml:5"));
  }
}

TEST(SpaceEnumerator, ParameterShadowingAConstantIsAnInputError) {
  Space space;
  space.name = "shadow";
  space.parameters = {integer_parameter("N", {32, 64})};
  EXPECT_THROW(SpaceEnumerator(space, {{"N", integer(1024)}}), InputError);
}

// ---------------------------------------------------------------- a group too large to tabulate

// Four parameters of 17 values read by one constraint: 83521 combinations, above the table limit, so the
// constraint and its derived value are evaluated during the walk rather than looked up.
TEST(SpaceEnumerator, WalkEvaluationMatchesBruteForce) {
  Space space;
  space.name = "wide";
  std::vector<std::int64_t> values(17);
  std::iota(values.begin(), values.end(), 0);
  for (const char* name : {"A", "B", "C", "E"}) space.parameters.push_back(integer_parameter(name, values));
  space.derived = {derived("MIX", "A * B + C * E")};
  space.constraints = {constraint("MIX % 7 == 3 and A <= B"), constraint("A + B + C + E < 40")};
  SpaceEnumerator enumerator(space, {});
  std::uint64_t expected = 0;
  for (std::int64_t a : values) {
    for (std::int64_t b : values) {
      for (std::int64_t c : values) {
        for (std::int64_t e : values) expected += (a * b + c * e) % 7 == 3 && a <= b && a + b + c + e < 40;
      }
    }
  }
  ASSERT_EQ(enumerator.valid_count(), expected);
  for (std::uint64_t i = 0; i < expected; i += 97) {
    Configuration configuration = enumerator.at(i);
    auto get = [&](int p) { return std::get<std::int64_t>(configuration[p]); };
    EXPECT_EQ((get(0) * get(1) + get(2) * get(3)) % 7, 3);
    EXPECT_EQ(enumerator.index_of(configuration), i);
  }

  space.parameters[3] = integer_parameter("E", {1, 0});
  space.constraints = {constraint("A * B + C // E >= 0", 9)};
  try {
    SpaceEnumerator failing(space, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("space.yaml:9:7"));
    EXPECT_THAT(error.what(), HasSubstr("E=0"));
  }
}

TEST(SpaceEnumerator, ParameterReadByNoConstraint) {
  Space space;
  space.name = "free";
  space.parameters = {integer_parameter("A", {1, 2, 3, 4}), integer_parameter("FREE", {7, 8, 9}),
                      integer_parameter("B", {1, 2, 3, 4})};
  space.constraints = {constraint("A < B")};
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 6u * 3u);
  std::set<std::int64_t> free_values;
  for (std::uint64_t i = 0; i < enumerator.valid_count(); ++i) {
    Configuration configuration = enumerator.at(i);
    EXPECT_LT(std::get<std::int64_t>(configuration[0]), std::get<std::int64_t>(configuration[2]));
    free_values.insert(std::get<std::int64_t>(configuration[1]));
    EXPECT_EQ(enumerator.index_of(configuration), i);
  }
  EXPECT_EQ(free_values, (std::set<std::int64_t>{7, 8, 9}));
  EXPECT_FALSE(enumerator.is_valid({integer(1), integer(5), integer(2)}));  // 5 is not a declared value
  EXPECT_FALSE(enumerator.is_valid({integer(1), integer(7)}));              // wrong size
}

TEST(SpaceEnumerator, NoConstraintsAtAll) {
  Space space;
  space.name = "plain";
  space.parameters = {integer_parameter("A", {1, 2}), boolean_parameter("F")};
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 4u);
  EXPECT_EQ(to_string(space, enumerator.at(0)), "A=1 F=false");
  EXPECT_EQ(to_string(space, enumerator.at(1)), "A=1 F=true");
  EXPECT_EQ(to_string(space, enumerator.at(3)), "A=2 F=true");
  EXPECT_THROW(enumerator.at(4), TunerError);
}

TEST(SpaceEnumerator, MovedEnumeratorKeepsWorking) {
  SpaceEnumerator original(fifty_space(), {});
  SpaceEnumerator moved = std::move(original);
  EXPECT_EQ(moved.valid_count(), 50u);
  EXPECT_EQ(moved.space().name, "fifty");
}

// ---------------------------------------------------------------- limits (issue item 6)

std::vector<std::int64_t> zero_to(std::int64_t last) {
  std::vector<std::int64_t> values;
  for (std::int64_t value = 0; value <= last; ++value) values.push_back(value);
  return values;
}

std::string input_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  }
  return "no InputError";
}

TEST(SpaceEnumerator, AGroupBeyondTheNodeLimitIsAnInputErrorNamingItsParametersAndConstraints) {
  Space space;
  space.name = "coupled";
  space.parameters = {boolean_parameter("FREE"), integer_parameter("A", zero_to(999)),
                      integer_parameter("B", zero_to(999))};
  space.parameters[1].where = {"coupled.yaml", 4, 7};
  space.constraints = {constraint("A <= B")};
  EnumerationLimits limits;
  limits.max_tree_nodes = 10000;
  std::string message = input_error_of([&] { SpaceEnumerator(space, {}, limits); });
  EXPECT_THAT(message, HasSubstr("coupled.yaml:4:7: space 'coupled' is too large to enumerate: the parameters A, B "
                                 "are tied together by the constraints 'A <= B' and their valid combinations need "
                                 "more than 10000 prefix-tree nodes"));
  // The same space fits a budget of its 500,500 leaves and 1000 inner nodes.
  limits.max_tree_nodes = 501500;
  SpaceEnumerator fits(space, {}, limits);
  EXPECT_EQ(fits.valid_count(), 2u * 500500u);
  limits.max_tree_nodes = 501499;
  EXPECT_THAT(input_error_of([&] { SpaceEnumerator(space, {}, limits); }), HasSubstr("501499 prefix-tree nodes"));
}

TEST(SpaceEnumerator, AWalkThatPrunesLateStopsAtTheCandidateLimit) {
  Space space;
  space.name = "diagonal";
  space.parameters = {integer_parameter("A", zero_to(999)), integer_parameter("B", zero_to(999)),
                      integer_parameter("C", {1, 2, 3})};
  // Only 3000 valid configurations, but every one of the 10^6 (A, B) pairs is tried: a million candidates.
  space.constraints = {constraint("A == B + C - C"), constraint("C >= 1")};
  EnumerationLimits limits;
  limits.max_candidates = 100000;
  std::string message = input_error_of([&] { SpaceEnumerator(space, {}, limits); });
  EXPECT_THAT(message, HasSubstr("the parameters A, B, C are tied together by the constraints 'A == B + C - C', "
                                 "'C >= 1' and walking them tries more than 100000 candidate values (the "
                                 "enumeration limit) of 3e+06 combinations"));
  limits.max_candidates = 5000000;
  EXPECT_EQ(SpaceEnumerator(space, {}, limits).valid_count(), 3000u);
}

TEST(SpaceEnumerator, TheNodeLimitCountsEveryGroup) {
  Space space;
  space.name = "two_groups";
  space.parameters = {integer_parameter("A", zero_to(99)), integer_parameter("B", zero_to(99)),
                      integer_parameter("C", zero_to(99)), integer_parameter("D", zero_to(99))};
  space.constraints = {constraint("A <= B"), constraint("C <= D")};
  EnumerationLimits limits;
  limits.max_tree_nodes = 2 * (5050 + 100);  // each group: 5050 leaves under 100 inner nodes
  EXPECT_EQ(SpaceEnumerator(space, {}, limits).valid_count(), 5050u * 5050u);
  limits.max_tree_nodes -= 1;
  EXPECT_THAT(input_error_of([&] { SpaceEnumerator(space, {}, limits); }),
              HasSubstr("the parameters C, D are tied together by the constraints 'C <= D'"));
}

// spaces/bench_large.yaml (17 million valid configurations, the largest space the project measures) fits the
// default limits.
TEST(SpaceEnumerator, TheDefaultLimitsHoldTheLargeBenchmarkSpace) {
  Space space = load_space(std::string(KERNLATHE_SOURCE_DIR) + "/spaces/bench_large.yaml");
  Constants constants = device_property_values(device_profile("sm_90"));
  for (const char* symbol : {"M", "N", "K"}) constants.emplace_back(symbol, Value{std::int64_t{4096}});
  SpaceEnumerator enumerator(space, constants);
  EXPECT_EQ(enumerator.valid_count(), 17227164u);
}

TEST(SpaceEnumerator, ASampleBeyondTheBoundIsAnInputErrorAndDrawsAreStreamed) {
  Space space;
  space.name = "trillion";
  for (const char* name : {"P", "Q", "R", "S"}) space.parameters.push_back(integer_parameter(name, zero_to(999)));
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 1000000000000u);
  EXPECT_THAT(input_error_of([&] { enumerator.sample(600000000000u, 1); }),
              HasSubstr("cannot sample 600000000000 of the 1000000000000 valid configurations of space 'trillion': "
                        "at most 1048576 are drawn at once"));
  EXPECT_THAT(input_error_of([&] { enumerator.sample(max_sample_size + 1, 1); }), HasSubstr("at most 1048576"));
  std::vector<Configuration> streamed;
  enumerator.for_each_sample(100, 9, [&](const Configuration& configuration) { streamed.push_back(configuration); });
  EXPECT_EQ(streamed, enumerator.sample(100, 9));
  EXPECT_EQ(streamed.size(), 100u);
  // A small space asked for more than the bound hands out all of it.
  EXPECT_EQ(SpaceEnumerator(fifty_space(), {}).sample(600000000000u, 1).size(), 50u);
}

}  // namespace
}  // namespace kernlathe
