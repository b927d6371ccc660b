#pragma once
// The project's records as the autotuning community's exchange files (issue 15, interop): a T4 file of results and
// a T1 file of the space's parameters, so a recording can go to the benchmark hub and be read by other tools (and
// by `tune analyze` and `tune replay` here).
//
// T4 (schema version 1.0.0, as the community's files use it): one result per recorded configuration with its
// configuration, "times" (compilation in ms), "invalidity" ("correct", or why it failed: "compile", "runtime",
// "correctness", "timeout", "constraints"), "correctness" (1 or 0), the "time" measurement (the median in ms) and
// the others the record keeps (min, max, relative spread, samples), and "objectives": ["time"]. Records keep the
// summary of a configuration's samples, not every sample, so "times.runtimes" is left out rather than invented.
// metadata.objective_direction says "minimize" (the schema has no field for it; tuner/search/t4_dataset.h reads it).
// T1: the parameters with their declared values (a Python list in a string, as the schema types Values) and the
// space's defaults, and the space's constraints as Conditions over tuning parameters alone (derived values written
// out, problem symbols and device properties replaced by the recording's values), so the T1 space has the record's
// valid configurations. Records written before run.json kept the space (issue 36) have no constraints and no
// defaults: Conditions is empty, each Default is the first value, and General.Notes says so.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/analysis/recording.h"
#include "tuner/search/t4_dataset.h"

namespace kernlathe {

nlohmann::ordered_json t4_document(const Recording& recording);
nlohmann::ordered_json t1_document(const Recording& recording);

// t4_problems (what keeps a document from being a T4 file) lives with the reader, tuner/search/t4_dataset.h.

struct T4Files {
  std::filesystem::path t4;  // <kernel>-<device>[-<problem>].T4.json
  std::filesystem::path t1;  // <kernel>.T1.json: the name the T4 reader looks for beside it
};

// Writes both files into `directory` (created if needed), the device's name with spaces as underscores. Checks the
// T4 document first (TunerError listing the problems: a defect, never the user's input) and throws TunerError when
// a file cannot be written.
T4Files write_t4_files(const Recording& recording, const std::filesystem::path& directory);

}  // namespace kernlathe
