#include "tuner/analysis/failures.h"

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>

#include <fmt/format.h>

namespace kernlathe {
namespace {

// What a row is to the kind being explained: a failure of that kind, a valid configuration (wrongly excluded by a
// constraint that excludes it), or neither (failures of other kinds, ok rows without a usable time).
enum class RowRole { target, valid, neutral };

// A candidate before it is checked: the text, how simple it reads, and what it excludes, counted on the fly.
struct Candidate {
  std::string constraint;
  int complexity = 0;  // 1 one threshold or one value, 2 a set of values, 3 a product threshold or a value pair
  std::size_t explained = 0;
  std::size_t valid_excluded = 0;
  std::uint64_t signature = 0;  // of the target and valid rows it excludes (Zobrist: an exclusive or of row keys)
};

// Counts over a group of rows (one value, or a run of sorted rows), added and removed as runs grow.
struct Tally {
  std::size_t target = 0;
  std::size_t valid = 0;
  std::uint64_t signature = 0;
  void add(const Tally& other) {
    target += other.target;
    valid += other.valid;
    signature ^= other.signature;
  }
};

std::string literal(const Value& value) { return Expression::constant(value).to_string(); }

std::string value_list(const std::vector<Value>& values) {
  std::vector<std::string> printed;
  for (const Value& value : values) printed.push_back(literal(value));
  return fmt::format("[{}]", fmt::join(printed, ", "));
}

bool all_integers(const Parameter& parameter) {
  return std::all_of(parameter.values.begin(), parameter.values.end(),
                     [](const Value& value) { return std::holds_alternative<std::int64_t>(value); });
}

class CandidateSearch {
 public:
  CandidateSearch(const std::vector<Parameter>& parameters, const std::vector<Evaluation>& evaluations,
                  const std::vector<RowRole>& roles)
      : parameters_(parameters), evaluations_(evaluations), roles_(roles) {
    std::mt19937_64 random(0x5eed);
    keys_.resize(evaluations.size());
    for (std::uint64_t& key : keys_) key = random();
  }

  std::vector<Candidate> run() {
    std::vector<bool> size_like(parameters_.size());
    for (std::size_t p = 0; p < parameters_.size(); ++p) size_like[p] = is_size_like(p);
    for (std::size_t p = 0; p < parameters_.size(); ++p) {
      const std::vector<Tally> by_value = tallies_by_value(p);
      const auto recorded = std::count_if(by_value.begin(), by_value.end(),
                                          [&](const Tally& tally) { return tally.target + tally.valid > 0; });
      if (recorded < 2) continue;
      value_sets(p, by_value);
      if (all_integers(parameters_[p])) integer_thresholds(p);
    }
    for (std::size_t p = 0; p < parameters_.size(); ++p)
      for (std::size_t q = p + 1; q < parameters_.size(); ++q) {
        value_pairs(p, q);
        if (size_like[p] && size_like[q]) product_thresholds(p, q);
      }
    return std::move(candidates_);
  }

 private:
  std::size_t value_index(std::size_t p, const Value& value) const {
    const auto& values = parameters_[p].values;
    return static_cast<std::size_t>(std::find(values.begin(), values.end(), value) - values.begin());
  }

  Tally row_tally(std::size_t row) const {
    Tally tally;
    if (roles_[row] == RowRole::neutral) return tally;
    (roles_[row] == RowRole::target ? tally.target : tally.valid) = 1;
    tally.signature = keys_[row];
    return tally;
  }

  std::vector<Tally> tallies_by_value(std::size_t p) const {
    std::vector<Tally> tallies(parameters_[p].values.size());
    for (std::size_t row = 0; row < evaluations_.size(); ++row) {
      const std::size_t index = value_index(p, evaluations_[row].configuration[p]);
      if (index < tallies.size()) tallies[index].add(row_tally(row));
    }
    return tallies;
  }

