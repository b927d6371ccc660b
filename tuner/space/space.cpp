#include "tuner/space/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <random>
#include <tuple>
#include <unordered_set>

#include "tuner/space/prefix_tree.h"

namespace kernlathe {

using space_detail::PrefixTree;

namespace {

// A constraint whose parameters have at most this many value combinations is evaluated once per combination
// before the walk and then looked up: the walk checks it once per visited prefix, typically millions of times.
constexpr std::uint64_t table_entry_limit = 1u << 16;

enum TableEntry : std::uint8_t { entry_rejects = 0, entry_accepts = 1, entry_fails = 2 };

// A parameter with at most this many values is checked against the tables of its level all at once, one bit per
// value (the walk's masks).
constexpr std::uint32_t mask_bits = 64;

struct TabulatedConstraint {
  int constraint = 0;
  std::vector<std::pair<int, std::uint64_t>> level_strides;  // (level in the group, stride in table)
  std::vector<std::uint8_t> table;
  // Where the level that checks it (the deepest it reads, stride 1) has at most mask_bits values: the table as rows
  // of that level's values, a row per combination of the others (row = sum of value index * stride / values, over
  // row_strides), with a bit per value that the constraint accepts, and one per value where it fails.
  std::vector<std::pair<int, std::uint64_t>> row_strides;
  std::vector<std::uint64_t> accepting_rows;
  std::vector<std::uint64_t> failing_rows;
};

// What the walk does when it binds the parameter of one level.
struct Level {
  int parameter = 0;
  int slot = 0;
  std::uint32_t value_count = 0;
  bool masked = false;             // value_count <= mask_bits: its tables are applied as masks
  bool assigns_slot = false;       // some expression evaluated during the walk reads it
  std::vector<int> tabulated;      // indices into Group::tabulated
  std::vector<int> derived;        // derived values computed here, in declared order
  std::vector<int> constraints;    // constraints evaluated here
  bool evaluates() const { return assigns_slot || !derived.empty() || !constraints.empty(); }
};

struct Group {
  std::vector<int> parameters;  // in binding order (the levels)
  std::vector<int> constraints;
  std::vector<Level> levels;
  std::vector<TabulatedConstraint> tabulated;
  std::optional<PrefixTree> tree;  // absent for a parameter read by no constraint, and for a group walked again
  bool walked_again = false;       // an `in_order` enumerator's first group: counted, kept as its walk plan
  std::uint64_t count = 0;
  // Per level, the first parameter in declared order among those of that level and the levels below it: what may
  // have changed when the walk moved on at that level.
  std::vector<std::size_t> first_declared_from;
};

// The message of an evaluation error without its "file:line:column: " prefix, so that it can be restated at
// the location of the constraint that failed.
std::string reason_of(const InputError& error) {
  std::string message = error.what();
  std::string prefix = error.where().to_string();
  if (!prefix.empty() && message.starts_with(prefix + ": ")) message.erase(0, prefix.size() + 2);
  return message;
}

std::uint64_t uniform_below(std::mt19937_64& generator, std::uint64_t bound) {
  // Rejection keeps the draw exactly uniform; written out because std::uniform_int_distribution differs
  // between standard libraries and samples must be reproducible from the seed alone.
  std::uint64_t threshold = (0 - bound) % bound;
  while (true) {
    std::uint64_t draw = generator();
    if (draw >= threshold) return draw % bound;
  }
}

bool same_value(const Value& a, const Value& b) {
  if (a.index() == b.index()) return a == b;
  return expr::operator_equal(a, b);
}

}  // namespace

std::string to_string(const Space& space, const Configuration& configuration) {
  std::string text;
  std::size_t count = std::min(space.parameters.size(), configuration.size());
  for (std::size_t i = 0; i < count; ++i) {
    if (!text.empty()) text += ' ';
    text += space.parameters[i].name;
    text += '=';
    text += expr::to_string(configuration[i]);
  }
  return text;
}

Value Bindings::get(std::string_view name) const {
  int slot = scope.slot_of(name);
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots.size()) {
    throw TunerError(fmt::format("no binding named '{}'", name));
  }
  return slots[slot];
}

struct SpaceEnumerator::Impl {
  Space space;
  // The space's constraints, then one per conditional parameter P with condition C: `(C) or P == default`, so
  // that an irrelevant parameter is valid at its default value only and each configuration is enumerated once.
  std::vector<Constraint> checks;
  std::vector<int> conditional;  // parameters with a condition, in declared order
  Constants constants;
  expr::Scope scope;
  std::vector<int> parameter_slot;
  std::vector<int> derived_slot;
  std::vector<Value> base_slots;  // constants, and the derived values that read no parameter

  // Transitive dependencies: the parameters an expression reads directly or through derived values, and the
  // derived values it needs computed first (declared order, which is dependency order).
  std::vector<std::vector<int>> derived_parameters;
  std::vector<std::vector<int>> derived_needs;
  std::vector<std::vector<int>> constraint_parameters;
  std::vector<std::vector<int>> constraint_needs;

  std::vector<Group> groups;
  std::vector<int> group_of_parameter;
  std::vector<int> level_of_parameter;
  std::vector<std::uint64_t> rejections;  // per constraint, for the "no valid configuration" message
  std::uint64_t valid = 1;
  double combinations = 1;
  EnumerationLimits limits;
  EnumeratorKind kind = EnumeratorKind::indexed;
  std::uint64_t tree_nodes = 0;  // over all groups walked so far
  std::uint64_t candidates = 0;

  class Walk;

  void bind_expressions();
  void analyse_dependencies();
  void evaluate_parameter_free();
  void form_groups();
  void order_group(Group& group);
  void plan_group(Group& group);
  void tabulate(TabulatedConstraint& tabulated);
  void walk(Group& group);
  void require_index(const char* what) const;
  [[noreturn]] void throw_no_valid(const Group& group) const;
  [[noreturn]] void throw_too_large(const Group& group, bool too_many_nodes) const;
  [[noreturn]] void throw_walk_failure(const Group& group, int level, std::span<const std::uint32_t> choice,
                                       int constraint) const;
  [[noreturn]] void throw_evaluation_error(const Expression& expression, const std::string& what_failed,
                                           const InputError& error, const std::vector<int>& parameters,
                                           std::span<const Value> slots) const;

