#include "tuner/runtime/source_bundle.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernlathe/runtime.h"

namespace kernlathe {

using nlohmann::json;

namespace {

// The length of the well-formed UTF-8 sequence that starts at `at` (RFC 3629, which nlohmann::json enforces too:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0 when there is none.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  auto byte = [&](std::size_t index) { return index < text.size() ? static_cast<unsigned char>(text[index]) : 0u; };
  auto follows = [&](std::size_t index, unsigned low = 0x80, unsigned high = 0xbf) {
    return byte(index) >= low && byte(index) <= high;
  };
  const unsigned lead = byte(at);
  if (lead >= 0xc2 && lead <= 0xdf) return follows(at + 1) ? 2 : 0;
  if (lead == 0xe0) return follows(at + 1, 0xa0) && follows(at + 2) ? 3 : 0;
  if (lead == 0xed) return follows(at + 1, 0x80, 0x9f) && follows(at + 2) ? 3 : 0;
  if (lead >= 0xe1 && lead <= 0xef) return follows(at + 1) && follows(at + 2) ? 3 : 0;
  if (lead == 0xf0) return follows(at + 1, 0x90) && follows(at + 2) && follows(at + 3) ? 4 : 0;
  if (lead >= 0xf1 && lead <= 0xf3) return follows(at + 1) && follows(at + 2) && follows(at + 3) ? 4 : 0;
  if (lead == 0xf4) return follows(at + 1, 0x80, 0x8f) && follows(at + 2) && follows(at + 3) ? 4 : 0;
  return 0;
}

// The bundle as source_bundle_json writes it, read without a JSON library: nlohmann::json took 0.42 ms over
// gemm_bf16's 107 KB bundle, a fifth of the runtime's first plan of it from an export
// (benchmarks/bench_runtime_plan.cpp), because it copies every character of the long strings one at a time. This
// reader copies runs of plain characters. It gives up on anything it does not expect (another key or a repeated one,
// a value of another type, a \u escape, bytes that are not UTF-8, a format other than 1), and the bundle is then read
// with nlohmann::json as before, which gives the same fields or says what is wrong.
class BundleReader {
 public:
  explicit BundleReader(std::string_view text) : text_(text) {}

  bool read(TemplateSource& source, std::string& recorded_hash) {
    enum Field : unsigned { format = 1, kernel = 2, template_name = 4, hash = 8, text = 16, headers = 32 };
    unsigned seen = 0;
    auto once = [&](Field field) {
      if ((seen & field) != 0) return false;
      seen |= field;
      return true;
    };
    bool read_all = members([&](std::string_view key) {
      std::string ignored;
      std::int64_t number = 0;
      if (key == "format") return once(format) && integer(number) && number == 1;
      if (key == "kernel") return once(kernel) && string(ignored);
      if (key == "template") return once(template_name) && string(source.source_name);
      if (key == "template_hash") return once(hash) && string(recorded_hash);
      if (key == "text") return once(text) && string(source.text);
      if (key == "headers") return once(headers) && header_list(source.headers);
      return false;
    });
    skip_whitespace();
    return read_all && at_ == text_.size() && (seen | kernel) == (format | kernel | template_name | hash | text | headers);
  }

