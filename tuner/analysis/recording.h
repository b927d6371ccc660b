#pragma once
// What `tune analyze` reads (issue 15). One recording is one kernel measured on one GPU at one problem size: a
// project record (results/runs/<kernel>/<arch>/<problem>/evaluations.csv with run.json beside it) or a community
// T4 file with the T1 space found next to it. A folder stands for every record and T4 file below it.
//
// The spec is not needed: the parameters, their types, declared values and defaults, and the space's derived values
// and constraints come from run.json (or, for records without one, from the CSV header and the values found in its
// rows), so records of kernels whose spec has since changed can still be analysed.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/spec/model.h"

namespace kernlathe {

struct Recording {
  std::filesystem::path source;  // the evaluations.csv or T4 file
  std::string kernel;            // run.json's kernel; T4: the file name before the first '-' ("convolution")
  std::string device;            // run.json's gpu_name; T4: the file name after the first '-' ("A4000")
  std::string arch;              // "sm_90"; empty for T4
  std::string problem;           // "W=8192,H=8192"; empty for T4
  // Recordings of the same kernel, problem and parameters on other GPUs share this key; portability compares them.
  std::string family;
  // Declared values first, then any value the rows hold that was not declared (so every recorded value has an
  // index: what numeric_value() gives enumerations).
  std::vector<Parameter> parameters;
  // One per configuration, in the order first recorded; where a configuration was recorded twice, the later row
  // (as `tune run --resume` and replay take it).
  std::vector<Evaluation> evaluations;
  std::vector<std::string> notes;  // what was set aside while reading, said in the report
  // The space's rules as run.json keeps them (records written since issue 36; empty for older ones and T4 files):
  // derived values (name, expression) in declared order and constraints as written. They may read problem symbols
  // and device properties as well as parameters.
  std::vector<std::pair<std::string, std::string>> derived;
  std::vector<std::string> constraints;
  bool declared_defaults = false;  // each parameter's default is the space's (run.json), not its first value

  std::string label() const;  // "conv3x3 W=8192,H=8192 on NVIDIA H200", "convolution on A4000"
};

// An evaluation that ran correctly and has a usable time (positive and finite): a valid configuration.
bool is_valid_measurement(const Evaluation& evaluation);

// A parameter value as a number for models and thresholds: integers as they are, booleans 0 and 1, enumeration
// values by their index among the parameter's values (so their order is the declared order).
double numeric_value(const Parameter& parameter, const Value& value);

// Every recording the paths name, in the order given; a folder gives the evaluations.csv and *.T4.json(.gz) files
// below it, sorted by path. InputError (exit 2) naming the path for a missing path, a file that is neither a record
// nor a T4 file, a folder that holds none, a record or T4 file that cannot be read, and a recording in which no
// configuration ran correctly. reading (when given) is told each file before it is read.
std::vector<Recording> load_recordings(const std::vector<std::filesystem::path>& paths,
                                       const std::function<void(const std::filesystem::path&)>& reading = {});

// One project record: csv is an evaluations.csv (or <stem>.csv with <stem>.run.json beside it). Only rows of the
// spec hash of the newest run that recorded any are taken (others measured another version of the kernel; a note
// counts them).
Recording load_project_record(const std::filesystem::path& csv);

// One T4 file with its T1 space.
Recording load_t4_recording(const std::filesystem::path& t4_file, const std::filesystem::path& t1_file);

// Whether a file name is that of a T4 file: *.T4.json or *.T4.json.gz.
bool is_t4_file_name(const std::filesystem::path& path);

}  // namespace kernlathe