  void add(std::string constraint, int complexity, const Tally& excluded) {
    if (excluded.target == 0) return;
    candidates_.push_back({std::move(constraint), complexity, excluded.target, excluded.valid, excluded.signature});
  }

  // Values ordered by the share of their configurations that failed this way; each leading run is excluded.
  void value_sets(std::size_t p, const std::vector<Tally>& by_value) {
    const Parameter& parameter = parameters_[p];
    std::vector<std::size_t> failing, all;
    for (std::size_t v = 0; v < by_value.size(); ++v) {
      if (by_value[v].target + by_value[v].valid == 0) continue;
      all.push_back(v);
      if (by_value[v].target > 0) failing.push_back(v);
    }
    auto purity = [&](std::size_t v) {
      return static_cast<double>(by_value[v].target) / static_cast<double>(by_value[v].target + by_value[v].valid);
    };
    std::stable_sort(failing.begin(), failing.end(), [&](std::size_t a, std::size_t b) {
      if (purity(a) != purity(b)) return purity(a) > purity(b);
      return by_value[a].target > by_value[b].target;
    });
    Tally excluded;
    std::vector<bool> is_excluded(by_value.size(), false);
    for (std::size_t k = 0; k < failing.size(); ++k) {
      excluded.add(by_value[failing[k]]);
      is_excluded[failing[k]] = true;
      std::vector<Value> out, kept;
      for (std::size_t v : all) (is_excluded[v] ? out : kept).push_back(parameter.values[v]);
      if (kept.empty()) break;  // a constraint that excludes every recorded value says nothing
      std::string text;
      if (kept.size() < out.size()) {
        text = kept.size() == 1 ? fmt::format("{} == {}", parameter.name, literal(kept.front()))
                                : fmt::format("{} in {}", parameter.name, value_list(kept));
      } else {
        text = out.size() == 1 ? fmt::format("{} != {}", parameter.name, literal(out.front()))
                               : fmt::format("{} not in {}", parameter.name, value_list(out));
      }
      add(std::move(text), std::min(kept.size(), out.size()) == 1 ? 1 : 2, excluded);
    }
  }

  // Rows sorted by a number; every cut between distinct numbers gives "<= below" and ">= above".
  void thresholds(const std::string& expression, const std::vector<std::pair<std::int64_t, std::size_t>>& keyed,
                  int complexity) {
    Tally total;
    for (const auto& [number, row] : keyed) total.add(row_tally(row));
    Tally below;
    for (std::size_t i = 0; i + 1 < keyed.size(); ++i) {
      below.add(row_tally(keyed[i].second));
      if (keyed[i].first == keyed[i + 1].first) continue;
      Tally above = total;
      above.target -= below.target;
      above.valid -= below.valid;
      above.signature ^= below.signature;
      add(fmt::format("{} <= {}", expression, keyed[i].first), complexity, above);
      add(fmt::format("{} >= {}", expression, keyed[i + 1].first), complexity, below);
    }
  }

  // Sizes (tile, block and vector widths), whose products are resource limits: integers of three or more values.
  // A product with a 0/1 flag reads as a disguised "or" and is left to the value pairs.
  bool is_size_like(std::size_t p) const {
    return all_integers(parameters_[p]) && distinct_recorded(p) >= 3;
  }

  std::size_t distinct_recorded(std::size_t p) const {
    std::vector<bool> seen(parameters_[p].values.size(), false);
    for (const Evaluation& evaluation : evaluations_) {
      const std::size_t index = value_index(p, evaluation.configuration[p]);
      if (index < seen.size()) seen[index] = true;
    }
    return static_cast<std::size_t>(std::count(seen.begin(), seen.end(), true));
  }

