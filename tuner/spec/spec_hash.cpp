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

}  // namespace

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
  const std::string space_text = spec.space.file.empty() ? "" : read_current_text(spec.space.file);
  // The template with every file it includes: editing a header the template reaches makes earlier results stale.
  const std::string template_identity = template_hash(read_template_source(spec.template_file));
  if (!arch) return content_hash({spec_text, space_text, template_identity});
  return content_hash({spec_text, space_text, template_identity, problem_text(spec), *arch});
}

}  // namespace kernlathe
