#pragma once
// Community T1 files (the "Tuning format" of the TuningSchema project, draft-07 JSON schema TuningSchema.json): a
// search space (ConfigurationSpace) and the kernel that goes with it (KernelSpecification), so a community benchmark
// is replayed (`tune replay --t4`), analysed, and tuned on a GPU (`tune run FILE.T1.json`) like a spec of our own.
//
// Read faithfully:
// - Values are Python expressions, evaluated once here (python_list.h), never by running Python; Conditions are
//   Python boolean expressions, parsed by the project's expression language (the same spelling).
// - Parameter types: int and uint become integer parameters (every value must be an integer), bool boolean
//   parameters, float and string enumerations of their printed values (Python's repr: 0.5, 1.0, 'row' -> row).
//   A parameter declared twice with the same values counts once (Python's dict keeps one, as published files rely
//   on); declared twice with other values it is an error. Default (not in the schema; published files have it) is
//   the default when it is one of the values, else the first value.
// - The schema's rules are checked (t1_problems) before anything is read: required fields and the types the schema
//   defines. Published files deviate in one place that is accepted: an argument's Size written as an expression
//   string ("ProblemSize[0]*ProblemSize[1]") where the schema says integer.
//
// What T1 says about the kernel maps to the kernel spec model (model.h) as follows; README "Community files"
// has the table:
// - KernelFile (relative to the T1 file) is the template, KernelName the entry point; every parameter becomes a
//   #define, as in the tools that publish these files. Language must be CUDA. CompilerOptions pass the same
//   checks as a spec's compile_options.
// - ProblemSize [a, b, c] becomes the problem symbols ProblemSize_0, ProblemSize_1, ProblemSize_2 (override with
//   --problem ProblemSize_0=8192); an expression's ProblemSize[i] reads ProblemSize_i.
// - LocalSize is the block. The grid is ceil(ProblemSize[d] / product of GridDiv{X,Y,Z}[d]) for every dimension
//   ProblemSize has (GridDiv absent: the block's size in that dimension), as Kernel Tuner computes it; without
//   ProblemSize the grid is GlobalSize, in blocks for GlobalSizeType CUDA (the default) or in threads for OpenCL.
//   SharedMemory is the dynamic shared memory in bytes.
// - Arguments, in order: MemoryType Vector is a buffer of Size elements (an expression of ProblemSize; Python's
//   max(p) and min(p) of a parameter p read the largest and smallest of its values), Scalar an argument of value
//   FillValue (a number, or an expression string of ProblemSize so --problem stays consistent). Type: int8 uint8
//   int32 uint32 int64 half float double. FillType Constant fills FillValue (0 when absent), Random fills uniform
//   values in [-1, 1) from RandomSeed (default: the argument's position + 1). AccessType ReadOnly is an input,
//   WriteOnly an output, ReadWrite both; without AccessType, "Output": 1 marks an output. Local and Symbol memory,
//   constant memory ("MemType": "Constant"), the Generator, Script and Binary fill types and vector types are
//   errors that say so.
// - What T1 cannot say: verification compares every configuration's outputs with those of the default
//   configuration (the declared Defaults), with the project's tolerances per dtype; metrics (flops, bytes) are not
//   stated, so none are reported.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/spec/model.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {

// What keeps `document` from being a T1 file by the published schema, one line per problem
// ("ConfigurationSpace.TuningParameters[2].Values: not a string"); none when it is one. With_kernel checks
// KernelSpecification too (required by the schema; reading only the space for replay and analysis does not need
// it, and a T1 file that `tune t4` writes has none).
std::vector<std::string> t1_problems(const nlohmann::json& document, bool with_kernel);

// The T1 space. InputError naming the file on a missing file, malformed JSON, a schema problem, a value list or
// condition that is not understood (the message names the parameter or Conditions[i] and what was not understood).
Space read_t1_space(const std::filesystem::path& t1_file);

// The whole T1 file as a kernel spec, ready for `tune validate`, `tune compile-check` and `tune run`.
KernelSpec load_t1_kernel_spec(const std::filesystem::path& t1_file, const ProblemOverrides& overrides = {});

// True for names ending in ".json": what load_kernel_spec reads as a T1 file instead of a YAML spec.
bool is_t1_file_name(const std::filesystem::path& file);

// A value as Python's repr writes it inside a list: 3, 0.5, 1.0, True, 'row' (what a T1 Values string holds).
std::string python_literal(const Value& value);

}  // namespace kernlathe
