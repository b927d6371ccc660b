#pragma once
// Every evaluation of a run is one row of a CSV file, appended and flushed as soon as it is known, so a run
// that is killed loses at most the row being written and can be resumed. The CSV is a plain table (one column
// per parameter, then the measurement); what the run was measured with lives in the companion JSON file
// (run_metadata.h).
//
//   hash,BLOCK,VEC,USE_SHMEM,LAYOUT,status,message,time_median_ms,...,timestamp
//   3f2a...,128,4,true,row,ok,,0.0123,...,1714567890.25

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/record/run_metadata.h"

namespace kernlathe {

// The header of a record file for space: "hash", the parameter names in declared order, then the measurement
// columns (measurement_columns()).
std::vector<std::string> record_columns(const Space& space);
const std::vector<std::string>& measurement_columns();
// Appended after the measurement columns when space.streamed: the stream stage breakdown (StreamStages).
const std::vector<std::string>& stream_columns();

// A text key that identifies a configuration (values with their types), for sets and maps of configurations.
std::string configuration_key(const Configuration& configuration);

class RecordWriter {
 public:
  // Creates csv with its header when missing or empty; otherwise checks that the existing header names the
  // same columns (InputError naming the difference when not) and appends after the last complete row,
  // dropping a partial row a killed writer left behind. Appends metadata to the companion JSON file.
  RecordWriter(std::filesystem::path csv, const Space& space, const RunMetadata& metadata);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Writes one row with a single write() and, when sync_every_row is set, fsyncs it.
  // A configuration with the wrong number of values is a programming error: TunerError.
  void append(const Evaluation& evaluation, const std::string& hash);

  // fsync after every row: survives a power loss, costs about a millisecond per row on a disk.
  void set_sync_every_row(bool sync) { sync_every_row_ = sync; }

  const std::filesystem::path& path() const { return path_; }
  bool resumed() const { return resumed_; }  // the file already held a header

 private:
  std::filesystem::path path_;
  std::size_t parameter_count_ = 0;
  bool streamed_ = false;  // streamed spaces add stream_columns()
  int descriptor_ = -1;
  bool resumed_ = false;
  bool sync_every_row_ = false;
};

struct RecordedEvaluation {
  std::string hash;
  Evaluation evaluation;
};

// Reads a record file with the parameter text mapped back to typed values of space. The header must match
// record_columns(space). A partial last row (a killed writer) is ignored; a malformed row anywhere else is an
// InputError naming file:line. A missing file is an InputError too.
std::vector<RecordedEvaluation> read_records(const std::filesystem::path& csv, const Space& space);

// Streams the rows instead of collecting them; same rules as read_records.
void for_each_record(const std::filesystem::path& csv, const Space& space,
                     const std::function<void(RecordedEvaluation&&)>& visit);

// The configurations a previous run already recorded for one spec hash; a resumed run skips them.
// Rows recorded with another hash measured another kernel version and are not skipped.
class ResumeState {
 public:
  bool contains(const Configuration& configuration) const { return keys_.contains(configuration_key(configuration)); }
  std::size_t count() const { return keys_.size(); }
  void add(const Configuration& configuration) { keys_.insert(configuration_key(configuration)); }

 private:
  std::unordered_set<std::string> keys_;
};

// Empty state when csv does not exist yet.
ResumeState load_resume_state(const std::filesystem::path& csv, const Space& space, const std::string& hash);

}  // namespace kernlathe
