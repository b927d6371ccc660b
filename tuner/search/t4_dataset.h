#pragma once
// The autotuning community's exchange formats: a T1 file describes a search space (parameters and
// Python-like constraints), a T4 file holds the results of evaluating configurations of it (a brute-force run
// records every one). Read here so any strategy can be replayed against landscapes no one here recorded.

#include <filesystem>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// The T1 space: integer parameters (Type "int") keep their values, other types become enumerations of their
// printed values; every Conditions[].Expression becomes a constraint, parsed as written. InputError on a missing
// file, malformed JSON or an expression that does not parse (the message names the file and the condition).
Space read_t1_space(const std::filesystem::path& t1_file);

// Every result of a T4 file (plain or gzipped JSON), one Evaluation per configuration, parameters in space's
// order. Time: the median of "runtimes", else the "time" measurement. Failed entries (invalidity other than
// "correct", or a non-numeric time) become compile_error, launch_error, wrong_result or invalid evaluations.
// compile_ms comes from times.compilation; time.samples is the number of runtimes.
std::vector<Evaluation> read_t4_results(const std::filesystem::path& t4_file, const Space& space);

// The T1 file that goes with a T4 file: "convolution-A4000.T4.json.gz" -> "convolution.T1.json" in the same
// folder (the name up to the first '-' or '.').
std::filesystem::path default_t1_for(const std::filesystem::path& t4_file);

}  // namespace kernlathe
