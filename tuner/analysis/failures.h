#pragma once
// Which parameter values explain a recording's failures, phrased as the constraint that would have excluded them
// ("BLOCK_X * TILE_X <= 64 excludes 118 of 120 launch or resource failures and 3 of 900 valid configurations"),
// so a space author can paste it into the space.
//
// Failures are grouped by kind (compile errors; launch and resource failures, which include configurations a T4
// file marks invalid; wrong results; crashes and timeouts). For each kind the candidates are:
//   - a set of values of one parameter: the values ordered by the share of their configurations that failed this
//     way, each leading run of them excluded ("P not in [..]", or "P in [..]" listing the values kept, whichever
//     is shorter);
//   - a threshold on one integer parameter ("P <= 4", "P >= 16");
//   - a threshold on the product of two integer parameters of three or more values ("BLOCK_X * TILE_X <= 64"),
//     the usual shape of a resource limit;
//   - one combination of values of two parameters ("TILE_X != 3 or PADDING != 1"), for failures that need both.
// A candidate is scored by the failures it excludes over the failures of that kind plus the valid configurations
// it would wrongly exclude (1 for a constraint that excludes exactly these failures); failures of other kinds count
// for nothing either way. Candidates that exclude the same configurations are one, in its simplest form. Every
// reported count comes from evaluating the printed constraint with the project's expression evaluator on every
// recorded configuration.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/analysis/recording.h"

namespace kernlathe {

enum class FailureKind { compile, launch_or_resources, wrong_result, crash_or_timeout };

// The kind of failure a status is; nullopt for ok.
std::optional<FailureKind> failure_kind_of(Status status);
std::string_view failure_kind_name(FailureKind kind);  // "compile_error", "launch_or_resources", ...
std::string_view failure_kind_noun(FailureKind kind);  // "compile errors", "launch or resource failures", ...

struct ConstraintSuggestion {
  std::string constraint;           // in the spec's expression language
  std::size_t explained = 0;        // failures of the kind it excludes
  std::size_t failures = 0;         // failures of the kind
  std::size_t valid_excluded = 0;   // valid configurations it would wrongly exclude
  std::size_t valid = 0;            // valid configurations
  std::size_t other_failures_excluded = 0;  // failures of other kinds it excludes as well
  double score = 0;                 // explained / (failures + valid_excluded)

  // "P <= 4 excludes 12 of 12 wrong results and 0 of 40 valid configurations"
  std::string sentence(FailureKind kind) const;
};

struct FailureExplanation {
  FailureKind kind = FailureKind::compile;
  std::size_t count = 0;
  std::vector<std::pair<Status, std::size_t>> statuses;  // the statuses counted in this kind
  std::string example_message;                            // the first non-empty recorded message
  std::vector<ConstraintSuggestion> suggestions;          // best first
};

// One entry per kind that occurs, in the order of FailureKind. At most `suggestions` constraints per kind; kinds
// no candidate explains at all have none.
std::vector<FailureExplanation> explain_failures(const std::vector<Parameter>& parameters,
                                                 const std::vector<Evaluation>& evaluations,
                                                 std::size_t suggestions = 3);

}  // namespace kernlathe