  // One combination of two values excluded: "P != a or Q != b" (failures that need both, such as padding only
  // failing with a tile width of 3).
  void value_pairs(std::size_t p, std::size_t q) {
    const std::size_t columns = parameters_[q].values.size();
    std::vector<Tally> by_pair(parameters_[p].values.size() * columns);
    for (std::size_t row = 0; row < evaluations_.size(); ++row) {
      const std::size_t a = value_index(p, evaluations_[row].configuration[p]);
      const std::size_t b = value_index(q, evaluations_[row].configuration[q]);
      if (a < parameters_[p].values.size() && b < columns) by_pair[a * columns + b].add(row_tally(row));
    }
    for (std::size_t a = 0; a < parameters_[p].values.size(); ++a)
      for (std::size_t b = 0; b < columns; ++b) {
        const Tally& excluded = by_pair[a * columns + b];
        if (excluded.target == 0) continue;
        add(fmt::format("{} != {} or {} != {}", parameters_[p].name, literal(parameters_[p].values[a]),
                        parameters_[q].name, literal(parameters_[q].values[b])),
            3, excluded);
      }
  }

  void integer_thresholds(std::size_t p) {
    std::vector<std::pair<std::int64_t, std::size_t>> keyed;
    for (std::size_t row = 0; row < evaluations_.size(); ++row)
      keyed.emplace_back(std::get<std::int64_t>(evaluations_[row].configuration[p]), row);
    std::sort(keyed.begin(), keyed.end());
    thresholds(parameters_[p].name, keyed, 1);
  }

  void product_thresholds(std::size_t p, std::size_t q) {
    std::vector<std::pair<std::int64_t, std::size_t>> keyed;
    for (std::size_t row = 0; row < evaluations_.size(); ++row) {
      const auto& configuration = evaluations_[row].configuration;
      keyed.emplace_back(std::get<std::int64_t>(configuration[p]) * std::get<std::int64_t>(configuration[q]), row);
    }
    std::sort(keyed.begin(), keyed.end());
    if (keyed.front().first == keyed.back().first) return;
    thresholds(fmt::format("{} * {}", parameters_[p].name, parameters_[q].name), keyed, 3);
  }

  const std::vector<Parameter>& parameters_;
  const std::vector<Evaluation>& evaluations_;
  const std::vector<RowRole>& roles_;
  std::vector<std::uint64_t> keys_;
  std::vector<Candidate> candidates_;
};

// Counts what a constraint excludes by evaluating it, so the reported figures are those of the printed text.
ConstraintSuggestion check(const std::string& constraint, const std::vector<Parameter>& parameters,
                           const std::vector<Evaluation>& evaluations, const std::vector<RowRole>& roles,
                           const std::vector<bool>& other_failure) {
  expr::Scope scope;
  for (const Parameter& parameter : parameters) scope.add(parameter.name);
  Expression expression = Expression::parse(constraint);
  expression.bind(scope);
  ConstraintSuggestion suggestion;
  suggestion.constraint = expression.to_string();
  for (std::size_t row = 0; row < evaluations.size(); ++row) {
    const bool excluded = !expression.evaluate_bool(evaluations[row].configuration);
    if (roles[row] == RowRole::target) {
      ++suggestion.failures;
      suggestion.explained += excluded ? 1 : 0;
    } else if (roles[row] == RowRole::valid) {
      ++suggestion.valid;
      suggestion.valid_excluded += excluded ? 1 : 0;
    } else if (other_failure[row] && excluded) {
      ++suggestion.other_failures_excluded;
    }
  }
  suggestion.score = static_cast<double>(suggestion.explained) /
                     static_cast<double>(suggestion.failures + suggestion.valid_excluded);
  return suggestion;
}

}  // namespace

std::optional<FailureKind> failure_kind_of(Status status) {
  switch (status) {
    case Status::ok: return std::nullopt;
    case Status::compile_error: return FailureKind::compile;
    case Status::resources_exceeded:
    case Status::launch_error:
    case Status::invalid: return FailureKind::launch_or_resources;
    case Status::wrong_result: return FailureKind::wrong_result;
    case Status::timeout:
    case Status::crashed: return FailureKind::crash_or_timeout;
  }
  return std::nullopt;
}

std::string_view failure_kind_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::compile: return "compile_error";
    case FailureKind::launch_or_resources: return "launch_or_resources";
    case FailureKind::wrong_result: return "wrong_result";
    case FailureKind::crash_or_timeout: return "crash_or_timeout";
  }
  return "unknown";
}

