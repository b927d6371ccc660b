// Public face of the expression language: values, scopes, Expression (parse, print, bind, evaluate) and
// closest_match. The grammar is in parser.cpp, the semantics in evaluator.cpp.

#include "tuner/expr/expression.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "tuner/expr/node.h"

namespace kernlathe::expr {

// ---------------------------------------------------------------- values

std::string format_real(double value) {
  std::string text = fmt::format("{}", value);
  // fmt writes 2.0 as "2"; Python and our parser need the point to keep it a float.
  if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
  return text;
}

std::string scalar_to_string(const Scalar& scalar) {
  switch (scalar.kind) {
    case Scalar::Kind::integer: return std::to_string(scalar.integer);
    case Scalar::Kind::real: return format_real(scalar.real);
    case Scalar::Kind::boolean: return scalar.boolean ? "true" : "false";
    case Scalar::Kind::string: return *scalar.string;
  }
  return "";
}

std::string scalar_type_name(const Scalar& scalar) {
  switch (scalar.kind) {
    case Scalar::Kind::integer: return "integer";
    case Scalar::Kind::real: return "float";
    case Scalar::Kind::boolean: return "boolean";
    case Scalar::Kind::string: return "string";
  }
  return "";
}

std::string to_string(const Value& value) { return scalar_to_string(to_scalar(value)); }
std::string type_name(const Value& value) { return scalar_type_name(to_scalar(value)); }
bool truthy(const Value& value) { return scalar_truthy(to_scalar(value)); }
bool operator_equal(const Value& a, const Value& b) { return scalar_equal(to_scalar(a), to_scalar(b)); }

// ---------------------------------------------------------------- scope

int Scope::add(const std::string& name) {
  auto found = slots_.find(name);
  if (found != slots_.end()) return found->second;
  int slot = static_cast<int>(names_.size());
  names_.push_back(name);
  slots_.emplace(name, slot);
  return slot;
}

int Scope::slot_of(std::string_view name) const {
  auto found = slots_.find(name);
  return found == slots_.end() ? -1 : found->second;
}

// ---------------------------------------------------------------- printing

namespace {

// Python's precedence levels, lowest first; the printer adds parentheses where a child binds more loosely
// than its position requires.
enum Precedence : int {
  conditional_level = 1,
  or_level,
  and_level,
  not_level,
  comparison_level,
  sum_level,
  term_level,
  unary_level,
  power_level,
  primary_level,
};

std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    switch (c) {
      case '\\': quoted += "\\\\"; break;
      case '\'': quoted += "\\'"; break;
      case '\n': quoted += "\\n"; break;
      case '\t': quoted += "\\t"; break;
      case '\r': quoted += "\\r"; break;
      default: quoted += c;
    }
  }
  return quoted + "'";
}

struct Printed {
  std::string text;
  int precedence;
};

Printed print_literal_with_precedence(const Scalar& literal, const std::string& text) {
  switch (literal.kind) {
    case Scalar::Kind::integer:
      if (literal.integer == std::numeric_limits<std::int64_t>::min()) {
        return {"(-9223372036854775807 - 1)", primary_level};  // the literal 9223372036854775808 does not fit
      }
      return {std::to_string(literal.integer), literal.integer < 0 ? unary_level : primary_level};
    case Scalar::Kind::real:
      if (std::isnan(literal.real)) return {"float('nan')", primary_level};
      if (std::isinf(literal.real)) {
        return literal.real > 0 ? Printed{"float('inf')", primary_level} : Printed{"-float('inf')", unary_level};
      }
      return {format_real(literal.real), std::signbit(literal.real) ? unary_level : primary_level};
    case Scalar::Kind::boolean:
      return {literal.boolean ? "True" : "False", primary_level};
    case Scalar::Kind::string:
      return {quote(text), primary_level};
  }
  return {"", primary_level};
}

std::string print(const Node& node, int minimum);

