#include "tuner/spec/python_list.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kernlathe {
namespace {

using expr::Value;

constexpr std::size_t maximum_values = 1'000'000;

constexpr std::string_view forms =
    "a list is written [a, b, ...], (a, b, ...), range(...), list(...), tuple(...), "
    "[EXPR for NAME in LIST] (optionally with `if CONDITION`) or LIST + LIST";

[[noreturn]] void not_understood(std::string_view part, std::string_view why) {
  throw InputError(fmt::format("'{}' is not understood: {}; {}", part, why, forms));
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool is_identifier_character(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Walks text once, calling visit(index) for every character outside string literals at bracket depth 0. Throws on
// unbalanced brackets or an unclosed string, so every caller sees a well-formed text.
template <typename Visit>
void scan_top_level(std::string_view text, Visit visit) {
  std::string closers;  // the closing brackets expected, innermost last
  char quote = 0;
  for (std::size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (quote != 0) {
      if (c == '\\')
        ++index;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      closers.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      continue;
    }
    if (c == ')' || c == ']' || c == '}') {
      if (closers.empty() || closers.back() != c)
        not_understood(text, fmt::format("'{}' at offset {} closes nothing that is open", c, index));
      closers.pop_back();
      continue;
    }
    if (closers.empty()) visit(index);
  }
  if (quote != 0) not_understood(text, "a string is not closed");
  if (!closers.empty()) not_understood(text, fmt::format("'{}' is missing", closers.back()));
}

// The index of the bracket that closes the one at `open`, or npos when it is unbalanced.
std::size_t matching_close(std::string_view text, std::size_t open) {
  int depth = 0;
  char quote = 0;
  for (std::size_t index = open; index < text.size(); ++index) {
    const char c = text[index];
    if (quote != 0) {
      if (c == '\\')
        ++index;
      else if (c == quote)
        quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
      return index;
    }
  }
  return std::string_view::npos;
}

std::vector<std::string_view> split_top_level(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  scan_top_level(text, [&](std::size_t index) {
    if (text[index] != separator) return;
    parts.push_back(text.substr(start, index - start));
    start = index + 1;
  });
  parts.push_back(text.substr(start));
  return parts;
}

// Positions of the whole word `word` at bracket depth 0, outside strings.
std::vector<std::size_t> top_level_words(std::string_view text, std::string_view word) {
  std::vector<std::size_t> positions;
  scan_top_level(text, [&](std::size_t index) {
    if (text.compare(index, word.size(), word) != 0) return;
    const bool starts = index == 0 || !is_identifier_character(text[index - 1]);
    const std::size_t end = index + word.size();
    const bool ends = end >= text.size() || !is_identifier_character(text[end]);
    if (starts && ends) positions.push_back(index);
  });
  return positions;
}

Value evaluate_constant(std::string_view text) {
  try {
    return expr::Expression::parse(trim(text)).evaluate(std::map<std::string, Value>{});
  } catch (const InputError& error) {
    not_understood(trim(text), error.what());
  }
}

std::int64_t integer_argument(std::string_view text) {
  const Value value = evaluate_constant(text);
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  not_understood(trim(text), fmt::format("range() takes integers; this is a {}", expr::type_name(value)));
}

void append_checked(std::vector<Value>& values, Value value) {
  if (values.size() >= maximum_values)
    throw InputError(fmt::format("the list has more than {} values", maximum_values));
  values.push_back(std::move(value));
}

std::vector<Value> evaluate_list(std::string_view text);

std::vector<Value> evaluate_range(std::string_view whole, std::string_view arguments_text) {
  std::vector<std::string_view> arguments = split_top_level(arguments_text, ',');
  if (arguments.size() > 3 || trim(arguments.front()).empty()) not_understood(whole, "range() takes 1 to 3 arguments");
  std::int64_t start = 0;
  std::int64_t stop = 0;
  std::int64_t step = 1;
  if (arguments.size() == 1) {
    stop = integer_argument(arguments[0]);
  } else {
    start = integer_argument(arguments[0]);
    stop = integer_argument(arguments[1]);
    if (arguments.size() == 3) step = integer_argument(arguments[2]);
  }
  if (step == 0) not_understood(whole, "range() step must not be zero");
  std::vector<Value> values;
  for (std::int64_t value = start; step > 0 ? value < stop : value > stop; value += step) {
    append_checked(values, Value{value});
    if ((step > 0 && value > INT64_MAX - step) || (step < 0 && value < INT64_MIN - step)) break;
  }
  return values;
}

// ELEMENT for NAME in ITERABLE [if CONDITION]
std::vector<Value> evaluate_comprehension(std::string_view whole, std::string_view content) {
  const std::vector<std::size_t> fors = top_level_words(content, "for");
  if (fors.size() != 1) not_understood(whole, "a comprehension with more than one `for` is not supported");
  const std::string_view element_text = trim(content.substr(0, fors[0]));
  std::string_view rest = trim(content.substr(fors[0] + 3));
  std::size_t name_end = 0;
  while (name_end < rest.size() && is_identifier_character(rest[name_end])) ++name_end;
  const std::string name(rest.substr(0, name_end));
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())))
    not_understood(whole, "`for` must be followed by one variable name");
  rest = trim(rest.substr(name_end));
  if (!rest.starts_with("in") || (rest.size() > 2 && is_identifier_character(rest[2])))
    not_understood(whole, fmt::format("expected `in` after `for {}`", name));
  rest = rest.substr(2);
  std::string_view iterable_text = rest;
  std::string_view condition_text;
  const std::vector<std::size_t> ifs = top_level_words(rest, "if");
  if (ifs.size() > 1) not_understood(whole, "a comprehension takes at most one `if`");
  if (ifs.size() == 1) {
    iterable_text = rest.substr(0, ifs[0]);
    condition_text = trim(rest.substr(ifs[0] + 2));
  }
  if (element_text.empty()) not_understood(whole, "the comprehension has no element expression before `for`");