  std::string assignments(const std::vector<int>& parameters, std::span<const Value> slots) const;
  std::optional<std::uint32_t> value_index(int parameter, const Value& value) const;
  std::optional<std::uint64_t> index_of(const Configuration& configuration) const;
  std::vector<Value> slots_for(const Configuration& configuration) const;
  // Sets every irrelevant parameter to its default; relevant (when given) receives each parameter's relevance.
  void canonicalize(Configuration& configuration, std::vector<bool>* relevant) const;
  void bind_conditions();
};

// ---------------------------------------------------------------- construction

void SpaceEnumerator::Impl::bind_expressions() {
  for (const auto& [name, value] : constants) {
    int slot = scope.add(name);
    if (static_cast<std::size_t>(slot) == base_slots.size()) {
      base_slots.push_back(value);
    } else {
      base_slots[slot] = value;  // a name given twice: the later value wins
    }
  }
  for (const Parameter& parameter : space.parameters) {
    if (scope.slot_of(parameter.name) >= 0) {
      throw InputError(parameter.where, fmt::format("parameter '{}' is declared twice or shadows a device "
                                                    "property or problem symbol of the same name",
                                                    parameter.name));
    }
    if (parameter.values.empty()) {
      throw InputError(parameter.where, fmt::format("parameter '{}' has no values", parameter.name));
    }
    parameter_slot.push_back(scope.add(parameter.name));
    base_slots.push_back(parameter.default_value);
  }
  // Each derived value sees only the names declared before it, so evaluating in declared order is always
  // possible and a cycle cannot be written.
  for (DerivedValue& derived : space.derived) {
    derived.expression.bind(scope);
    if (scope.slot_of(derived.name) >= 0) {
      throw InputError(derived.expression.where(),
                       fmt::format("derived value '{}' is declared twice or shadows a parameter, device property "
                                   "or problem symbol of the same name",
                                   derived.name));
    }
    derived_slot.push_back(scope.add(derived.name));
    base_slots.emplace_back();
  }
  checks = space.constraints;
  for (Constraint& constraint : checks) constraint.expression.bind(scope);
  bind_conditions();
}

// A condition reads constants and parameters declared before its parameter, so one pass in declared order
// decides every parameter's relevance, and a parameter's default never depends on a later one.
void SpaceEnumerator::Impl::bind_conditions() {
  for (std::size_t p = 0; p < space.parameters.size(); ++p) {
    Parameter& parameter = space.parameters[p];
    Expression& condition = parameter.relevant_when;
    if (condition.empty()) continue;
    for (const std::string& name : condition.names()) {
      int slot = scope.slot_of(name);
      auto later = std::find(parameter_slot.begin() + static_cast<std::ptrdiff_t>(p), parameter_slot.end(), slot);
      const bool derived = std::find(derived_slot.begin(), derived_slot.end(), slot) != derived_slot.end();
      if (slot >= 0 && (later != parameter_slot.end() || derived)) {
        throw InputError(condition.where(),
                         fmt::format("the condition '{}' of parameter '{}' reads {} '{}'; a condition reads device "
                                     "properties, problem symbols and parameters declared before its own",
                                     condition.text(), parameter.name,
                                     derived ? "the derived value" : "the parameter declared after it", name));
      }
    }
    condition.bind(scope);
    const Value& fallback = parameter.default_value;
    std::string literal = std::holds_alternative<std::string>(fallback)
                              ? fmt::format("\"{}\"", std::get<std::string>(fallback))
                          : std::holds_alternative<bool>(fallback) ? (std::get<bool>(fallback) ? "True" : "False")
                                                                     : expr::to_string(fallback);
    Constraint pinned{Expression::parse(fmt::format("({}) or {} == {}", condition.text(), parameter.name, literal),
                                        condition.where())};
    pinned.expression.bind(scope);
    checks.push_back(std::move(pinned));
    conditional.push_back(static_cast<int>(p));
  }
}

void SpaceEnumerator::Impl::analyse_dependencies() {
  std::size_t parameter_count = space.parameters.size();
  // Slot -> parameter index or derived index.
  std::vector<int> parameter_at_slot(scope.size(), -1);
  std::vector<int> derived_at_slot(scope.size(), -1);
  for (std::size_t p = 0; p < parameter_count; ++p) parameter_at_slot[parameter_slot[p]] = static_cast<int>(p);
  for (std::size_t d = 0; d < space.derived.size(); ++d) derived_at_slot[derived_slot[d]] = static_cast<int>(d);

  auto dependencies = [&](const Expression& expression, std::vector<int>& parameters, std::vector<int>& needs) {
    std::vector<bool> parameter_read(parameter_count, false);
    std::vector<bool> derived_needed(space.derived.size(), false);
    for (const std::string& name : expression.names()) {
      int slot = scope.slot_of(name);
      if (slot < 0) continue;
      if (parameter_at_slot[slot] >= 0) parameter_read[parameter_at_slot[slot]] = true;
      if (int d = derived_at_slot[slot]; d >= 0) {
        derived_needed[d] = true;
        for (int p : derived_parameters[d]) parameter_read[p] = true;
        for (int n : derived_needs[d]) derived_needed[n] = true;
      }
    }
    for (std::size_t p = 0; p < parameter_count; ++p) {
      if (parameter_read[p]) parameters.push_back(static_cast<int>(p));
    }
    for (std::size_t d = 0; d < derived_needed.size(); ++d) {
      if (derived_needed[d]) needs.push_back(static_cast<int>(d));
    }
  };
  derived_parameters.resize(space.derived.size());
  derived_needs.resize(space.derived.size());
  for (std::size_t d = 0; d < space.derived.size(); ++d) {
    dependencies(space.derived[d].expression, derived_parameters[d], derived_needs[d]);
  }
  constraint_parameters.resize(checks.size());
  constraint_needs.resize(checks.size());
  for (std::size_t c = 0; c < checks.size(); ++c) {
    dependencies(checks[c].expression, constraint_parameters[c], constraint_needs[c]);
  }
}