Printed print_node(const Node& node) {
  auto binary = [&](const char* symbol, int level, int left_minimum, int right_minimum) {
    return Printed{fmt::format("{} {} {}", print(node.children[0], left_minimum), symbol,
                               print(node.children[1], right_minimum)),
                   level};
  };
  auto join = [&](const char* separator, int minimum) {
    std::string text;
    for (std::size_t i = 0; i < node.children.size(); ++i) {
      if (i > 0) text += separator;
      text += print(node.children[i], minimum);
    }
    return text;
  };
  switch (node.operation) {
    case Operation::literal: return print_literal_with_precedence(node.literal, node.text);
    case Operation::name: return {node.text, primary_level};
    case Operation::negate: return {"-" + print(node.children[0], unary_level), unary_level};
    case Operation::unary_plus: return {"+" + print(node.children[0], unary_level), unary_level};
    case Operation::logical_not: return {"not " + print(node.children[0], not_level), not_level};
    case Operation::add: return binary("+", sum_level, sum_level, term_level);
    case Operation::subtract: return binary("-", sum_level, sum_level, term_level);
    case Operation::multiply: return binary("*", term_level, term_level, unary_level);
    case Operation::divide: return binary("/", term_level, term_level, unary_level);
    case Operation::floor_divide: return binary("//", term_level, term_level, unary_level);
    case Operation::modulo: return binary("%", term_level, term_level, unary_level);
    // -a ** b is -(a ** b) and a ** b ** c is a ** (b ** c): the base must be a primary, the exponent may be
    // unary or another power.
    case Operation::power: return binary("**", power_level, primary_level, unary_level);
    case Operation::logical_and: return {join(" and ", not_level), and_level};
    case Operation::logical_or: return {join(" or ", and_level), or_level};
    case Operation::compare: {
      std::string text = print(node.children[0], sum_level);
      for (std::size_t i = 0; i < node.comparisons.size(); ++i) {
        text += fmt::format(" {} {}", comparison_symbol(node.comparisons[i]), print(node.children[i + 1], sum_level));
      }
      return {text, comparison_level};
    }
    case Operation::conditional:
      return {fmt::format("{} if {} else {}", print(node.children[0], or_level), print(node.children[1], or_level),
                          print(node.children[2], conditional_level)),
              conditional_level};
    case Operation::call:
      return {fmt::format("{}({})", function_info(node.function).name, join(", ", conditional_level)), primary_level};
    case Operation::list: return {"[" + join(", ", conditional_level) + "]", primary_level};
  }
  return {"", primary_level};
}

std::string print(const Node& node, int minimum) {
  Printed printed = print_node(node);
  return printed.precedence < minimum ? "(" + printed.text + ")" : printed.text;
}

void collect_names(const Node& node, std::set<std::string>& names) {
  if (node.operation == Operation::name) names.insert(node.text);
  for (const auto& child : node.children) collect_names(child, names);
}

// Resolves names depth-first, left to right, so the first unknown name reported is the first in the text.
void resolve(Node& node, const Scope& scope, const std::string& text, const SourceLocation& where) {
  if (node.operation == Operation::name) {
    node.slot = scope.slot_of(node.text);
    if (node.slot < 0) {
      std::string suggestion = closest_match(node.text, scope.names());
      std::string hint;
      if (!suggestion.empty()) {
        hint = fmt::format("; did you mean '{}'?", suggestion);
      } else if (scope.size() == 0) {
        hint = "; no names are defined here";
      } else if (scope.size() <= 20) {
        hint = fmt::format("; known names are {}", fmt::join(scope.names(), ", "));
      }
      throw InputError(where, fmt::format("unknown name '{}' in '{}'{}", node.text, text, hint));
    }
  }
  for (auto& child : node.children) resolve(child, scope, text, where);
}

void forget_slots(Node& node) {
  node.slot = -1;
  for (auto& child : node.children) forget_slots(child);
}

}  // namespace

std::string print_tree(const Node& node) { return print(node, conditional_level); }

std::string print_literal(const Scalar& literal, const std::string& text) {
  return print_literal_with_precedence(literal, text).text;
}

// ---------------------------------------------------------------- Expression

Expression Expression::parse(std::string_view text, const SourceLocation& where) {
  Expression expression;
  auto root = std::make_shared<Node>(parse_tree(text, where));
  compile(*root);
  expression.root_ = std::move(root);
  expression.text_ = std::string(text);
  expression.where_ = where;
  return expression;
}

Expression Expression::parse(std::string_view text, const Scope& scope, const SourceLocation& where) {
  Expression expression;
  auto root = std::make_shared<Node>(parse_tree(text, where));
  expression.text_ = std::string(text);
  expression.where_ = where;
  resolve(*root, scope, expression.text_, where);
  compile(*root);
  expression.root_ = std::move(root);
  expression.bound_ = true;
  return expression;
}

Expression Expression::constant(Value value) {
  auto node = std::make_shared<Node>();
  node->literal = to_scalar(value);
  if (const auto* text = std::get_if<std::string>(&value)) {
    node->text = *text;
    node->literal = Scalar::of_string(nullptr);  // a literal's string lives in the node, see evaluate_tree
  }
  compile(*node);
  Expression expression;
  expression.text_ = print_tree(*node);
  expression.root_ = std::move(node);
  expression.bound_ = true;  // nothing to resolve
  return expression;
}

