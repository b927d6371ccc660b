#include "tuner/spec/spec_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <system_error>

#include "tuner/spec/kernel_spec_reader.h"
#include "tuner/spec/space_reader.h"
#include "tuner/spec/t1_reader.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe {

namespace fs = std::filesystem;

KernelSpec parse_kernel_spec(const std::string& yaml_text, const std::filesystem::path& file,
                             const ProblemOverrides& overrides) {
  spec_loading::Document document(yaml_text, file);
  YAML::Node root = document.root();
  if (root.IsNull()) throw InputError(SourceLocation{file.string()}, "the spec file is empty");
  return spec_loading::read_kernel_spec(document, root, overrides);
}

KernelSpec load_kernel_spec(const std::filesystem::path& file, const ProblemOverrides& overrides) {
  std::error_code error;
  if (!fs::is_regular_file(file, error)) {
    throw InputError(SourceLocation{file.string()}, "kernel spec file " + spec_loading::why_not_a_file(file));
  }
  if (is_t1_file_name(file)) return load_t1_kernel_spec(file, overrides);
  return parse_kernel_spec(spec_loading::read_whole_file(file), file, overrides);
}

Space parse_space(const std::string& yaml_text, const std::filesystem::path& file) {
  return spec_loading::parse_space_document(yaml_text, file);
}

Space load_space(const std::filesystem::path& file) {
  std::error_code error;
  if (!fs::is_regular_file(file, error))
    throw InputError(SourceLocation{file.string()}, "space file " + spec_loading::why_not_a_file(file));
  return spec_loading::parse_space_document(spec_loading::read_whole_file(file), file);
}

ProblemOverrides parse_problem_overrides(std::string_view text) {
  auto trim = [](std::string_view part) {
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) part.remove_prefix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.remove_suffix(1);
    return part;
  };
  ProblemOverrides overrides;
  if (trim(text).empty()) return overrides;
  std::string_view rest = text;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw InputError(fmt::format("--problem '{}': '{}' is not NAME=VALUE (write e.g. N=1048576,M=512)", text, item));
    }
    std::string name(trim(item.substr(0, equals)));
    std::string_view value_text = trim(item.substr(equals + 1));
    if (!spec_loading::is_identifier(name)) {
      throw InputError(fmt::format("--problem '{}': '{}' is not a symbol name", text, name));
    }
    std::optional<std::int64_t> value = spec_loading::parse_integer_text(value_text);
    if (!value) {
      throw InputError(fmt::format("--problem '{}': the value of {} is '{}', not an integer", text, name, value_text));
    }
    for (const auto& [earlier, earlier_value] : overrides) {
      if (earlier == name) throw InputError(fmt::format("--problem '{}': {} is given twice", text, name));
    }
    overrides.emplace_back(name, *value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return overrides;
}

std::filesystem::path find_spec(std::string_view name_or_path) {
  std::error_code error;
  const fs::path given(name_or_path);
  if (fs::is_regular_file(given, error)) return given;
  if (fs::is_directory(given, error))
    throw InputError(SourceLocation{given.string()}, "is a folder; a kernel spec is a .yaml file (or a T1 .json file)");
  std::string tried = fmt::format("'{}'", given.string());
  const fs::path kernels_directory = "kernels";
  if (!given.has_parent_path() && !given.has_extension() && !name_or_path.empty()) {
    fs::path candidate = kernels_directory / (given.string() + ".yaml");
    if (fs::is_regular_file(candidate, error)) return candidate;
    tried += fmt::format(" and '{}'", candidate.string());
  }
  std::vector<std::string> available;
  for (fs::directory_iterator entry(kernels_directory, error), end; !error && entry != end; entry.increment(error)) {
    if (entry->path().extension() == ".yaml") available.push_back(entry->path().stem().string());
  }
  std::sort(available.begin(), available.end());
  std::string listing = available.empty() ? "no specs in ./kernels"
                                          : "specs in ./kernels: " + spec_loading::comma_list(available);
  throw InputError(fmt::format("no kernel spec '{}': tried {}{}; {}", name_or_path, tried,
                               spec_loading::did_you_mean(given.stem().string(), available), listing));
}

}  // namespace kernlathe