std::string_view failure_kind_noun(FailureKind kind) {
  switch (kind) {
    case FailureKind::compile: return "compile errors";
    case FailureKind::launch_or_resources: return "launch or resource failures";
    case FailureKind::wrong_result: return "wrong results";
    case FailureKind::crash_or_timeout: return "crashes and timeouts";
  }
  return "failures";
}

std::string ConstraintSuggestion::sentence(FailureKind kind) const {
  return fmt::format("{} excludes {} of {} {} and {} of {} valid configurations", constraint, explained, failures,
                     failure_kind_noun(kind), valid_excluded, valid);
}

std::vector<FailureExplanation> explain_failures(const std::vector<Parameter>& parameters,
                                                 const std::vector<Evaluation>& evaluations, std::size_t suggestions) {
  std::map<FailureKind, FailureExplanation> by_kind;
  std::vector<bool> failed(evaluations.size(), false);
  for (std::size_t row = 0; row < evaluations.size(); ++row) {
    const std::optional<FailureKind> kind = failure_kind_of(evaluations[row].status);
    if (!kind) continue;
    failed[row] = true;
    FailureExplanation& explanation = by_kind[*kind];
    explanation.kind = *kind;
    ++explanation.count;
    auto status = std::find_if(explanation.statuses.begin(), explanation.statuses.end(),
                               [&](const auto& entry) { return entry.first == evaluations[row].status; });
    if (status == explanation.statuses.end()) {
      explanation.statuses.emplace_back(evaluations[row].status, 1);
    } else {
      ++status->second;
    }
    if (explanation.example_message.empty()) explanation.example_message = evaluations[row].message;
  }

  std::vector<FailureExplanation> result;
  for (auto& [kind, explanation] : by_kind) {
    std::vector<RowRole> roles(evaluations.size(), RowRole::neutral);
    std::vector<bool> other_failure(evaluations.size(), false);
    for (std::size_t row = 0; row < evaluations.size(); ++row) {
      if (is_valid_measurement(evaluations[row])) {
        roles[row] = RowRole::valid;
      } else if (failed[row]) {
        if (failure_kind_of(evaluations[row].status) == kind) {
          roles[row] = RowRole::target;
        } else {
          other_failure[row] = true;
        }
      }
    }
    std::vector<Candidate> candidates = CandidateSearch(parameters, evaluations, roles).run();
    const double failures = static_cast<double>(explanation.count);
    auto score = [&](const Candidate& candidate) {
      return static_cast<double>(candidate.explained) / (failures + static_cast<double>(candidate.valid_excluded));
    };
    std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
      if (score(a) != score(b)) return score(a) > score(b);
      if (a.valid_excluded != b.valid_excluded) return a.valid_excluded < b.valid_excluded;
      if (a.complexity != b.complexity) return a.complexity < b.complexity;
      return a.constraint.size() < b.constraint.size();
    });
    // The first (simplest) of the candidates that exclude the same configurations stands for them all.
    std::vector<std::uint64_t> taken;
    for (const Candidate& candidate : candidates) {
      if (explanation.suggestions.size() >= suggestions) break;
      if (std::find(taken.begin(), taken.end(), candidate.signature) != taken.end()) continue;
      taken.push_back(candidate.signature);
      explanation.suggestions.push_back(check(candidate.constraint, parameters, evaluations, roles, other_failure));
    }
    result.push_back(std::move(explanation));
  }
  return result;
}

}  // namespace kernlathe
