#include "tuner/spec/spec_hash.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "tuner/common/error.h"
#include "tuner/common/hash.h"
#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {
namespace {

// Read afresh on every call (not through read_source_file's per-process memory), so a process that hashes again
// after an edit of the spec or space sees the edit.
std::string read_current_text(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw InputError(SourceLocation{path.string()}, "cannot read the file");
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

// `problem_defaults:` at the margin, plain or quoted, followed by nothing, a space or a line end.
bool opens_problem_defaults(std::string_view line) {
  for (std::string_view key : {"problem_defaults", "\"problem_defaults\"", "'problem_defaults'"}) {
    if (!line.starts_with(key)) continue;
    std::string_view rest = line.substr(key.size());
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    if (rest.empty() || rest.front() != ':') continue;
    rest.remove_prefix(1);
    if (rest.empty() || rest.front() == ' ' || rest.front() == '\t' || rest.front() == '\r' || rest.front() == '\n')
      return true;
  }
  return false;
}

}  // namespace

std::string without_problem_defaults(std::string_view space_text) {
  std::string kept;
  kept.reserve(space_text.size());
  bool in_block = false;
  std::string margin;  // blank lines and comments at the margin since the block's last indented line
  while (!space_text.empty()) {
    const std::size_t end = space_text.find('\n');
    const std::string_view line = space_text.substr(0, end == std::string_view::npos ? space_text.size() : end + 1);
    space_text.remove_prefix(line.size());
    if (!in_block) {
      if (opens_problem_defaults(line)) in_block = true;
      else kept += line;
      continue;
    }
    const bool blank = line.find_first_not_of(" \t\r\n") == std::string_view::npos;
    if (blank || line.front() == '#') {
      margin += line;
    } else if (line.front() == ' ' || line.front() == '\t') {
      margin.clear();  // inside the block
    } else {
      in_block = false;  // the next top-level key: what stood just above it is its own
      kept += margin;
      margin.clear();
      if (opens_problem_defaults(line)) in_block = true;
      else kept += line;
    }
  }
  return kept + margin;
}

std::string problem_text(const KernelSpec& spec) {
  std::string text;
  for (const auto& [symbol, value] : spec.problem) {
    if (!text.empty()) text += ",";
    text += fmt::format("{}={}", symbol, value);
  }
  return text;
}

std::string spec_hash(const KernelSpec& spec, std::optional<std::string_view> arch) {
  const std::string spec_text = read_current_text(spec.file);
  const std::string space_text =
      spec.space.file.empty() ? "" : without_problem_defaults(read_current_text(spec.space.file));
  // The template with every file it includes: editing a header the template reaches makes earlier results stale.
  const std::string template_identity = template_hash(read_template_source(spec.template_file));
  if (!arch) return content_hash({spec_text, space_text, template_identity});
  return content_hash({spec_text, space_text, template_identity, problem_text(spec), *arch});
}

}  // namespace kernlathe
