#include "tuner/runtime/source_bundle.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernlathe/runtime.h"

namespace kernlathe {

using nlohmann::json;

std::string source_bundle_json(const std::string& kernel, const TemplateSource& source) {
  json headers = json::array();
  for (const auto& [name, text] : source.headers) headers.push_back({{"name", name}, {"text", text}});
  json document{{"format", 1},          {"kernel", kernel},           {"template", source.source_name},
                {"template_hash", template_hash(source)}, {"text", source.text}, {"headers", headers}};
  return document.dump(1) + "\n";
}

KernelSources parse_source_bundle(const std::string& json_text, const std::string& origin) {
  KernelSources read;
  TemplateSource& source = read.source;
  std::string recorded_hash;
  try {
    json document = json::parse(json_text);
    if (document.value("format", 0) != 1) throw RuntimeError(fmt::format("{}: not a source bundle of format 1", origin));
    // The texts are moved out of the parsed document rather than copied (gemm_bf16's are 100 KiB).
    source.source_name = document.at("template").get<std::string>();
    source.text = std::move(document.at("text").get_ref<std::string&>());
    for (auto& header : document.at("headers"))
      source.headers.emplace_back(header.at("name").get<std::string>(),
                                  std::move(header.at("text").get_ref<std::string&>()));
    recorded_hash = document.at("template_hash").get<std::string>();
  } catch (const json::exception& error) {
    throw RuntimeError(fmt::format("{}: not a readable source bundle: {}", origin, error.what()));
  }
  read.template_hash = template_hash(read.source);
  if (read.template_hash != recorded_hash)
    throw RuntimeError(fmt::format("{}: contents hash to {}, the bundle says {}: the file was edited", origin,
                                   read.template_hash, recorded_hash));
  return read;
}

KernelSources read_kernel_sources(const std::filesystem::path& directory, const std::string& kernel,
                                  const std::string& template_name) {
  std::error_code error;
  std::filesystem::path bundle = directory / (kernel + ".source.json");
  if (std::filesystem::is_regular_file(bundle, error)) {
    // Straight into a string of the file's size: a stringstream copied the 107 KB of gemm_bf16's bundle twice more.
    std::ifstream input(bundle, std::ios::binary);
    std::string contents(std::filesystem::file_size(bundle, error), '\0');
    if (error || !input.read(contents.data(), static_cast<std::streamsize>(contents.size())))
      throw RuntimeError(fmt::format("{}: cannot be read", bundle.string()));
    return parse_source_bundle(contents, bundle.string());
  }
  std::filesystem::path file = directory / template_name;
  if (std::filesystem::is_regular_file(file, error)) {
    try {
      KernelSources read;
      read.source = read_template_source(file);
      read.template_hash = template_hash(read.source);
      return read;
    } catch (const std::exception& failure) {
      throw RuntimeError(failure.what());
    }
  }
  throw RuntimeError(fmt::format("{}: no sources in '{}' (neither {} nor {})", kernel, directory.string(),
                                 bundle.filename().string(), template_name));
}

}  // namespace kernlathe