void SpaceEnumerator::Impl::evaluate_parameter_free() {
  for (std::size_t d = 0; d < space.derived.size(); ++d) {
    if (!derived_parameters[d].empty()) continue;
    const DerivedValue& derived = space.derived[d];
    try {
      base_slots[derived_slot[d]] = derived.expression.evaluate(base_slots);
    } catch (const expr::EvaluationError& error) {
      throw_evaluation_error(derived.expression, fmt::format("derived value {}", derived.name), error, {},
                             base_slots);
    }
  }
  for (std::size_t c = 0; c < checks.size(); ++c) {
    if (!constraint_parameters[c].empty()) continue;
    const Expression& expression = checks[c].expression;
    bool holds = false;
    try {
      holds = expression.evaluate_bool(base_slots);
    } catch (const expr::EvaluationError& error) {
      throw_evaluation_error(expression, "constraint", error, {}, base_slots);
    }
    if (!holds) {
      std::string values;
      for (const std::string& name : expression.names()) {
        int slot = scope.slot_of(name);
        if (slot < 0) continue;
        values += fmt::format("{}{}={}", values.empty() ? "" : " ", name, expr::to_string(base_slots[slot]));
      }
      throw InputError(expression.where(),
                       fmt::format("no valid configuration in space '{}': constraint '{}' reads no parameter and "
                                   "is false{}{}",
                                   space.name, expression.text(), values.empty() ? "" : " for ", values));
    }
  }
}

void SpaceEnumerator::Impl::form_groups() {
  std::size_t parameter_count = space.parameters.size();
  std::vector<int> parent(parameter_count);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int p) {
    while (parent[p] != p) p = parent[p] = parent[parent[p]];
    return p;
  };
  for (const auto& parameters : constraint_parameters) {
    for (std::size_t i = 1; i < parameters.size(); ++i) parent[root(parameters[i])] = root(parameters[0]);
  }
  // Groups in the order of their first declared parameter, so the enumeration order follows the declaration.
  std::vector<int> group_of_root(parameter_count, -1);
  group_of_parameter.assign(parameter_count, -1);
  for (std::size_t p = 0; p < parameter_count; ++p) {
    int r = root(static_cast<int>(p));
    if (group_of_root[r] < 0) {
      group_of_root[r] = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    group_of_parameter[p] = group_of_root[r];
    groups[group_of_root[r]].parameters.push_back(static_cast<int>(p));
  }
  for (std::size_t c = 0; c < checks.size(); ++c) {
    if (constraint_parameters[c].empty()) continue;
    groups[group_of_parameter[constraint_parameters[c][0]]].constraints.push_back(static_cast<int>(c));
  }
}

// Binds first the parameters that let constraints prune soonest: the one completing the most constraints given
// those already bound, then the one appearing in the most still-open constraints, then the one with the fewest
// values (a narrow top keeps the tree small), then declared order for a stable result.
void SpaceEnumerator::Impl::order_group(Group& group) {
  std::vector<int> unbound = group.parameters;
  std::vector<bool> bound(space.parameters.size(), false);
  std::vector<int> order;
  while (!unbound.empty()) {
    auto best = unbound.end();
    std::tuple<int, int, long, int> best_score{};
    for (auto candidate = unbound.begin(); candidate != unbound.end(); ++candidate) {
      int completes = 0;
      int appears = 0;
      for (int c : group.constraints) {
        const auto& reads = constraint_parameters[c];
        if (!std::binary_search(reads.begin(), reads.end(), *candidate)) continue;
        bool complete = std::all_of(reads.begin(), reads.end(), [&](int p) { return p == *candidate || bound[p]; });
        completes += complete ? 1 : 0;
        appears += 1;
      }
      std::tuple<int, int, long, int> score{completes, appears,
                                            -static_cast<long>(space.parameters[*candidate].values.size()),
                                            -*candidate};
      if (best == unbound.end() || score > best_score) {
        best = candidate;
        best_score = score;
      }
    }
    bound[*best] = true;
    order.push_back(*best);
    unbound.erase(best);
  }
  group.parameters = std::move(order);
}

void SpaceEnumerator::Impl::plan_group(Group& group) {
  group.levels.resize(group.parameters.size());
  for (std::size_t level = 0; level < group.parameters.size(); ++level) {
    int p = group.parameters[level];
    level_of_parameter[p] = static_cast<int>(level);
    group.levels[level].parameter = p;
    group.levels[level].slot = parameter_slot[p];
    group.levels[level].value_count = static_cast<std::uint32_t>(space.parameters[p].values.size());
    group.levels[level].masked = group.levels[level].value_count <= mask_bits;
  }
  auto level_of = [&](const std::vector<int>& parameters) {
    int level = 0;
    for (int p : parameters) level = std::max(level, level_of_parameter[p]);
    return level;
  };
  std::vector<bool> derived_in_walk(space.derived.size(), false);
  for (int c : group.constraints) {
    const auto& parameters = constraint_parameters[c];
    std::uint64_t entries = 1;
    for (int p : parameters) {
      entries *= space.parameters[p].values.size();
      if (entries > table_entry_limit) break;
    }
    Level& level = group.levels[level_of(parameters)];
    if (entries <= table_entry_limit) {
      TabulatedConstraint tabulated;
      tabulated.constraint = c;
      level.tabulated.push_back(static_cast<int>(group.tabulated.size()));
      group.tabulated.push_back(std::move(tabulated));
      continue;
    }
    level.constraints.push_back(c);
    for (int d : constraint_needs[c]) derived_in_walk[d] = true;
    for (int p : parameters) group.levels[level_of_parameter[p]].assigns_slot = true;
  }
  for (std::size_t d = 0; d < space.derived.size(); ++d) {
    if (derived_in_walk[d] && !derived_parameters[d].empty()) {
      group.levels[level_of(derived_parameters[d])].derived.push_back(static_cast<int>(d));
    }
  }
  for (auto& tabulated : group.tabulated) tabulate(tabulated);
}

