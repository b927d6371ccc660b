#pragma once
// The expression language of specs and spaces: Python-like on purpose, so constraints published by the
// autotuning community (T1 files) read as they are.
//
//   literals     17  2.5  1e-3  True  False  "row"  'row'
//   arithmetic   + - * / // % **   (/ is true division; // and % floor like Python, also on negatives)
//   comparison   == != < <= > >=   (chained: 32 <= a * b <= 1024)
//   logic        and or not        (short-circuit; result is a boolean)
//   conditional  a if cond else b
//   calls        min max abs ceil_div floor ceil log2 is_pow2 int float round sqrt
//   membership   x in [1, 2, 4]    x not in (1, 2)
//
// An Expression is parsed once into a tree, can be printed back (to_string), lists the names it uses, is
// bound to slots of a Scope (unknown names fail here, before any enumeration) and is then evaluated many
// times against an array of values without allocating for numeric expressions.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tuner/common/error.h"

namespace kernlathe::expr {

// int64 for integers and booleans-as-numbers, double for reals, bool, string for enumeration values.
using Value = std::variant<std::int64_t, double, bool, std::string>;

std::string to_string(const Value& value);  // 3, 2.5, true, row (no quotes)
std::string type_name(const Value& value);  // "integer", "float", "boolean", "string"
bool truthy(const Value& value);            // Python truthiness
bool operator_equal(const Value& a, const Value& b);  // Python ==: 1 == 1.0 == True

// Evaluation failed for a particular set of values: division by zero, a type error, log2 of a negative.
class EvaluationError : public InputError {
 public:
  using InputError::InputError;
};

// Maps names to slot indices. Slots are assigned in the order names are added.
class Scope {
 public:
  int add(const std::string& name);               // returns the slot; adding a name twice returns the same slot
  int slot_of(std::string_view name) const;       // -1 when unknown
  const std::vector<std::string>& names() const { return names_; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::map<std::string, int, std::less<>> slots_;
};

struct Node;  // the parsed tree; defined in expression.cpp

class Expression {
 public:
  Expression() = default;

  // Parses text. Syntax errors throw InputError at `where` shifted by the column inside text
  // (where.column is the column of the expression's first character in its file; 0 if unknown).
  static Expression parse(std::string_view text, const SourceLocation& where = {});
  // parse then bind in one step, with the program compiled once instead of twice: the same expression, the same
  // errors in the same order (syntax first, then unknown names).
  static Expression parse(std::string_view text, const Scope& scope, const SourceLocation& where = {});
  static Expression constant(Value value);

  bool empty() const { return root_ == nullptr; }
  const std::string& text() const { return text_; }  // as written
  const SourceLocation& where() const { return where_; }
  std::string to_string() const;                       // canonical form, parses back to an equal tree

  // Identifiers this expression reads (function names excluded), sorted, without duplicates.
  std::vector<std::string> names() const;

  // Resolves every name to a slot of scope. Unknown names throw InputError at this expression's location,
  // with a "did you mean" suggestion drawn from scope when one is close.
  void bind(const Scope& scope);
  bool bound() const { return bound_; }

  // Evaluates a bound expression. slots[i] holds the value of scope name i.
  Value evaluate(std::span<const Value> slots) const;
  std::int64_t evaluate_integer(std::span<const Value> slots) const;  // EvaluationError unless integral
  double evaluate_number(std::span<const Value> slots) const;
  bool evaluate_bool(std::span<const Value> slots) const;             // Python truthiness

  // Convenience for tests and one-off use: binds against env's names and evaluates.
  Value evaluate(const std::map<std::string, Value>& env) const;

 private:
  std::string text_;
  SourceLocation where_;
  std::shared_ptr<const Node> root_;
  bool bound_ = false;
};

// Closest candidate to `name` by edit distance, or "" when none is close enough to suggest.
std::string closest_match(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace kernlathe::expr