  expr::Scope scope;
  scope.add(name);
  auto compile = [&](std::string_view text) {
    try {
      expr::Expression expression = expr::Expression::parse(text);
      expression.bind(scope);
      return expression;
    } catch (const InputError& error) {
      not_understood(text, error.what());
    }
  };
  const expr::Expression element = compile(element_text);
  std::optional<expr::Expression> condition;
  if (!condition_text.empty()) condition = compile(condition_text);

  std::vector<Value> values;
  for (Value& item : evaluate_list(iterable_text)) {
    const std::array<Value, 1> slots{std::move(item)};
    try {
      if (condition && !condition->evaluate_bool(slots)) continue;
      append_checked(values, element.evaluate(slots));
    } catch (const expr::EvaluationError& error) {
      not_understood(whole, fmt::format("with {} = {}: {}", name, expr::to_string(slots[0]), error.what()));
    }
  }
  return values;
}

std::vector<Value> evaluate_literal(std::string_view content) {
  std::vector<Value> values;
  if (trim(content).empty()) return values;
  std::vector<std::string_view> parts = split_top_level(content, ',');
  if (parts.size() > 1 && trim(parts.back()).empty()) parts.pop_back();  // a trailing comma, as Python allows
  for (std::string_view part : parts) {
    if (trim(part).empty()) not_understood(content, "an element is empty (two commas in a row?)");
    append_checked(values, evaluate_constant(part));
  }
  return values;
}

// One list form without a top-level `+`.
std::vector<Value> evaluate_term(std::string_view text) {
  text = trim(text);
  if (text.empty()) not_understood(text, "the text is empty");
  const char first = text.front();
  if (first == '[' || first == '(') {
    if (matching_close(text, 0) != text.size() - 1) not_understood(text, "text follows the closing bracket");
    const std::string_view content = text.substr(1, text.size() - 2);
    if (!top_level_words(content, "for").empty()) return evaluate_comprehension(text, content);
    // (x) is x in Python; (x,) and [x] are sequences.
    if (first == '(' && split_top_level(content, ',').size() == 1 && !trim(content).empty())
      return evaluate_list(content);
    return evaluate_literal(content);
  }
  std::size_t name_end = 0;
  while (name_end < text.size() && (is_identifier_character(text[name_end]) || text[name_end] == '.')) ++name_end;
  const std::string_view function = text.substr(0, name_end);
  const std::size_t open = text.find_first_not_of(" \t", name_end);
  if (function.empty() || open == std::string_view::npos || text[open] != '(')
    not_understood(text, "this is not a list");
  if (matching_close(text, open) != text.size() - 1) not_understood(text, "text follows the closing parenthesis");
  const std::string_view arguments = text.substr(open + 1, text.size() - open - 2);
  if (function == "range") return evaluate_range(text, arguments);
  if (function == "list" || function == "tuple") {
    if (trim(arguments).empty()) return {};
    if (!top_level_words(arguments, "for").empty()) return evaluate_comprehension(text, arguments);
    return evaluate_list(arguments);
  }
  not_understood(text, fmt::format("'{}' is not one of range, list, tuple", function));
}

std::vector<Value> evaluate_list(std::string_view text) {
  std::vector<std::string_view> terms = split_top_level(trim(text), '+');
  if (terms.size() == 1) return evaluate_term(terms[0]);
  std::vector<Value> values;
  for (std::string_view term : terms)
    for (Value& value : evaluate_term(term)) append_checked(values, std::move(value));
  return values;
}

}  // namespace

std::vector<expr::Value> evaluate_python_list(std::string_view text) { return evaluate_list(text); }

}  // namespace kernlathe
