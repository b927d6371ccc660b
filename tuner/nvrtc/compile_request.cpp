#include "tuner/nvrtc/compile_request.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/common/hash.h"

namespace kernlathe {

using expr::Value;

namespace {

std::string decimal_text(std::int64_t value) {
  // The most negative int64 has no positive counterpart to negate, so it cannot be written as one literal.
  if (value == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::to_string(value);
}

std::string float_text(double value) {
  if (std::isnan(value)) return "__builtin_nan(\"\")";
  if (std::isinf(value)) return value > 0 ? "__builtin_huge_val()" : "(-__builtin_huge_val())";
  std::string text = fmt::format("{:.17g}", value);
  // %.17g prints 2.0 as "2", which C++ would read as an int and divide as an int.
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

// Enumeration values become parts of macro names; anything that is not an identifier character becomes '_'.
std::string identifier_text(const std::string& text) {
  std::string identifier = text;
  for (char& character : identifier) {
    bool is_identifier_character = (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') ||
                                   (character >= '0' && character <= '9') || character == '_';
    if (!is_identifier_character) character = '_';
  }
  return identifier;
}

bool has_standard_option(const std::vector<std::string>& options) {
  for (const std::string& option : options) {
    if (option.rfind("-std", 0) == 0 || option.rfind("--std", 0) == 0) return true;
  }
  return false;
}

// "sm_90" -> 90; 0 when the text is not of that form.
int arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return 0;
  return std::atoi(arch.c_str() + 3);
}

}  // namespace

std::string define_line(const std::string& name, const Value& value, int enumeration_index) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    std::string line = fmt::format("#define {}_{} 1\n", name, identifier_text(*text));
    if (enumeration_index >= 0) line += fmt::format("#define {} {}\n", name, enumeration_index);
    return line;
  }
  if (const auto* flag = std::get_if<bool>(&value)) return fmt::format("#define {} {}\n", name, *flag ? 1 : 0);
  if (const auto* real = std::get_if<double>(&value)) return fmt::format("#define {} {}\n", name, float_text(*real));
  std::int64_t integer = std::get<std::int64_t>(value);
  bool fits_int = integer >= std::numeric_limits<int>::min() && integer <= std::numeric_limits<int>::max();
  if (fits_int) return fmt::format("#define {} {}\n", name, integer);
  std::string text = decimal_text(integer);
  return fmt::format("#define {} {}\n", name, text.front() == '(' ? text : text + "LL");
}

std::string template_argument_text(const Value& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const auto* real = std::get_if<double>(&value)) return float_text(*real);
  return decimal_text(std::get<std::int64_t>(value));
}

const std::string& read_source_file(const std::filesystem::path& path) {
  // Node-based map: references handed out stay valid while other files are added.
  static std::mutex mutex;
  static std::map<std::filesystem::path, std::string> contents_by_path;
  std::filesystem::path key = path.lexically_normal();
  std::lock_guard lock(mutex);
  auto found = contents_by_path.find(key);
  if (found != contents_by_path.end()) return found->second;
  std::ifstream stream(key, std::ios::binary);
  if (!stream) throw InputError(SourceLocation{key.string()}, "cannot read the file");
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  if (stream.bad()) throw InputError(SourceLocation{key.string()}, "error while reading the file");
  return contents_by_path.emplace(key, buffer.str()).first->second;
}

