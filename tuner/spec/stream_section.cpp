#include "tuner/spec/stream_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "tuner/spec/argument_reader.h"
#include "tuner/spec/name_resolution.h"

namespace kernlathe::spec_loading {

std::optional<std::string> file_pattern_problem(std::string_view pattern) {
  std::size_t position = 0;
  while ((position = pattern.find("${", position)) != std::string_view::npos) {
    const std::size_t end = pattern.find('}', position);
    if (end == std::string_view::npos) {
      return fmt::format("the '${{' at character {} has no closing '}}' (write ${{NAME}} or ${{NAME:-default}})",
                         position + 1);
    }
    std::string_view inside = pattern.substr(position + 2, end - position - 2);
    const std::size_t separator = inside.find(":-");
    std::string_view name = inside.substr(0, separator);
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) ||
        !std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
      return fmt::format("'${{{}}}' at character {} does not name an environment variable (letters, digits and _, "
                         "not starting with a digit; ${{NAME:-default}} for a default)",
                         inside, position + 1);
    }
    // The expansion takes the first '}' as the end, so a default cannot hold another ${...}.
    if (separator != std::string_view::npos && inside.find("${", separator) != std::string_view::npos) {
      return fmt::format("the default of '${{{}' at character {} holds another '${{': defaults are plain text",
                         name, position + 1);
    }
    position = end + 1;
  }
  return std::nullopt;
}

// stream: {files: <glob> | generate: <initialisation>, format: npy|raw, items, item_shape, dtype, input, output}
StreamWorkload read_stream(const Document& document, const YAML::Node& node, const std::vector<Argument>& arguments) {
  Fields fields(document, node, "stream");
  fields.allow_only({"files", "generate", "format", "items", "item_shape", "dtype", "input", "output"});
  StreamWorkload stream;
  stream.enabled = true;
  stream.where = document.where(node);
  stream.base_directory = document.file().parent_path();
  auto files = fields.find("files");
  auto generate = fields.find("generate");
  if (files.has_value() == generate.has_value()) {
    document.fail(node, "stream needs exactly one source: files: <glob of .npy or raw files> or generate: "
                        "{random: {seed, low, high}}");
  }
  if (files) {
    stream.source = StreamWorkload::SourceKind::files;
    stream.pattern = read_text(document, *files, "stream.files");
    if (std::optional<std::string> problem = file_pattern_problem(stream.pattern)) {
      document.fail(*files, fmt::format("stream.files '{}': {}", stream.pattern, *problem));
    }
  } else {
    stream.source = StreamWorkload::SourceKind::generated;
    stream.generator = read_initialisation(document, *generate, "stream.generate");
  }
  if (auto format = fields.find("format")) {
    if (!files) document.fail(*format, "stream.format applies to files only; generated items need none");
    stream.format = read_choice(document, *format, "stream.format", {"npy", "raw"}) == "npy"
                        ? StreamWorkload::FileFormat::npy
                        : StreamWorkload::FileFormat::raw;
  }
  stream.items = read_expression(document, fields.require("items"), "stream.items");
  YAML::Node shape_node = fields.require("item_shape");
  stream.item_shape = read_expression_list(document, shape_node, "stream.item_shape");
  if (stream.item_shape.empty()) document.fail(shape_node, "stream.item_shape is empty: give at least one dimension");

  auto find_buffer = [&](const char* key) -> const Argument& {
    YAML::Node name_node = fields.require(key);
    std::string name = read_name(document, name_node, fmt::format("stream.{}", key));
    std::vector<std::string> buffers;
    for (const Argument& argument : arguments) {
      if (argument.is_buffer) buffers.push_back(argument.name);
      if (argument.is_buffer && argument.name == name) return argument;
    }
    document.fail(name_node, fmt::format("stream.{} names '{}', which is not a buffer argument{}; buffers: {}", key,
                                         name, did_you_mean(name, buffers), comma_list(buffers)));
  };
  const Argument& input = find_buffer("input");
  const Argument& output = find_buffer("output");
  stream.input_argument = input.name;
  stream.output_argument = output.name;
  if (input.role != Role::in) {
    document.fail(fields.require("input"),
                  fmt::format("stream.input '{}' must have role: in (a batch arrives in it)", input.name));
  }
  if (output.role == Role::in) {
    document.fail(fields.require("output"),
                  fmt::format("stream.output '{}' has role: in; the output that comes back is written by the kernel",
                              output.name));
  }
  if (input.name == output.name) document.fail(fields.require("output"), "stream.input and stream.output must differ");
  stream.dtype = input.dtype;
  if (auto dtype_node = fields.find("dtype")) {
    Dtype dtype = read_dtype(document, *dtype_node, "stream.dtype");
    if (dtype != input.dtype) {
      document.fail(*dtype_node, fmt::format("stream.dtype {} differs from the dtype {} of its input argument '{}'",
                                             dtype_name(dtype), dtype_name(input.dtype), input.name));
    }
  }
  return stream;
}

// The typed loader settings of a streamed spec; every key is an expression of parameters.
void read_loader_settings(const Document& document, const YAML::Node& node, LoaderExpressions& loader) {
  Fields fields(document, node, "loader");
  fields.allow_only({"pinned", "workers", "prefetch", "streams", "batch", "chunk_bytes"});
  auto read = [&](const char* key, Expression& target) {
    if (auto value = fields.find(key)) target = read_expression(document, *value, fmt::format("loader.{}", key));
  };
  read("pinned", loader.pinned);
  read("workers", loader.workers);
  read("prefetch", loader.prefetch);
  read("streams", loader.streams);
  read("batch", loader.batch);
  read("chunk_bytes", loader.chunk_bytes);
}

// Item count and shape are fixed per problem (the dataset is); loader settings may read parameters.
void check_stream_names(const KernelSpec& spec) {
  expr::Scope scope;
  for (const std::string& name : device_property_names()) scope.add(name);
  for (const auto& [symbol, value] : spec.problem) scope.add(symbol);
  const expr::Scope problem_scope = scope;
  for (const Parameter& parameter : spec.space.parameters) scope.add(parameter.name);
  for (const DerivedValue& derived : spec.space.derived) scope.add(derived.name);
  check_fixed_per_problem(spec.stream.items, problem_scope, spec.space, "stream.items");
  for (const Expression& dimension : spec.stream.item_shape)
    check_fixed_per_problem(dimension, problem_scope, spec.space, "stream.item_shape");
  for (const Expression* setting : {&spec.loader.pinned, &spec.loader.workers, &spec.loader.prefetch,
                                    &spec.loader.streams, &spec.loader.batch, &spec.loader.chunk_bytes}) {
    check_resolves(*setting, scope);
  }
}

}  // namespace kernlathe::spec_loading