void SpaceEnumerator::Impl::tabulate(TabulatedConstraint& tabulated) {
  std::vector<int> parameters = constraint_parameters[tabulated.constraint];
  std::sort(parameters.begin(), parameters.end(),
            [&](int a, int b) { return level_of_parameter[a] < level_of_parameter[b]; });
  std::uint64_t stride = 1;
  tabulated.level_strides.resize(parameters.size());
  for (std::size_t i = parameters.size(); i-- > 0;) {
    tabulated.level_strides[i] = {level_of_parameter[parameters[i]], stride};
    stride *= space.parameters[parameters[i]].values.size();
  }
  tabulated.table.resize(stride);
  const Expression& expression = checks[tabulated.constraint].expression;
  const auto& needs = constraint_needs[tabulated.constraint];
  std::vector<Value> slots = base_slots;
  std::vector<std::size_t> digits(parameters.size(), 0);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    slots[parameter_slot[parameters[i]]] = space.parameters[parameters[i]].values[0];
  }
  for (std::uint64_t entry = 0; entry < stride; ++entry) {
    std::uint8_t result = entry_accepts;
    try {
      for (int d : needs) {
        if (!derived_parameters[d].empty()) slots[derived_slot[d]] = space.derived[d].expression.evaluate(slots);
      }
      result = expression.evaluate_bool(slots) ? entry_accepts : entry_rejects;
    } catch (const expr::EvaluationError&) {
      // Only an error if the walk reaches this combination; earlier constraints may exclude it.
      result = entry_fails;
    }
    tabulated.table[entry] = result;
    for (std::size_t i = parameters.size(); i-- > 0;) {  // odometer, last parameter fastest
      const auto& values = space.parameters[parameters[i]].values;
      if (++digits[i] < values.size()) {
        slots[parameter_slot[parameters[i]]] = values[digits[i]];
        break;
      }
      digits[i] = 0;
      slots[parameter_slot[parameters[i]]] = values[0];
    }
  }
  // The checking level's parameter is the last one (stride 1); its values form the rows.
  const std::uint64_t row_length = space.parameters[parameters.back()].values.size();
  if (row_length > mask_bits) return;
  for (std::size_t i = 0; i + 1 < parameters.size(); ++i)
    tabulated.row_strides.emplace_back(tabulated.level_strides[i].first,
                                       tabulated.level_strides[i].second / row_length);
  const std::uint64_t rows = stride / row_length;
  tabulated.accepting_rows.assign(rows, 0);
  tabulated.failing_rows.assign(rows, 0);
  for (std::uint64_t row = 0; row < rows; ++row) {
    for (std::uint64_t value = 0; value < row_length; ++value) {
      const std::uint8_t result = tabulated.table[row * row_length + value];
      if (result == entry_accepts) tabulated.accepting_rows[row] |= std::uint64_t{1} << value;
      if (result == entry_fails) tabulated.failing_rows[row] |= std::uint64_t{1} << value;
    }
  }
}

// Walks one group's valid tuples in enumeration order (the levels in binding order; at each level its values in
// declared order), one tuple per next(). Every check runs at the level where the last parameter it reads is bound,
// so a rejected prefix is never extended. At a level of at most mask_bits values the level's tables are applied to
// all its values at once when the walk enters it, a bit mask per table row, and the values they reject are never
// visited (bench_large: 12.7 of its 41.2 million candidate values). Nothing is allocated per candidate.
class SpaceEnumerator::Impl::Walk {
 public:
  // tally: where the candidates tried are counted against the limit (the group's first walk); rejections: where
  // each constraint's rejections are counted (a group without a valid tuple, walked again for its message). Null
  // when not counted.
  Walk(const Impl& impl, const Group& group, Impl* tally, std::vector<std::uint64_t>* rejections = nullptr)
      : impl_(impl),
        group_(group),
        tally_(tally),
        rejections_(rejections),
        depth_(static_cast<int>(group.levels.size())),
        slots_(impl.base_slots),
        choice_(group.levels.size(), 0),
        next_value_(group.levels.size(), 0),
        pending_(group.levels.size(), 0),
        failing_(group.levels.size(), 0) {}

  // Moves to the next valid tuple; false after the last.
  bool next() {
    // Most steps take the next value the tables left at the last level (bench_large: 11 of 17 million).
    const Level& last = group_.levels.back();
    std::uint64_t& last_pending = pending_.back();
    if (started_ && last.masked && last_pending != 0 && !last.evaluates() && failing_.back() == 0) {
      choice_.back() = static_cast<std::uint32_t>(std::countr_zero(last_pending));
      last_pending &= last_pending - 1;
      changed_from_ = depth_ - 1;
      return true;
    }
    if (finished_) return false;
    int level = depth_ - 1;  // the previous tuple's last level moves on
    if (!started_) {
      started_ = true;
      level = 0;
      enter(0);
    }
    changed_from_ = depth_;
    while (true) {
      if (advance(level)) {
        changed_from_ = std::min(changed_from_, level);
        if (level + 1 == depth_) return true;
        enter(++level);
      } else if (level == 0) {
        finished_ = true;
        return false;
      } else {
        --level;
      }
    }
  }

  // Per level, the value index of the current tuple.
  std::span<const std::uint32_t> choice() const { return choice_; }
  // The shallowest level whose value changed from the tuple before (0 for the first): the levels below it changed too.
  int changed_from() const { return changed_from_; }

