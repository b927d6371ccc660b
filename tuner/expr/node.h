#pragma once
// Private to tuner/expr: the parsed tree shared by the parser, the printer and the evaluator.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/expr/expression.h"

namespace kernlathe::expr {

// What evaluation passes around instead of Value: trivially copyable, so it travels in registers and
// evaluation never allocates. A string points at a literal's text or at a slot's string, both of which
// outlive one evaluation.
struct Scalar {
  enum class Kind : std::uint8_t { integer, real, boolean, string };
  // No default member values: evaluation keeps an uninitialized stack of these, filled only through of_*().
  Kind kind;
  union {
    std::int64_t integer;
    double real;
    bool boolean;
    const std::string* string;
  };

  static Scalar of_integer(std::int64_t value) {
    Scalar scalar;
    scalar.kind = Kind::integer;
    scalar.integer = value;
    return scalar;
  }
  static Scalar of_real(double value) {
    Scalar scalar;
    scalar.kind = Kind::real;
    scalar.real = value;
    return scalar;
  }
  static Scalar of_boolean(bool value) {
    Scalar scalar;
    scalar.kind = Kind::boolean;
    scalar.boolean = value;
    return scalar;
  }
  static Scalar of_string(const std::string* value) {
    Scalar scalar;
    scalar.kind = Kind::string;
    scalar.string = value;
    return scalar;
  }
};

enum class Operation : std::uint8_t {
  literal,
  name,
  negate,
  unary_plus,
  logical_not,
  add,
  subtract,
  multiply,
  divide,
  floor_divide,
  modulo,
  power,
  logical_and,  // n-ary, short-circuit
  logical_or,   // n-ary, short-circuit
  compare,      // chained: children are the operands, comparisons the operators between them
  conditional,  // children: value if true, condition, value if false (in the order Python writes them)
  call,
  list,  // only as the right operand of in / not in
};

enum class Comparison : std::uint8_t { equal, not_equal, less, less_equal, greater, greater_equal, in, not_in };

enum class Function : std::uint8_t {
  min,
  max,
  abs,
  ceil_div,
  floor,
  ceil,
  log2,
  ilog2,
  is_pow2,
  to_int,
  to_float,
  round,
  sqrt,
};

struct Node;

// The flat form that evaluation runs: a stack machine whose arithmetic and comparison instructions read their
// operands straight from a slot or a constant where they can, so the common constraint shapes
// (`a * b <= 1024`, `x == 0 or ...`) take a handful of instructions. Calls and lists of non-constants run
// their subtree through the tree walker.
enum class Opcode : std::uint8_t {
  push,                  // left
  add,                   // left, right; also subtract ... power, in Operation's order
  subtract,
  multiply,
  divide,
  floor_divide,
  modulo,
  power,
  compare,               // left `comparison` right -> boolean
  compare_chain,         // pops right and left; false: pushes false and jumps to target; true: pushes right
  negate,                // left
  unary_plus,            // left
  logical_not,           // left
  jump_if_false_or_pop,  // top falsy: replace it by false and jump; else pop
  jump_if_true_or_pop,   // top truthy: replace it by true and jump; else pop
  to_boolean,            // top = truthy(top)
  pop_jump_if_false,
  jump,
  member_of_constants,   // left in constants[right, right + count); `comparison` is in or not_in
  subtree,               // push evaluate_tree(*node)
};

enum class OperandKind : std::uint8_t { stack, slot, constant };

struct Instruction {
  Opcode opcode = Opcode::push;
  Comparison comparison = Comparison::equal;
  OperandKind left_kind = OperandKind::stack;
  OperandKind right_kind = OperandKind::stack;
  int left = 0;
  int right = 0;
  int target = 0;  // jumps; the element count of member_of_constants
  const Node* node = nullptr;  // for messages and for subtree
};

// Deeper programs are left to the tree walker; the stack lives on the C++ stack.
inline constexpr int program_stack_capacity = 64;

struct Program {
  std::vector<Instruction> code;  // empty: evaluate the tree
  std::vector<Scalar> constants;
  int slot_count = 0;  // highest slot read + 1
  bool unbound = false;
};

struct Node {
  Operation operation = Operation::literal;
  Function function = Function::min;  // for call
  std::uint16_t depth = 1;            // height of the subtree; bounded so recursion cannot overflow the stack
  int slot = -1;                      // for name, once bound
  int offset = 0;                     // where the node starts in the expression text, for messages
  Scalar literal = Scalar::of_integer(0);  // for literal; a string literal's text is in `text`
  std::string text;                   // the identifier of a name, the contents of a string literal
  std::vector<Comparison> comparisons;
  std::vector<Node> children;
  Program program;  // only at the root; refers to this tree's nodes, so rebuilt whenever the tree is copied
};


// Deeper trees are refused at parse time: every pass over the tree is recursive.
inline constexpr int maximum_depth = 200;

struct FunctionInfo {
  std::string_view name;
  Function function;
  int minimum_arguments;
  int maximum_arguments;  // -1: any number
};
std::span<const FunctionInfo> functions();
const FunctionInfo& function_info(Function function);

Node parse_tree(std::string_view text, const SourceLocation& where);
std::string print_tree(const Node& node);
std::string print_literal(const Scalar& literal, const std::string& text);
const char* comparison_symbol(Comparison comparison);

// What evaluation needs to report a failure: the whole expression and the values it was given.
struct EvaluationContext {
  std::span<const Value> slots;
  const std::string* text;
  const SourceLocation* where;
};
Scalar evaluate_tree(const Node& node, const EvaluationContext& context);
// Builds root.program for the tree under root (again, after a copy or a bind).
void compile(Node& root);
Scalar evaluate_program(const Node& root, const EvaluationContext& context);

Scalar to_scalar(const Value& value);
Value to_value(const Scalar& scalar);
std::string scalar_type_name(const Scalar& scalar);
std::string scalar_to_string(const Scalar& scalar);
bool scalar_truthy(const Scalar& scalar);
bool scalar_equal(const Scalar& a, const Scalar& b);  // Python ==
std::string format_real(double value);              // shortest text that reads back as the same double

}  // namespace kernlathe::expr