namespace {

// The file an #include line names, read as ^[ \t]*#[ \t]*include[ \t]*["<]([^">]+)[">] would read it; "" when the
// line names none. Written out rather than as a std::regex, which took 1.2 ms over gemm.cu and its 13 files: most of
// the runtime's first plan of gemm_bf16 from a template directory (benchmarks/bench_runtime_plan.cpp).
std::string_view included_name(std::string_view line) {
  std::size_t at = 0;
  auto skip_blanks = [&] {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
  };
  skip_blanks();
  if (at >= line.size() || line[at] != '#') return {};
  ++at;
  skip_blanks();
  if (line.substr(at, 7) != "include") return {};
  at += 7;
  skip_blanks();
  if (at >= line.size() || (line[at] != '"' && line[at] != '<')) return {};
  const std::size_t start = at + 1;
  const std::size_t end = line.find_first_of("\">", start);
  if (end == std::string_view::npos || end == start) return {};
  return line.substr(start, end - start);
}

void collect_recursively(const std::string& source, const std::filesystem::path& source_directory,
                         const std::filesystem::path& search_directory, std::set<std::string>& seen_names,
                         std::vector<std::pair<std::string, std::string>>& headers) {
  const std::string_view text = source;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const std::string name(included_name(line));
    if (name.empty() || seen_names.contains(name)) continue;
    std::filesystem::path file;
    for (const std::filesystem::path& directory : {source_directory, search_directory}) {
      std::error_code error;
      if (std::filesystem::is_regular_file(directory / name, error)) {
        file = directory / name;
        break;
      }
    }
    if (file.empty()) continue;  // a toolkit header written with quotes: NVRTC finds it through -I
    seen_names.insert(name);
    const std::string& contents = read_source_file(file);
    headers.emplace_back(name, contents);
    collect_recursively(contents, file.parent_path(), search_directory, seen_names, headers);
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> collect_included_files(
    const std::string& source, const std::filesystem::path& source_directory,
    const std::filesystem::path& search_directory) {
  std::set<std::string> seen_names;
  std::vector<std::pair<std::string, std::string>> headers;
  collect_recursively(source, source_directory, search_directory, seen_names, headers);
  return headers;
}

std::string cuda_include_directory() {
  std::vector<std::filesystem::path> candidates;
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home != nullptr && *cuda_home != '\0') {
    candidates.push_back(std::filesystem::path(cuda_home) / "include");
  }
  candidates.emplace_back("/usr/local/cuda/include");
  for (const auto& candidate : candidates) {
    std::error_code error;
    if (std::filesystem::is_directory(candidate, error)) return candidate.string();
  }
  return "";
}

std::string with_arch_specific_suffix(const std::string& arch, bool arch_specific) {
  // Arch-specific variants (sm_90a, sm_100a, sm_120a) exist from Hopper on.
  if (!arch_specific || arch.empty() || arch.back() == 'a' || arch_number(arch) < 90) return arch;
  return arch + "a";
}

TemplateSource read_template_source(const std::filesystem::path& path) {
  std::filesystem::path file = path.lexically_normal();
  TemplateSource source;
  source.source_name = file.filename().string();
  source.text = read_source_file(file);
  source.headers = collect_included_files(source.text, file.parent_path(), file.parent_path());
  return source;
}

std::string template_hash(const TemplateSource& source) {
  std::uint64_t state = fnv1a_64(source.text);
  for (const auto& [name, contents] : source.headers) {
    state = fnv1a_64_sized(name, state);
    state = fnv1a_64_sized(contents, state);
  }
  return fmt::format("{:016x}", state);
}

CompileRequest make_compile_request(const TemplateSource& source, const std::vector<CompileTimeValue>& values,
                                    std::string name_expression, const std::vector<std::string>& extra_options,
                                    const std::string& arch, bool arch_specific) {
  CompileRequest request;
  request.source_name = source.source_name;
  std::string prelude;
  for (const CompileTimeValue& value : values) prelude += define_line(value.name, value.value, value.enumeration_index);
  request.source = prelude + fmt::format("#line 1 \"{}\"\n", request.source_name) + source.text;
  request.name_expression = std::move(name_expression);
  request.arch = with_arch_specific_suffix(arch, arch_specific);
  request.options = extra_options;
  if (!has_standard_option(request.options)) request.options.emplace_back("--std=c++17");
  request.options.push_back("--gpu-architecture=" + request.arch);
  // NVRTC 13 has no built-in search path: without this, #include <cuda_fp16.h> fails. Project files never come
  // through a search path (they are in-memory headers), so the key covers everything of ours NVRTC reads.
  if (std::string cuda_include = cuda_include_directory(); !cuda_include.empty()) {
    request.options.push_back("-I" + cuda_include);
  }
  request.headers = source.headers;
  return request;
}

}  // namespace kernlathe
