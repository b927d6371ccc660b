// libFuzzer target for the CSV record reader (tuner/record/csv_record.h). Any bytes read as a record end in rows or
// an InputError; anything else (another exception, a crash, a sanitizer report) is a bug. And three properties of
// what the writer produces:
//   - rows that were read, written again, read back the same (values with quotes, commas and line breaks included);
//   - the written file cut short at any byte reads without an error: what a kill leaves is a torn last row,
//     skipped, never a reason to refuse the file;
//   - a writer opening that cut file sets aside exactly the torn bytes and keeps every complete row.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/record/csv_record.h"

namespace {

using namespace kernlathe;

Parameter parameter(const std::string& name, ParameterType type, std::vector<Value> values) {
  Parameter result;
  result.name = name;
  result.type = type;
  result.values = std::move(values);
  result.default_value = result.values.front();
  return result;
}

const Space& fuzz_space() {
  static const Space space = [] {
    Space result;
    result.name = "fuzz";
    result.parameters = {parameter("BLOCK", ParameterType::integer, {Value{std::int64_t{64}}}),
                         parameter("USE_SHMEM", ParameterType::boolean, {Value{false}, Value{true}}),
                         parameter("LAYOUT", ParameterType::enumeration, {Value{std::string("row")}})};
    return result;
  }();
  return space;
}

[[noreturn]] void bug(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "BUG: %s\ninput (%zu bytes): %.*s\n", what.c_str(), input.size(), static_cast<int>(input.size()),
               input.data());
  std::abort();
}

// In memory where there is /dev/shm: the writer syncs what it sets aside, ten times slower on a disk.
const std::filesystem::path& work_directory() {
  static const std::filesystem::path directory = [] {
    const std::filesystem::path parent =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    std::string pattern = (parent / "record_reader_fuzz_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    return std::filesystem::path(pattern);
  }();
  return directory;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream input(path, std::ios::binary);
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

bool same(const Evaluation& a, const Evaluation& b) {
  return a.configuration == b.configuration && a.status == b.status && a.message == b.message &&
         a.time.samples == b.time.samples && a.registers == b.registers && a.cubin_cached == b.cubin_cached &&
         a.throttle_reasons == b.throttle_reasons && a.dynamic_shared_bytes == b.dynamic_shared_bytes;
}

std::vector<RecordedEvaluation> parse(std::string_view text, const std::filesystem::path& name) {
  std::vector<RecordedEvaluation> records;
  for_each_record_in_text(text, name, fuzz_space(),
                          [&records](RecordedEvaluation&& record) { records.push_back(std::move(record)); });
  return records;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<RecordedEvaluation> records;
  try {
    records = parse(input, "fuzz.csv");
  } catch (const InputError&) {
    records.clear();
  }

  // Hostile text of the writer's own: the input itself as a message, a hash and an enumeration value.
  Evaluation hostile;
  hostile.configuration = {Value{std::int64_t{64}}, Value{true}, Value{std::string(input.substr(0, 64))}};
  hostile.status = Status::compile_error;
  hostile.message = std::string(input);
  records.push_back(RecordedEvaluation{std::string(input.substr(0, 16)), hostile});

  const std::filesystem::path csv = work_directory() / "evaluations.csv";
  std::filesystem::create_directories(work_directory());
  {
    RecordWriter writer(csv, fuzz_space(), RunMetadata{});
    for (const RecordedEvaluation& record : records) writer.append(record.evaluation, record.hash);
  }
  const std::string written = read_text(csv);
  std::vector<RecordedEvaluation> again;
  try {
    again = parse(written, csv);
  } catch (const InputError& error) {
    bug(std::string("the writer's own file does not read back: ") + error.what(), input);
  }
  if (again.size() != records.size()) bug("rows were lost or added on the way through the writer", input);
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (again[i].hash != records[i].hash || !same(again[i].evaluation, records[i].evaluation))
      bug("row " + std::to_string(i) + " changed on the way through the writer", input);
  }

  // Cut the file where the input says (a kill mid-row): no error, the complete rows before the cut survive.
  const std::size_t cut = size == 0 ? 0 : (data[0] * 257u + size) % (written.size() + 1);
  const std::string_view cut_text = std::string_view(written).substr(0, cut);
  const std::size_t complete_rows = static_cast<std::size_t>(std::count(cut_text.begin(), cut_text.end(), '\n'));
  std::size_t rows_read = 0;
  try {
    rows_read = parse(cut_text, csv).size();
  } catch (const InputError& error) {
    bug(std::string("a record cut short is refused: ") + error.what(), input);
  }
  if (complete_rows > 0 && rows_read != complete_rows - 1) bug("a record cut short lost complete rows", input);

  std::filesystem::resize_file(csv, cut);
  {
    RecordWriter writer(csv, fuzz_space(), RunMetadata{});
    const std::size_t torn_bytes = cut - (cut_text.rfind('\n') == std::string_view::npos ? 0 : cut_text.rfind('\n') + 1);
    if ((torn_bytes > 0) != !writer.torn_row_file().empty()) bug("a torn row was missed or invented", input);
    if (torn_bytes > 0 && read_text(writer.torn_row_file()) != cut_text.substr(cut - torn_bytes))
      bug("the side file does not hold the torn bytes", input);
  }
  const std::string kept = read_text(csv);
  if (complete_rows > 0 && kept != cut_text.substr(0, cut_text.rfind('\n') + 1))
    bug("a writer changed complete rows", input);
  std::filesystem::remove_all(work_directory());  // nothing left behind after the last input
  return 0;
}
