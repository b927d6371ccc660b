#pragma once
// `tune analyze` end to end, without the command line: every analysis of every recording, portability across
// GPUs, and the two ways of printing it (a text report for people, JSON with every figure for scripts).

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/analysis/failures.h"
#include "tuner/analysis/importance.h"
#include "tuner/analysis/landscape.h"
#include "tuner/analysis/portability.h"
#include "tuner/analysis/recording.h"

namespace kernlathe {

struct RecordingAnalysis {
  LandscapeSummary landscape;
  ImportanceResult importance;
  std::vector<FailureExplanation> failures;
};

struct AnalysisReport {
  std::vector<Recording> recordings;
  std::vector<RecordingAnalysis> analyses;  // one per recording, same order
  std::vector<PortabilityGroup> portability;
  ImportanceOptions options;
};

// Called with one line of progress before each recording is analysed.
using AnalysisProgress = std::function<void(const std::string& line)>;

AnalysisReport analyse_recordings(std::vector<Recording> recordings, const ImportanceOptions& options,
                                  const AnalysisProgress& progress = {});

// Every figure of the report; configurations as {parameter: value} objects, absent figures as null.
nlohmann::ordered_json report_to_json(const AnalysisReport& report);

// Tables for people.
std::string report_to_text(const AnalysisReport& report);

}  // namespace kernlathe
