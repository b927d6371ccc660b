#pragma once
// Reading YAML with locations: the layer every part of the spec loader reads through. A Document turns yaml-cpp's
// marks into file:line:column, Fields reads one mapping (duplicate and unknown keys are errors, with a suggestion),
// and the read_* functions read one value of a known kind or fail with an InputError that names where and what.
// Internal to the spec loader (tuner/spec); other stages use spec_loader.h.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/common/error.h"
#include "tuner/expr/expression.h"

namespace kernlathe::spec_loading {

using expr::Expression;

// ---------------------------------------------------------------- text helpers

// " (did you mean 'x'?)" when a candidate is close to name, else "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);
std::string comma_list(const std::vector<std::string>& names);
bool contains(const std::vector<std::string>& names, std::string_view name);
// Letters, digits and _, not starting with a digit.
bool is_identifier(std::string_view text);
// Words of the expression language that cannot name a value.
bool is_reserved(std::string_view text);
// A whole decimal integer with an optional sign; nullopt for anything else, including overflow.
std::optional<std::int64_t> parse_integer_text(std::string_view text);
std::optional<double> parse_real_text(std::string_view text);
// InputError naming the file when it cannot be opened.
std::string read_whole_file(const std::filesystem::path& file);
// Why a path a spec names cannot be read as a file: "is a folder, not a file" or "does not exist".
std::string why_not_a_file(const std::filesystem::path& file);
// "<what> must be an integer, found '<text>'", or, for digits past 64 bits, that they are.
std::string not_an_integer(std::string_view what, std::string_view text);

// ---------------------------------------------------------------- YAML with locations

// One YAML text and the file it came from: turns node marks into file:line:column. Keeps a reference to text.
class Document {
 public:
  Document(const std::string& text, const std::filesystem::path& file) : text_(text), file_(file) {}

  // The parsed root; malformed YAML is an InputError at yaml-cpp's mark.
  YAML::Node root() const;
  const std::filesystem::path& file() const { return file_; }
  SourceLocation where(const YAML::Node& node) const;
  // Where the first character of a scalar's text is: one past the opening quote of a quoted scalar, so an
  // expression's own column offsets land on the right character.
  SourceLocation text_start(const YAML::Node& node) const;
  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const;

 private:
  const std::string& text_;
  std::filesystem::path file_;
};

// 'text' for a scalar, "a list", "a mapping" or "nothing": for messages.
std::string describe(const YAML::Node& node);

// A scalar as YAML 1.2's core schema reads it when plain; quoted scalars are always strings.
struct ScalarValue {
  enum class Kind { null, boolean, integer, real, string } kind = Kind::null;
  std::string text;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
};
ScalarValue classify(const YAML::Node& node);

// The keys of one mapping, in document order, checked for duplicates. A null node (a key with nothing after
// the colon) reads as an empty mapping, so `loader:` and `loader: {}` mean the same.
class Fields {
 public:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  Fields(const Document& document, const YAML::Node& node, std::string what);

  // Unknown keys are an InputError at the key, with the closest known key and the list of known ones.
  void allow_only(std::initializer_list<const char*> keys) const;
  std::optional<YAML::Node> find(std::string_view key) const;
  const Entry* find_entry(std::string_view key) const;
  // InputError at the mapping when the key is absent.
  YAML::Node require(std::string_view key) const;

  const std::vector<Entry>& entries() const { return entries_; }
  const YAML::Node& node() const { return node_; }

 private:
  const Document& document_;
  YAML::Node node_;
  std::string what_;
  std::vector<Entry> entries_;
};

// ---------------------------------------------------------------- one value of a known kind
// `what` names the value in messages ("parameter 'BLOCK' default"); every failure is at the node.

std::vector<YAML::Node> read_list(const Document& document, const YAML::Node& node, std::string_view what);
std::string read_text(const Document& document, const YAML::Node& node, std::string_view what);
// An identifier that is not a word of the expression language.
std::string read_name(const Document& document, const YAML::Node& node, std::string_view what);
std::int64_t read_integer(const Document& document, const YAML::Node& node, std::string_view what);
double read_number(const Document& document, const YAML::Node& node, std::string_view what);
bool read_bool(const Document& document, const YAML::Node& node, std::string_view what);
// One of a fixed set of words, with a suggestion when it is close to one.
std::string read_choice(const Document& document, const YAML::Node& node, std::string_view what,
                        const std::vector<std::string>& choices);
// YAML reads `0` and `true` as numbers and booleans; an expression field takes them as expression text.
Expression read_expression(const Document& document, const YAML::Node& node, std::string_view what);
// Expressions listed in [ ]: YAML ends a plain item at each comma, so `[ceil_div(N, 256)]` arrives as two
// broken items; that is reported as such instead of as the parser's confusion about `ceil_div(N`.
std::vector<Expression> read_expression_list(const Document& document, const YAML::Node& node,
                                             const std::string& what);

}  // namespace kernlathe::spec_loading