 private:
  void skip_whitespace() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) ++at_;
  }

  bool take(char expected) {
    skip_whitespace();
    if (at_ >= text_.size() || text_[at_] != expected) return false;
    ++at_;
    return true;
  }

  // "{" member ("," member)* "}" where a member is a key, ":" and whatever value(key) reads.
  template <typename Value>
  bool members(Value value) {
    if (!take('{')) return false;
    if (take('}')) return true;
    do {
      std::string key;
      if (!take('"') || !string_rest(key) || !take(':') || !value(key)) return false;
    } while (take(','));
    return take('}');
  }

  bool header_list(HeaderFiles& headers) {
    if (!take('[')) return false;
    if (take(']')) return true;
    do {
      std::string name, contents;
      bool has_name = false, has_contents = false;
      bool read = members([&](std::string_view key) {
        if (key != "name" && key != "text") return false;
        bool& has = key == "name" ? has_name : has_contents;
        if (has) return false;
        has = true;
        return string(key == "name" ? name : contents);
      });
      if (!read || !has_name || !has_contents) return false;
      headers.emplace_back(std::move(name), std::move(contents));
    } while (take(','));
    return take(']');
  }

  // An integer as JSON writes one: no leading zeros, no fraction, no exponent.
  bool integer(std::int64_t& value) {
    skip_whitespace();
    const std::size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    const std::size_t digits = at_;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
    if (at_ == digits || (text_[digits] == '0' && at_ - digits > 1)) return false;
    if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E')) return false;
    auto [end, error] = std::from_chars(text_.data() + start, text_.data() + at_, value);
    return error == std::errc() && end == text_.data() + at_;
  }

  bool string(std::string& value) { return take('"') && string_rest(value); }

  // The rest of a string after its opening quote.
  bool string_rest(std::string& value) {
    value.clear();
    while (at_ < text_.size()) {
      std::size_t run = at_;
      while (run < text_.size() && plain_characters[static_cast<unsigned char>(text_[run])]) ++run;
      value.append(text_.data() + at_, run - at_);
      at_ = run;
      if (at_ >= text_.size()) return false;
      const auto character = static_cast<unsigned char>(text_[at_]);
      if (character == '"') {
        ++at_;
        return true;
      }
      if (character == '\\') {
        if (!escape(value)) return false;
        continue;
      }
      const std::size_t length = character >= 0x80 ? utf8_sequence_length(text_, at_) : 0;
      if (length == 0) return false;  // a control character, or bytes that are not UTF-8
      value.append(text_.data() + at_, length);
      at_ += length;
    }
    return false;
  }

  bool escape(std::string& value) {
    if (at_ + 1 >= text_.size()) return false;
    static constexpr std::string_view escaped = "\"\\/bfnrt", meant = "\"\\/\b\f\n\r\t";
    const std::size_t which = escaped.find(text_[at_ + 1]);
    if (which == std::string_view::npos) return false;  // \u among them: left to nlohmann::json
    value += meant[which];
    at_ += 2;
    return true;
  }

  // Characters a string holds as they are: printable ASCII but the quote and the backslash. A table rather than four
  // comparisons per character: reading gemm_bf16's bundle took 0.07 ms instead of 0.12.
  static constexpr std::array<bool, 256> plain_characters = [] {
    std::array<bool, 256> plain{};
    for (int character = 0x20; character < 0x80; ++character) plain[character] = character != '"' && character != '\\';
    return plain;
  }();

  std::string_view text_;
  std::size_t at_ = 0;
};

void read_with_json_library(const std::string& json_text, const std::string& origin, TemplateSource& source,
                            std::string& recorded_hash) {
  try {
    json document = json::parse(json_text);
    if (document.value("format", 0) != 1) throw RuntimeError(fmt::format("{}: not a source bundle of format 1", origin));
    source.source_name = document.at("template").get<std::string>();
    source.text = document.at("text").get<std::string>();
    for (const auto& header : document.at("headers"))
      source.headers.emplace_back(header.at("name").get<std::string>(), header.at("text").get<std::string>());
    recorded_hash = document.at("template_hash").get<std::string>();
  } catch (const json::exception& error) {
    throw RuntimeError(fmt::format("{}: not a readable source bundle: {}", origin, error.what()));
  }
}

}  // namespace

std::string source_bundle_json(const std::string& kernel, const TemplateSource& source) {
  json headers = json::array();
  for (const auto& [name, text] : source.headers) headers.push_back({{"name", name}, {"text", text}});
  json document{{"format", 1},          {"kernel", kernel},           {"template", source.source_name},
                {"template_hash", template_hash(source)}, {"text", source.text}, {"headers", headers}};
  return document.dump(1) + "\n";
}

KernelSources parse_source_bundle(const std::string& json_text, const std::string& origin) {
  KernelSources read;
  std::string recorded_hash;
  if (!BundleReader(json_text).read(read.source, recorded_hash)) {
    read.source = {};
    recorded_hash.clear();
    read_with_json_library(json_text, origin, read.source, recorded_hash);
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
    // Read straight into a string of the file's size: through a stringstream, gemm_bf16's 107 KB bundle was copied
    // twice more, and reading its sources took 0.24 ms instead of 0.20.
    const std::uintmax_t size = std::filesystem::file_size(bundle, error);
    std::ifstream input(bundle, std::ios::binary);
    if (error || !input) throw RuntimeError(fmt::format("{}: cannot be read", bundle.string()));
    std::string contents(static_cast<std::size_t>(size), '\0');
    input.read(contents.data(), static_cast<std::streamsize>(size));
    if (!input) throw RuntimeError(fmt::format("{}: cannot be read", bundle.string()));
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