std::string Expression::to_string() const { return root_ ? print_tree(*root_) : ""; }

std::vector<std::string> Expression::names() const {
  std::set<std::string> names;
  if (root_) collect_names(*root_, names);
  return {names.begin(), names.end()};
}

void Expression::bind(const Scope& scope) {
  if (!root_) return;
  // A copy, so that copies of this Expression bound to other scopes keep their own slots. A tree no copy shares (parse
  // then bind, the usual way) is bound where it is: copying it was a quarter of parsing and binding a kernel
  // description's expressions (benchmarks/bench_runtime_plan.cpp).
  const bool in_place = root_.use_count() == 1;
  std::shared_ptr<Node> bound_root = in_place ? std::const_pointer_cast<Node>(root_) : std::make_shared<Node>(*root_);
  try {
    resolve(*bound_root, scope, text_, where_);
  } catch (...) {
    if (in_place) forget_slots(*bound_root);  // as it was parsed: a failed bind changes nothing
    throw;
  }
  compile(*bound_root);
  root_ = std::move(bound_root);
  bound_ = true;
}

Value Expression::evaluate(std::span<const Value> slots) const {
  if (!root_) throw TunerError("evaluating an empty expression");
  EvaluationContext context{slots, &text_, &where_};
  return to_value(evaluate_program(*root_, context));
}

std::int64_t Expression::evaluate_integer(std::span<const Value> slots) const {
  if (!root_) throw TunerError("evaluating an empty expression");
  EvaluationContext context{slots, &text_, &where_};
  Scalar result = evaluate_program(*root_, context);
  switch (result.kind) {
    case Scalar::Kind::integer: return result.integer;
    case Scalar::Kind::boolean: return result.boolean;
    case Scalar::Kind::real:
      // 262144 / 32 is 8192.0 in Python; a grid size written that way is still a whole number.
      if (result.real == std::floor(result.real) && result.real >= -9223372036854775808.0 &&
          result.real < 9223372036854775808.0) {
        return static_cast<std::int64_t>(result.real);
      }
      break;
    case Scalar::Kind::string:
      break;
  }
  throw EvaluationError(where_, fmt::format("evaluating '{}': expected an integer, got {} {}", text_,
                                            scalar_type_name(result), scalar_to_string(result)));
}

double Expression::evaluate_number(std::span<const Value> slots) const {
  if (!root_) throw TunerError("evaluating an empty expression");
  EvaluationContext context{slots, &text_, &where_};
  Scalar result = evaluate_program(*root_, context);
  switch (result.kind) {
    case Scalar::Kind::integer: return static_cast<double>(result.integer);
    case Scalar::Kind::boolean: return result.boolean ? 1.0 : 0.0;
    case Scalar::Kind::real: return result.real;
    case Scalar::Kind::string: break;
  }
  throw EvaluationError(where_, fmt::format("evaluating '{}': expected a number, got string '{}'", text_,
                                            *result.string));
}

bool Expression::evaluate_bool(std::span<const Value> slots) const {
  if (!root_) throw TunerError("evaluating an empty expression");
  EvaluationContext context{slots, &text_, &where_};
  return scalar_truthy(evaluate_program(*root_, context));
}

Value Expression::evaluate(const std::map<std::string, Value>& env) const {
  Scope scope;
  std::vector<Value> values;
  values.reserve(env.size());
  for (const auto& [name, value] : env) {
    scope.add(name);
    values.push_back(value);
  }
  Expression bound = *this;
  bound.bind(scope);
  return bound.evaluate(values);
}

// ---------------------------------------------------------------- suggestions

namespace {

// Levenshtein distance in which swapping two adjacent characters also counts as one edit (optimal string
// alignment): BLOKC is one slip away from BLOCK, not two.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before_previous(b.size() + 1);
  std::vector<std::size_t> previous(b.size() + 1);
  std::vector<std::size_t> current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before_previous[j - 2] + 1);
      }
    }
    std::swap(before_previous, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string closest_match(std::string_view name, const std::vector<std::string>& candidates) {
  std::size_t limit = std::max<std::size_t>(1, name.size() / 3);
  std::size_t best_distance = limit + 1;
  const std::string* best = nullptr;
  for (const auto& candidate : candidates) {
    std::size_t distance = edit_distance(name, candidate);
    // block_size vs BLOCK_SIZE is one slip of the shift key, not ten.
    if (equal_ignoring_case(name, candidate)) distance = std::min<std::size_t>(distance, 1);
    if (distance < best_distance) {
      best_distance = distance;
      best = &candidate;
    }
  }
  return best == nullptr ? "" : *best;
}

}  // namespace kernlathe::expr
