#include "tuner/spec/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tuner/spec/spec_loader.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe {

using namespace spec_loading;

namespace {

using Symbols = std::vector<std::pair<std::string, std::int64_t>>;

Symbols read_symbols(const Document& document, const YAML::Node& node, const std::string& what) {
  Symbols symbols;
  Fields fields(document, node, what);
  for (const Fields::Entry& entry : fields.entries()) {
    const std::string name = read_name(document, entry.key_node, what + " symbol");
    symbols.emplace_back(name, read_integer(document, entry.value, fmt::format("{} symbol '{}'", what, name)));
  }
  return symbols;
}

// What one workload may hold: each problem is a tuning run of its own (minutes on a GPU), so more is a mistake, and
// a product of many axes would otherwise be built in memory before anything said so.
constexpr std::size_t max_problems = 10000;

// The product of the sweep's axes, the first axis varying slowest.
std::vector<Symbols> read_sweep(const Document& document, const YAML::Node& node, const std::string& what) {
  std::vector<Symbols> product{Symbols{}};
  Fields fields(document, node, what);
  if (fields.entries().empty()) document.fail(node, what + " has no axes");
  for (const Fields::Entry& axis : fields.entries()) {
    const std::string key = read_text(document, axis.key_node, what + " axis");
    std::vector<std::string> names;
    for (std::size_t start = 0; start <= key.size();) {
      const std::size_t comma = std::min(key.find(',', start), key.size());
      std::string name = key.substr(start, comma - start);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!is_identifier(name)) document.fail(axis.key_node, fmt::format("{} axis '{}': '{}' is not a symbol name", what, key, name));
      names.push_back(name);
      start = comma + 1;
    }
    const std::vector<YAML::Node> values = read_list(document, axis.value, fmt::format("{} axis '{}'", what, key));
    if (values.empty()) document.fail(axis.value, fmt::format("{} axis '{}' has no values", what, key));
    if (product.size() * values.size() > max_problems)
      document.fail(axis.value, fmt::format("{}: the axes up to '{}' give {} problems, more than a workload's {}; "
                                            "split the workload", what, key, product.size() * values.size(),
                                            max_problems));
    std::vector<Symbols> next;
    for (const Symbols& prefix : product) {
      for (const YAML::Node& value : values) {
        Symbols combined = prefix;
        if (names.size() == 1) {
          combined.emplace_back(names[0], read_integer(document, value, fmt::format("{} axis '{}'", what, key)));
        } else {
          const std::vector<YAML::Node> tuple = read_list(document, value, fmt::format("{} axis '{}' value", what, key));
          if (tuple.size() != names.size())
            document.fail(value, fmt::format("{} axis '{}': {} values for {} symbols", what, key, tuple.size(), names.size()));
          for (std::size_t index = 0; index < names.size(); ++index)
            combined.emplace_back(names[index], read_integer(document, tuple[index], fmt::format("{} axis '{}' {}", what, key, names[index])));
        }
        next.push_back(std::move(combined));
      }
    }
    product = std::move(next);
  }
  return product;
}

std::filesystem::path resolve_spec(const Document& document, const YAML::Node& node, const std::filesystem::path& file) {
  const std::string text = read_text(document, node, "task spec");
  const std::filesystem::path beside = file.parent_path() / text;
  if (std::filesystem::is_regular_file(beside)) return beside;
  try {
    return find_spec(text);
  } catch (const InputError& error) {
    document.fail(node, fmt::format("spec '{}' is neither a file beside the workload nor a known spec: {}", text, error.what()));
  }
}

}  // namespace

std::string WorkloadProblem::problem_text() const {
  std::string text;
  for (const auto& [name, value] : symbols) text += fmt::format("{}{}={}", text.empty() ? "" : ",", name, value);
  return text;
}

Workload read_workload(const std::filesystem::path& file) {
  if (!std::filesystem::is_regular_file(file)) throw InputError(fmt::format("{}: not a file", file.string()));
  const std::string text = read_whole_file(file);
  const Document document(text, file);
  const YAML::Node root = document.root();
  Fields top(document, root, "workload file");
  top.allow_only({"workload", "tasks"});
  Workload workload;
  const YAML::Node name_node = top.require("workload");
  workload.name = read_text(document, name_node, "workload name");
  // It names the sweep's state folder: letters, digits, '-', '_' and '.', not starting with '.'.
  const bool safe = !workload.name.empty() && workload.name.front() != '.' &&
                    workload.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
                        std::string::npos;
  if (!safe)
    document.fail(name_node, fmt::format("workload name '{}': use letters, digits, '-', '_' and '.', not starting with '.'",
                                         workload.name));
  const YAML::Node tasks_node = top.require("tasks");
  const std::vector<YAML::Node> tasks = read_list(document, tasks_node, "tasks");
  if (tasks.empty()) document.fail(tasks_node, "the workload lists no tasks");
  std::map<std::pair<std::string, Symbols>, std::size_t> seen;  // (spec, sorted symbols) -> the task listing it
  for (std::size_t index = 0; index < tasks.size(); ++index) {
    const std::string what = fmt::format("task {}", index + 1);
    Fields fields(document, tasks[index], what);
    fields.allow_only({"spec", "problem", "sweep", "problems"});
    const std::filesystem::path spec = resolve_spec(document, fields.require("spec"), file);
    const Symbols fixed = fields.find("problem") ? read_symbols(document, *fields.find("problem"), what + " problem") : Symbols{};
    std::vector<Symbols> varying;
    if (fields.find("sweep") && fields.find("problems"))
      document.fail(tasks[index], what + ": give either sweep or problems, not both");
    if (std::optional<YAML::Node> sweep = fields.find("sweep")) varying = read_sweep(document, *sweep, what + " sweep");
    if (std::optional<YAML::Node> listed = fields.find("problems")) {
      const std::vector<YAML::Node> items = read_list(document, *listed, what + " problems");
      if (items.empty()) document.fail(*listed, what + " lists no problems");
      for (const YAML::Node& item : items) varying.push_back(read_symbols(document, item, what + " problem"));
    }
    if (varying.empty()) varying.push_back({});  // the spec's own problem with the fixed symbols
    for (Symbols& symbols : varying) {
      WorkloadProblem problem{spec, fixed};
      for (auto& [name, value] : symbols) {
        for (const auto& [fixed_name, fixed_value] : fixed)
          if (fixed_name == name)
            document.fail(tasks[index], fmt::format("{}: symbol '{}' is both fixed (problem) and varied", what, name));
        problem.symbols.emplace_back(name, value);
      }
      // The same spec at the same problem twice (in any symbol order) would be tuned twice into one record.
      Symbols sorted = problem.symbols;
      std::sort(sorted.begin(), sorted.end());
      const auto [first, inserted] = seen.try_emplace({std::filesystem::weakly_canonical(spec).string(), sorted}, index + 1);
      if (!inserted)
        document.fail(tasks[index], fmt::format("{}: {} at {} is already in task {}", what, spec.string(),
                                                problem.problem_text(), first->second));
      workload.problems.push_back(std::move(problem));
    }
    if (workload.problems.size() > max_problems)
      document.fail(tasks[index], fmt::format("{}: the workload now holds {} problems, more than {}; split it", what,
                                              workload.problems.size(), max_problems));
  }
  return workload;
}

bool is_workload_file(const std::filesystem::path& file) {
  try {
    const YAML::Node root = YAML::LoadFile(file.string());
    return root.IsMap() && root["workload"];
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace kernlathe