 private:
  // Prepares the values of a level for the prefix bound above it.
  void enter(int level_index) {
    const Level& level = group_.levels[static_cast<std::size_t>(level_index)];
    if (tally_ && (tally_->candidates += level.value_count) > tally_->limits.max_candidates)
      tally_->throw_too_large(group_, false);
    if (!level.masked) {
      next_value_[static_cast<std::size_t>(level_index)] = 0;
      return;
    }
    std::uint64_t reaching = level.value_count == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << level.value_count) - 1;
    std::uint64_t failing = 0;
    for (int t : level.tabulated) {
      const TabulatedConstraint& tabulated = group_.tabulated[static_cast<std::size_t>(t)];
      std::uint64_t row = 0;
      for (const auto& [l, stride] : tabulated.row_strides) row += choice_[static_cast<std::size_t>(l)] * stride;
      const std::uint64_t accepting = tabulated.accepting_rows[row];
      const std::uint64_t fails = tabulated.failing_rows[row];
      // A value is checked against a table only when the tables before it accepted it, as one at a time would.
      failing |= reaching & fails;
      if (rejections_)
        (*rejections_)[static_cast<std::size_t>(tabulated.constraint)] +=
            static_cast<std::uint64_t>(std::popcount(reaching & ~accepting & ~fails));
      reaching &= accepting;
    }
    pending_[static_cast<std::size_t>(level_index)] = reaching | failing;
    failing_[static_cast<std::size_t>(level_index)] = failing;
  }

  // The next value of a level (its tables first, then what is evaluated there) that holds; false when none is left.
  bool advance(int level_index) {
    const std::size_t index = static_cast<std::size_t>(level_index);
    const Level& level = group_.levels[index];
    if (level.masked) {
      std::uint64_t& pending = pending_[index];
      while (pending != 0) {
        const std::uint32_t value = static_cast<std::uint32_t>(std::countr_zero(pending));
        pending &= pending - 1;
        choice_[index] = value;
        if ((failing_[index] >> value & 1) != 0) check_tables(level_index);  // throws, naming the constraint
        if (!level.evaluates() || evaluate(level_index)) return true;
      }
      return false;
    }
    for (std::uint32_t value = next_value_[index]; value < level.value_count; ++value) {
      choice_[index] = value;
      if (check_tables(level_index) && (!level.evaluates() || evaluate(level_index))) {
        next_value_[index] = value + 1;
        return true;
      }
    }
    next_value_[index] = level.value_count;
    return false;
  }

  // The level's tables for the current value, one after the other.
  bool check_tables(int level_index) {
    const Level& level = group_.levels[static_cast<std::size_t>(level_index)];
    for (int t : level.tabulated) {
      const TabulatedConstraint& tabulated = group_.tabulated[static_cast<std::size_t>(t)];
      std::uint64_t entry = 0;
      for (const auto& [l, stride] : tabulated.level_strides) entry += choice_[static_cast<std::size_t>(l)] * stride;
      const std::uint8_t result = tabulated.table[entry];
      if (result == entry_accepts) continue;
      if (result == entry_fails) impl_.throw_walk_failure(group_, level_index, choice_, tabulated.constraint);
      if (rejections_) ++(*rejections_)[static_cast<std::size_t>(tabulated.constraint)];
      return false;
    }
    return true;
  }

  // Binds the level's value and evaluates its derived values and constraints.
  bool evaluate(int level_index) {
    const Level& level = group_.levels[static_cast<std::size_t>(level_index)];
    const Space& space = impl_.space;
    if (level.assigns_slot) {
      const std::vector<Value>& values = space.parameters[static_cast<std::size_t>(level.parameter)].values;
      slots_[static_cast<std::size_t>(level.slot)] = values[choice_[static_cast<std::size_t>(level_index)]];
    }
    for (int d : level.derived) {
      const auto derived_index = static_cast<std::size_t>(d);
      const DerivedValue& derived = space.derived[derived_index];
      try {
        slots_[static_cast<std::size_t>(impl_.derived_slot[derived_index])] = derived.expression.evaluate(slots_);
      } catch (const expr::EvaluationError& error) {
        impl_.throw_evaluation_error(derived.expression, fmt::format("derived value {}", derived.name), error,
                                     impl_.derived_parameters[derived_index], slots_);
      }
    }
    for (int c : level.constraints) {
      const auto constraint_index = static_cast<std::size_t>(c);
      const Expression& expression = impl_.checks[constraint_index].expression;
      bool holds = false;
      try {
        holds = expression.evaluate_bool(slots_);
      } catch (const expr::EvaluationError& error) {
        impl_.throw_evaluation_error(expression, "constraint", error, impl_.constraint_parameters[constraint_index],
                                     slots_);
      }
      if (!holds) {
        if (rejections_) ++(*rejections_)[static_cast<std::size_t>(c)];
        return false;
      }
    }
    return true;
  }

  const Impl& impl_;
  const Group& group_;
  Impl* tally_;
  std::vector<std::uint64_t>* rejections_;
  int depth_;
  std::vector<Value> slots_;
  std::vector<std::uint32_t> choice_;
  std::vector<std::uint32_t> next_value_;  // per level without masks: the next value to try
  std::vector<std::uint64_t> pending_;     // per masked level: the values not yet visited that the tables pass
  std::vector<std::uint64_t> failing_;     // per masked level: the values whose table entry cannot be evaluated
  int changed_from_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

// The group's first walk: counts its valid tuples and keeps them as a prefix tree, one node per valid prefix, or only
// counts them for a group walked again (an `in_order` enumerator's first group).
void SpaceEnumerator::Impl::walk(Group& group) {
  const int depth = static_cast<int>(group.levels.size());
  group.walked_again = kind == EnumeratorKind::in_order && &group == &groups.front();
  if (!group.walked_again) group.tree.emplace(depth);
  Walk walk(*this, group, this);
  std::uint64_t count = 0;
  while (walk.next()) {
    ++count;
    if (!group.tree) continue;
    std::span<const std::uint32_t> choice = walk.choice();
    // Checked as the tree grows, so a space beyond the limit fails before its memory is spent.
    tree_nodes += static_cast<std::uint64_t>(depth - walk.changed_from());
    if (tree_nodes > limits.max_tree_nodes) throw_too_large(group, true);
    for (int level = walk.changed_from(); level + 1 < depth; ++level)
      group.tree->open(level, choice[static_cast<std::size_t>(level)]);
    group.tree->add_leaf(choice[static_cast<std::size_t>(depth - 1)]);
  }
  if (count == 0) {
    // Walked again to count what each constraint rejected, for the message.
    Walk counting(*this, group, nullptr, &rejections);
    while (counting.next()) {
    }
    throw_no_valid(group);
  }
  group.count = count;
  group.first_declared_from.assign(static_cast<std::size_t>(depth), 0);
  std::size_t first = space.parameters.size();
  for (int level = depth; level-- > 0;) {
    first = std::min(first, static_cast<std::size_t>(group.parameters[static_cast<std::size_t>(level)]));
    group.first_declared_from[static_cast<std::size_t>(level)] = first;
  }
  if (!group.tree) return;  // walked again: the plan and tables stay
  group.tree->finish();
  // The tables and the walk plan are needed only while walking.
  group.tabulated.clear();
  group.tabulated.shrink_to_fit();
  group.levels.clear();
  group.levels.shrink_to_fit();
}

void SpaceEnumerator::Impl::require_index(const char* what) const {
  if (kind == EnumeratorKind::indexed) return;
  throw TunerError(fmt::format("{} needs the index of space '{}', and this enumerator was built to walk it in order "
                               "only",
                               what, space.name));
}

std::string SpaceEnumerator::Impl::assignments(const std::vector<int>& parameters,
                                               std::span<const Value> slots) const {
  std::string text;
  for (int p : parameters) {
    text += fmt::format("{}{}={}", text.empty() ? "" : " ", space.parameters[p].name,
                        expr::to_string(slots[parameter_slot[p]]));
  }
  return text.empty() ? "every configuration" : text;
}

void SpaceEnumerator::Impl::throw_evaluation_error(const Expression& expression, const std::string& what_failed,
                                                   const InputError& error, const std::vector<int>& parameters,
                                                   std::span<const Value> slots) const {
  std::string reason = reason_of(error);
  // The evaluator's own message may open by restating the expression; this message already names it.
  std::string restated = fmt::format("evaluating '{}': ", expression.text());
  if (reason.starts_with(restated)) reason.erase(0, restated.size());
  throw InputError(expression.where(), fmt::format("{} '{}' cannot be evaluated for {}: {}", what_failed,
                                                   expression.text(), assignments(parameters, slots), reason));
}

