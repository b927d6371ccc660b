#pragma once
// The autotuning community's result files: a T4 file holds the results of evaluating configurations of a T1 space
// (tuner/spec/t1_reader.h; a brute-force run records every one). Read here so any strategy can be replayed against
// landscapes no one here recorded.
//
// The objective is the file's own (T4 schema 1.0.0): every result names it in "objectives" and records its value as
// the measurement of that name. By default the recorded value is what a configuration scores (for a time the
// publishing tool's statistic over its runtimes, the mean for Kernel Tuner's files), so optima agree with the
// published ones; ObjectiveSource::median takes the median of "times.runtimes" instead (time objectives only).
//
// The direction comes from, in order: the caller (--t4-direction), the file's metadata ("objective_direction":
// "minimize" or "maximize", or Kernel Tuner's "objective_higher_is_better": true or false), or the objective being
// "time" (minimised). The schema itself has no field for it, so a file with another objective and no declared
// direction is an error that says how to give one, rather than a guess.
//
// Evaluations carry the objective as a cost to minimise in time.median_ms, so strategies and the replay benchmark
// (ratios best/optimum) work unchanged: a time in milliseconds (metadata.timeunit converted: seconds, milliseconds,
// microseconds, nanoseconds; milliseconds when absent), another minimised objective as recorded, a maximised one as
// its reciprocal (best/optimum is then optimum value / best value). A ratio needs positive values: an objective with
// a value <= 0 among the correct results is not usable for replay and is an error naming the file and the value.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/record/evaluation.h"
#include "tuner/spec/model.h"
#include "tuner/spec/t1_reader.h"

namespace kernlathe {

enum class ObjectiveDirection { minimize, maximize };
enum class ObjectiveSource { recorded, median };

// "minimize" | "maximize" (also min, max, minimise, maximise); nullopt otherwise.
std::optional<ObjectiveDirection> parse_objective_direction(std::string_view text);
std::optional<ObjectiveSource> parse_objective_source(std::string_view text);  // "recorded" | "median"
std::string_view objective_direction_name(ObjectiveDirection direction);       // "minimize" | "maximize"

// What keeps a document from being a T4 file by the published results schema (1.0.0), one line per problem
// ("results[3].times.compilation: not a number"); none when it is one. Checks the keys a result requires and the
// types the schema defines; other keys are allowed. A failed result may name its failure as a measurement's value
// ("RuntimeFailedConfig"), and "correct" is an invalidity, as the community's files write them. read_t4 checks every
// file with it; `tune t4` checks what it writes.
std::vector<std::string> t4_problems(const nlohmann::json& document);

struct T4ReadOptions {
  ObjectiveSource source = ObjectiveSource::recorded;
  std::optional<ObjectiveDirection> direction;  // overrides what the file declares
  std::string objective;                        // which of several declared objectives; empty: the only one
};

struct T4Objective {
  std::string name;  // "time", "score", ...
  ObjectiveDirection direction = ObjectiveDirection::minimize;
  std::string direction_from;  // "the caller", "the file's metadata", "a time objective"
  ObjectiveSource source = ObjectiveSource::recorded;
  bool is_time = false;  // values are milliseconds
  // The optimum as the file states it (the recorded or median value, not the cost); nullopt when nothing is ok.
  std::optional<double> best_value;
};

struct T4Results {
  T4Objective objective;
  std::vector<Evaluation> evaluations;  // one per result, parameters in space's order
};

// Every result of a T4 file (plain or gzipped JSON). Failed entries (invalidity other than "correct") become
// compile_error, launch_error, wrong_result, timeout or invalid evaluations, as does a correct entry without a
// numeric objective value (message says so). compile_ms comes from times.compilation; time.samples is the number
// of runtimes; min_ms, max_ms and relative_spread are those of the runtimes (time objectives).
// InputError naming the file: not JSON, not a T4 file, no declared objective (or several, without
// options.objective), no direction for a non-time objective, median of a non-time objective, an unknown timeunit,
// a value <= 0, no usable value at all, a configuration missing a parameter.
T4Results read_t4(const std::filesystem::path& t4_file, const Space& space, const T4ReadOptions& options = {});

// read_t4(...).evaluations.
std::vector<Evaluation> read_t4_results(const std::filesystem::path& t4_file, const Space& space,
                                        const T4ReadOptions& options = {});

// The T1 file this project names for a T4 file: "convolution-A4000.T4.json.gz" -> "convolution.T1.json" in the
// same folder (the name up to the first '-' or '.'). What `tune t4` writes beside its T4 files.
std::filesystem::path default_t1_for(const std::filesystem::path& t4_file);

// The T1 files that could go with a T4 file, in the order they are tried: default_t1_for, then the benchmark hub's
// layout, where results live in a folder named after the benchmark (".../cachefiles/convolution_milo/A4000_T4.json.gz")
// and the T1 file elsewhere: <folder name>.T1.json and <folder name>.json in that folder and in a "kernels" folder
// beside it, beside its parent and beside its grandparent.
std::vector<std::filesystem::path> t1_candidates_for(const std::filesystem::path& t4_file);

// The first candidate that exists. InputError naming the T4 file, listing the candidates tried and suggesting
// --t1 FILE when none does.
std::filesystem::path find_t1_for(const std::filesystem::path& t4_file);

}  // namespace kernlathe
