#pragma once
// Every evaluation of a run is one row of a CSV file, appended and flushed as soon as it is known, so a run
// that is killed loses at most the row being written and can be resumed. The CSV is a plain table (one column
// per parameter, then the measurement); what the run was measured with lives in the companion JSON file
// (run_metadata.h).
//
//   hash,BLOCK,VEC,USE_SHMEM,LAYOUT,status,message,time_median_ms,...,timestamp
//   3f2a...,128,4,true,row,ok,,0.0123,...,1714567890.25
//
// One row is one line. Fields holding a comma or a double quote (or a leading or trailing blank) are quoted with
// their quotes doubled (RFC 4180); a backslash, a line feed and a carriage return inside any field are written
// as \\, \n and \r, so no row ever spans two lines and a row cut short by a kill is exactly the last line
// missing its newline. (Records of earlier versions may hold raw line breaks inside a quoted message; they are
// still read.)
//
// A record is either read whole or refused: a row that cannot be read (a stray double quote, a wrong number of
// fields, a value of the wrong type) is an InputError naming file:line of that row, and nothing is written to
// such a file. The only row ever set aside is a torn last row: a final line without its newline, what a writer
// killed in the middle of a row leaves behind. Readers skip it; a RecordWriter copies it to a side file
// (<csv>.torn-<UTC time>) before cutting it off, so no byte is lost.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/record/run_metadata.h"

namespace kernlathe {

// The header of a record file for space: "hash", the parameter names in declared order, then the measurement
// columns (measurement_columns()), the stream columns for a streamed space, then the conditions of the
// measurement (condition_columns()). The conditions grew over time: records written with fewer of them (none,
// or all but `device`) are read, and resumed in their own layout; condition_count says how many a layout has.
std::vector<std::string> record_columns(const Space& space, std::size_t condition_count);
std::vector<std::string> record_columns(const Space& space);  // the current layout, every condition column
const std::vector<std::string>& measurement_columns();
// Appended after the measurement columns when space.streamed: the stream stage breakdown (StreamStages).
const std::vector<std::string>& stream_columns();
// The 95% interval of the median, board power and temperature after timing, energy per launch and its window,
// the objective's value when the run minimised energy (0 otherwise), clock_flag: the throttle reasons outside the
// clock policy by name (tuner/measure/measurement.h), empty inside it, and device: which GPU measured the row
// (Evaluation::device).
const std::vector<std::string>& condition_columns();
// The numbers of condition columns that records have been written with, newest first.
const std::vector<std::size_t>& condition_layouts();

// A text key that identifies a configuration (values with their types), for sets and maps of configurations.
std::string configuration_key(const Configuration& configuration);

class RecordWriter {
 public:
  // Creates csv with its header when missing or empty. Otherwise reads every row first (InputError naming
  // file:line for a row that cannot be read, or naming the difference when the header does not match the space;
  // the file is left as it was), sets a torn last row aside (torn_row_file()) and appends after the last
  // complete row. A file written before parameters were added to the space is first rewritten in the space's
  // layout, the added columns holding their defaults (added_columns()). Appends metadata to the companion JSON file.
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
  // Where the torn last row found on opening was copied before it was cut off; empty when there was none.
  const std::filesystem::path& torn_row_file() const { return torn_row_file_; }
  int torn_row_line() const { return torn_row_line_; }  // its line in the record file, 0 when none
  // The parameters whose columns the file gained on opening: it was written before they were added to the space,
  // and its rows now hold their defaults. Empty when the file already had the space's layout.
  const std::vector<std::string>& added_columns() const { return added_columns_; }

 private:
  std::filesystem::path path_;
  std::size_t parameter_count_ = 0;
  bool streamed_ = false;  // streamed spaces add stream_columns()
  std::size_t condition_count_ = 0;  // condition columns in the file's layout (condition_layouts())
  int descriptor_ = -1;
  bool resumed_ = false;
  bool sync_every_row_ = false;
  std::filesystem::path torn_row_file_;
  int torn_row_line_ = 0;
  std::vector<std::string> added_columns_;
};

struct RecordedEvaluation {
  std::string hash;
  Evaluation evaluation;
};

// Reads a record file with the parameter text mapped back to typed values of space. The header must match
// record_columns(space). A torn last row is skipped (the file is not changed); any other row that cannot be read
// is an InputError naming file:line. A missing file, a folder, an empty file and a header cut off are InputErrors
// too; a header with no rows is an empty record.
std::vector<RecordedEvaluation> read_records(const std::filesystem::path& csv, const Space& space);

// Streams the rows instead of collecting them; same rules as read_records.
void for_each_record(const std::filesystem::path& csv, const Space& space,
                     const std::function<void(RecordedEvaluation&&)>& visit);

// The space's parameters that a record file has no column for (it was written before they were added to the space),
// in the space's order; empty when the file has the space's layout. Reads the header only; a header that is neither
// is an InputError as for read_records.
std::vector<std::string> parameters_missing_from(const std::filesystem::path& csv, const Space& space);

// The same on record text already in memory; name stands for the file in messages.
void for_each_record_in_text(std::string_view text, const std::filesystem::path& name, const Space& space,
                             const std::function<void(RecordedEvaluation&&)>& visit);

// What earlier runs recorded in a record file, for a resumed run: the evaluations recorded under one spec hash
// (the later row where a configuration was recorded twice, as ReplaySource does), which the run neither measures
// again nor leaves out of its ranking, and the number of rows recorded under another hash: those measured another
// version of the spec, space, template, problem or arch, and are neither skipped nor ranked.
class ResumeState {
 public:
  bool contains(const Configuration& configuration) const { return index_.contains(configuration_key(configuration)); }
  std::size_t count() const { return evaluations_.size(); }  // distinct configurations
  void add(Evaluation evaluation);
  // One per configuration, in the order each was first recorded.
  const std::vector<Evaluation>& evaluations() const { return evaluations_; }
  std::size_t other_hash_rows() const { return other_hash_rows_; }
  void add_other_hash_row() { ++other_hash_rows_; }

 private:
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<Evaluation> evaluations_;
  std::size_t other_hash_rows_ = 0;
};

// Empty state when csv does not exist yet.
ResumeState load_resume_state(const std::filesystem::path& csv, const Space& space, const std::string& hash);

}  // namespace kernlathe