// A tabulated constraint failed for the prefix being walked: evaluate it again on that prefix to report the
// error with its values (rare, so not worth keeping the messages in the table).
void SpaceEnumerator::Impl::throw_walk_failure(const Group& group, int level,
                                               std::span<const std::uint32_t> choice, int constraint) const {
  std::vector<Value> slots = base_slots;
  for (int l = 0; l <= level; ++l) {
    int p = group.parameters[l];
    slots[parameter_slot[p]] = space.parameters[p].values[choice[l]];
  }
  for (int d : constraint_needs[constraint]) {
    try {
      slots[derived_slot[d]] = space.derived[d].expression.evaluate(slots);
    } catch (const expr::EvaluationError& error) {
      throw_evaluation_error(space.derived[d].expression, fmt::format("derived value {}", space.derived[d].name),
                             error, derived_parameters[d], slots);
    }
  }
  const Expression& expression = checks[constraint].expression;
  try {
    expression.evaluate_bool(slots);
  } catch (const expr::EvaluationError& error) {
    throw_evaluation_error(expression, "constraint", error, constraint_parameters[constraint], slots);
  }
  throw TunerError(fmt::format("constraint '{}' failed while tabulated but not when evaluated again",
                               expression.text()));
}

void SpaceEnumerator::Impl::throw_too_large(const Group& group, bool too_many_nodes) const {
  std::vector<int> declared = group.parameters;  // binding order otherwise
  std::sort(declared.begin(), declared.end());
  std::vector<std::string> names;
  double product = 1;
  for (int p : declared) {
    names.push_back(space.parameters[p].name);
    product *= static_cast<double>(space.parameters[p].values.size());
  }
  std::vector<std::string> constraints;
  for (int c : group.constraints) {
    if (constraints.size() == 3) {
      constraints.push_back(fmt::format("{} more", group.constraints.size() - 3));
      break;
    }
    constraints.push_back(fmt::format("'{}'", checks[c].expression.text()));
  }
  const std::string what =
      too_many_nodes
          ? fmt::format("their valid combinations need more than {} prefix-tree nodes (the enumeration limit, about "
                        "{} MiB)",
                        limits.max_tree_nodes, limits.max_tree_nodes * 8 >> 20)
          : fmt::format("walking them tries more than {} candidate values (the enumeration limit) of {:.3g} "
                        "combinations",
                        limits.max_candidates, product);
  throw InputError(space.parameters[declared.front()].where,
                   fmt::format("space '{}' is too large to enumerate: the parameters {} are tied together by the "
                               "constraints {} and {}; constrain them further, give them fewer values, or split "
                               "them into groups that share no constraint",
                               space.name, fmt::join(names, ", "), fmt::join(constraints, ", "), what));
}

void SpaceEnumerator::Impl::throw_no_valid(const Group& group) const {
  std::vector<std::string> names;
  for (int p : group.parameters) names.push_back(space.parameters[p].name);
  std::sort(names.begin(), names.end());
  int worst = group.constraints.empty() ? -1 : group.constraints[0];
  for (int c : group.constraints) {
    if (rejections[c] > rejections[worst]) worst = c;
  }
  std::string message = fmt::format("no valid configuration in space '{}': no combination of {} satisfies every "
                                    "constraint",
                                    space.name, fmt::join(names, ", "));
  if (worst < 0) throw InputError(message);
  const Expression& expression = checks[worst].expression;
  throw InputError(expression.where(), fmt::format("{}; '{}' rejected the most candidates ({})", message,
                                                   expression.text(), rejections[worst]));
}

// ---------------------------------------------------------------- lookups

std::optional<std::uint32_t> SpaceEnumerator::Impl::value_index(int parameter, const Value& value) const {
  const auto& values = space.parameters[parameter].values;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].index() == value.index() && values[i] == value) return static_cast<std::uint32_t>(i);
  }
  // A value read back from a record may carry another type (1 for True); compare as Python does.
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (same_value(values[i], value)) return static_cast<std::uint32_t>(i);
  }
  return std::nullopt;
}

std::optional<std::uint64_t> SpaceEnumerator::Impl::index_of(const Configuration& given) const {
  require_index("the index of a configuration");
  if (given.size() != space.parameters.size()) return std::nullopt;
  Configuration canonical_copy;
  if (!conditional.empty()) {
    canonical_copy = given;
    canonicalize(canonical_copy, nullptr);
  }
  const Configuration& configuration = conditional.empty() ? given : canonical_copy;
  std::uint64_t index = 0;
  std::vector<std::uint32_t> value_indices;
  for (const Group& group : groups) {
    value_indices.clear();
    for (int p : group.parameters) {
      auto found = value_index(p, configuration[p]);
      if (!found) return std::nullopt;
      value_indices.push_back(*found);
    }
    std::uint64_t local = value_indices[0];
    if (group.tree) {
      auto found = group.tree->index_of(value_indices);
      if (!found) return std::nullopt;
      local = *found;
    }
    index = index * group.count + local;
  }
  return index;
}

void SpaceEnumerator::Impl::canonicalize(Configuration& configuration, std::vector<bool>* relevant) const {
  if (relevant) relevant->assign(space.parameters.size(), true);
  if (conditional.empty() || configuration.size() != space.parameters.size()) return;
  std::vector<Value> slots = base_slots;
  std::size_t bound = 0;  // parameters [0, bound) are in slots
  for (int p : conditional) {
    for (; bound < static_cast<std::size_t>(p); ++bound) slots[parameter_slot[bound]] = configuration[bound];
    const Expression& condition = space.parameters[p].relevant_when;
    bool holds = true;
    try {
      holds = condition.evaluate_bool(slots);
    } catch (const expr::EvaluationError& error) {
      std::vector<int> earlier(static_cast<std::size_t>(p));
      std::iota(earlier.begin(), earlier.end(), 0);
      throw_evaluation_error(condition, fmt::format("the condition of parameter {}", space.parameters[p].name), error,
                             earlier, slots);
    }
    if (!holds) {
      configuration[p] = space.parameters[p].default_value;
      if (relevant) (*relevant)[p] = false;
    }
  }
}

std::vector<Value> SpaceEnumerator::Impl::slots_for(const Configuration& configuration) const {
  if (configuration.size() != space.parameters.size()) {
    throw TunerError(fmt::format("configuration has {} values but space '{}' has {} parameters",
                                 configuration.size(), space.name, space.parameters.size()));
  }
  std::vector<Value> slots = base_slots;
  for (std::size_t p = 0; p < configuration.size(); ++p) slots[parameter_slot[p]] = configuration[p];
  for (std::size_t d = 0; d < space.derived.size(); ++d) {
    const DerivedValue& derived = space.derived[d];
    try {
      slots[derived_slot[d]] = derived.expression.evaluate(slots);
    } catch (const expr::EvaluationError& error) {
      throw_evaluation_error(derived.expression, fmt::format("derived value {}", derived.name), error,
                             derived_parameters[d], slots);
    }
  }
  return slots;
}

// ---------------------------------------------------------------- SpaceEnumerator

SpaceEnumerator::SpaceEnumerator(const Space& space, Constants constants, const EnumerationLimits& limits,
                                 EnumeratorKind kind)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.space = space;
  impl.constants = std::move(constants);
  impl.limits = limits;
  impl.kind = kind;
  impl.bind_expressions();
  impl.analyse_dependencies();
  impl.evaluate_parameter_free();
  impl.form_groups();
  impl.level_of_parameter.assign(impl.space.parameters.size(), 0);
  impl.rejections.assign(impl.checks.size(), 0);
  for (const Parameter& parameter : impl.space.parameters) {
    impl.combinations *= static_cast<double>(parameter.values.size());
  }
  for (Group& group : impl.groups) {
    if (group.constraints.empty()) {
      group.count = impl.space.parameters[group.parameters[0]].values.size();
    } else {
      impl.order_group(group);
      impl.plan_group(group);
      impl.walk(group);
      if (group.count == 0) impl.throw_no_valid(group);
    }
    if (__builtin_mul_overflow(impl.valid, group.count, &impl.valid)) {
      // Located at the first parameter: the space as a whole is too large, and that is where it begins.
      throw InputError(impl.space.parameters.empty() ? SourceLocation{} : impl.space.parameters.front().where,
                       fmt::format("space '{}' has more than 2^64 valid configurations; constrain it further",
                                   impl.space.name));
    }
  }
}

SpaceEnumerator::~SpaceEnumerator() = default;
SpaceEnumerator::SpaceEnumerator(SpaceEnumerator&&) noexcept = default;
SpaceEnumerator& SpaceEnumerator::operator=(SpaceEnumerator&&) noexcept = default;

const Space& SpaceEnumerator::space() const { return impl_->space; }

double SpaceEnumerator::total_combinations() const { return impl_->combinations; }

std::uint64_t SpaceEnumerator::valid_count() const { return impl_->valid; }

Configuration SpaceEnumerator::at(std::uint64_t index) const {
  const Impl& impl = *impl_;
  impl.require_index("the configuration at an index");
  if (index >= impl.valid) {
    throw TunerError(fmt::format("configuration index {} is out of range: space '{}' has {} valid configurations",
                                 index, impl.space.name, impl.valid));
  }
  Configuration configuration(impl.space.parameters.size());
  std::vector<std::uint32_t> value_indices;
  for (std::size_t g = impl.groups.size(); g-- > 0;) {  // the first group is the most significant digit
    const Group& group = impl.groups[g];
    std::uint64_t local = index % group.count;
    index /= group.count;
    value_indices.assign(group.parameters.size(), static_cast<std::uint32_t>(local));
    if (group.tree) group.tree->at(local, value_indices);
    for (std::size_t l = 0; l < group.parameters.size(); ++l) {
      int p = group.parameters[l];
      configuration[p] = impl.space.parameters[p].values[value_indices[l]];
    }
  }
  return configuration;
}

void SpaceEnumerator::for_each_in_order(
    std::uint64_t first, std::uint64_t count,
    const std::function<void(std::span<const std::uint32_t> value_indices, std::size_t first_changed)>& visit) const {
  const Impl& impl = *impl_;
  if (first >= impl.valid) return;
  count = std::min(count, impl.valid - first);
  // An odometer over the groups, the last group the fastest digit: each tree group steps with a cursor, a group
  // walked again with its walk, a parameter read by no constraint with a counter.
  const std::size_t groups = impl.groups.size();
  std::vector<std::uint64_t> local(groups);
  std::uint64_t rest = first;
  for (std::size_t g = groups; g-- > 0;) {
    local[g] = rest % impl.groups[g].count;
    rest /= impl.groups[g].count;
  }
  std::vector<std::optional<PrefixTree::Cursor>> cursors(groups);
  std::optional<Impl::Walk> walk;  // the first group, on an `in_order` enumerator
  // The first parameter in declared order among the groups after each one: a group that moves on resets them.
  std::vector<std::size_t> first_declared_after(groups, impl.space.parameters.size());
  // Where a group moved on at a level, the first parameter in declared order that may have changed.
  const auto first_declared_changed = [&](std::size_t g, int level) {
    const Group& group = impl.groups[g];
    return group.tree || group.walked_again ? group.first_declared_from[static_cast<std::size_t>(level)]
                                            : static_cast<std::size_t>(group.parameters.front());
  };
  for (std::size_t g = groups; g-- > 1;)
    first_declared_after[g - 1] = std::min(first_declared_after[g], first_declared_changed(g, 0));
  std::vector<std::uint32_t> value_indices(impl.space.parameters.size());
  // Copies the levels of group g from a level on into value_indices.
  const auto place = [&](std::size_t g, int from_level) {
    const Group& group = impl.groups[g];
    std::span<const std::uint32_t> levels;
    if (group.walked_again) {
      levels = walk->choice();
    } else if (group.tree) {
      levels = cursors[g]->value_indices();
    } else {
      value_indices[static_cast<std::size_t>(group.parameters[0])] = static_cast<std::uint32_t>(local[g]);
      return;
    }
    for (std::size_t level = static_cast<std::size_t>(from_level); level < group.parameters.size(); ++level)
      value_indices[static_cast<std::size_t>(group.parameters[level])] = levels[level];
  };
  for (std::size_t g = 0; g < groups; ++g) {
    const Group& group = impl.groups[g];
    if (group.walked_again) {
      walk.emplace(impl, group, nullptr);
      for (std::uint64_t skipped = 0; skipped <= local[g]; ++skipped) walk->next();
    } else if (group.tree) {
      cursors[g].emplace(*group.tree, local[g]);
    }
    place(g, 0);
  }
  std::size_t first_changed = 0;
  for (std::uint64_t done = 0; done < count; ++done) {
    visit(value_indices, first_changed);
    for (std::size_t g = groups; g-- > 0;) {  // carry into the next digit when one wraps
      const Group& group = impl.groups[g];
      bool wrapped = false;
      int changed_from = 0;
      if (group.walked_again) {
        wrapped = !walk->next();  // the first group: past its last tuple is past the last configuration
        changed_from = walk->changed_from();
      } else if (group.tree) {
        wrapped = !cursors[g]->advance();
        changed_from = cursors[g]->changed_from();
      } else if (++local[g] == group.count) {
        local[g] = 0;
        wrapped = true;
      }
      if (wrapped && group.walked_again) break;
      place(g, wrapped ? 0 : changed_from);
      if (!wrapped) {
        first_changed = std::min(first_declared_after[g], first_declared_changed(g, changed_from));
        break;
      }
    }
  }
}

std::optional<std::uint64_t> SpaceEnumerator::index_of(const Configuration& configuration) const {
  return impl_->index_of(configuration);
}

bool SpaceEnumerator::is_valid(const Configuration& configuration) const {
  return impl_->index_of(configuration).has_value();
}

std::vector<Configuration> SpaceEnumerator::sample(std::uint64_t n, std::uint64_t seed) const {
  std::vector<Configuration> drawn;
  drawn.reserve(static_cast<std::size_t>(std::min({n, impl_->valid, max_sample_size})));
  for_each_sample(n, seed, [&drawn](const Configuration& configuration) { drawn.push_back(configuration); });
  return drawn;
}

void SpaceEnumerator::for_each_sample(std::uint64_t n, std::uint64_t seed,
                                      const std::function<void(const Configuration&)>& visit) const {
  std::uint64_t valid = impl_->valid;
  n = std::min(n, valid);
  if (n > max_sample_size) {
    // Each drawn index is kept to avoid repeats: 10^11 of them would need terabytes (issue 6).
    throw InputError(fmt::format("cannot sample {} of the {} valid configurations of space '{}': at most {} are "
                                 "drawn at once",
                                 n, valid, impl_->space.name, max_sample_size));
  }
  if (n == 0) return;
  std::mt19937_64 generator(seed);
  if (n <= valid / 2) {
    // Few of many: redraw repeats; at most half the indices are taken, so a draw repeats with probability <= 1/2.
    std::unordered_set<std::uint64_t> taken;
    taken.reserve(n);
    while (taken.size() < n) {
      std::uint64_t index = uniform_below(generator, valid);
      if (taken.insert(index).second) visit(at(index));
    }
    return;
  }
  // Most of them: the first n steps of a Fisher-Yates shuffle of all indices (valid < 2n here).
  std::vector<std::uint64_t> indices(valid);
  std::iota(indices.begin(), indices.end(), std::uint64_t{0});
  for (std::uint64_t i = 0; i < n; ++i) {
    std::swap(indices[i], indices[i + uniform_below(generator, valid - i)]);
    visit(at(indices[i]));
  }
}

std::vector<Configuration> SpaceEnumerator::neighbours(const Configuration& configuration,
                                                       bool adjacent_only) const {
  const Impl& impl = *impl_;
  if (configuration.size() != impl.space.parameters.size()) {
    throw TunerError(fmt::format("configuration has {} values but space '{}' has {} parameters",
                                 configuration.size(), impl.space.name, impl.space.parameters.size()));
  }
  std::vector<bool> relevant_before;
  Configuration centre = configuration;
  impl.canonicalize(centre, &relevant_before);
  const std::optional<std::uint64_t> centre_index = impl.index_of(centre);
  std::vector<Configuration> found;
  std::unordered_set<std::uint64_t> taken;
  auto keep = [&](const Configuration& candidate) {
    std::optional<std::uint64_t> index = impl.index_of(candidate);
    if (!index || index == centre_index || !taken.insert(*index).second) return false;
    found.push_back(candidate);
    return true;
  };
  std::vector<bool> relevant_after;
  for (std::size_t p = 0; p < centre.size(); ++p) {
    if (!relevant_before[p]) continue;  // every value of an irrelevant parameter is the same configuration
    const auto& values = impl.space.parameters[p].values;
    auto current = impl.value_index(static_cast<int>(p), centre[p]);
    auto consider = [&](std::size_t value) {
      if (current && value == *current) return;
      Configuration candidate = centre;
      candidate[p] = values[value];
      impl.canonicalize(candidate, &relevant_after);
      if (keep(candidate) || impl.index_of(candidate)) return;
      // The move made parameters relevant whose defaults do not fit (tf32 needs WG_BK 32 where the default is 64):
      // the first value of one of them, in declared order, that makes the move valid stands in for the default.
      for (std::size_t q = 0; q < candidate.size(); ++q) {
        if (relevant_before[q] || !relevant_after[q]) continue;
        Configuration repaired = candidate;
        for (const Value& other : impl.space.parameters[q].values) {
          repaired[q] = other;
          if (keep(repaired)) return;
        }
      }
    };
    if (adjacent_only) {
      if (!current) continue;  // no declared position, so no adjacent value
      if (*current > 0) consider(*current - 1);
      if (*current + 1 < values.size()) consider(*current + 1);
    } else {
      for (std::size_t value = 0; value < values.size(); ++value) consider(value);
    }
  }
  return found;
}

Configuration SpaceEnumerator::canonical(Configuration configuration) const {
  impl_->canonicalize(configuration, nullptr);
  return configuration;
}

std::vector<bool> SpaceEnumerator::relevance(const Configuration& configuration) const {
  Configuration canonical_copy = configuration;
  std::vector<bool> relevant;
  impl_->canonicalize(canonical_copy, &relevant);
  return relevant;
}

bool SpaceEnumerator::has_conditions() const { return !impl_->conditional.empty(); }

const std::vector<int>& SpaceEnumerator::parameters_read_by_derived(std::size_t derived) const {
  return impl_->derived_parameters.at(derived);
}

Configuration SpaceEnumerator::default_configuration() const {
  Configuration configuration;
  for (const Parameter& parameter : impl_->space.parameters) configuration.push_back(parameter.default_value);
  return configuration;
}

Bindings SpaceEnumerator::bindings(const Configuration& configuration) const {
  return Bindings{impl_->scope, impl_->slots_for(configuration)};
}

std::vector<std::pair<std::string, Value>> SpaceEnumerator::derived_values(const Configuration& configuration) const {
  std::vector<Value> slots = impl_->slots_for(configuration);
  std::vector<std::pair<std::string, Value>> values;
  for (std::size_t d = 0; d < impl_->space.derived.size(); ++d) {
    values.emplace_back(impl_->space.derived[d].name, slots[impl_->derived_slot[d]]);
  }
  return values;
}

}  // namespace kernlathe
