// Evaluation of a bound tree with Python's semantics. The hot path (integers and comparisons on slot values)
// is a switch per node on trivially copyable Scalars; everything that builds a message is kept out of line.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include <fmt/format.h>

#include "tuner/expr/node.h"

namespace kernlathe::expr {

namespace {

using Kind = Scalar::Kind;

inline bool truthy_inline(const Scalar& scalar) {
  switch (scalar.kind) {
    case Kind::integer: return scalar.integer != 0;
    case Kind::real: return scalar.real != 0;
    case Kind::boolean: return scalar.boolean;
    case Kind::string: return !scalar.string->empty();
  }
  return false;
}

[[gnu::always_inline]] inline Scalar load(const Value& value) {
  switch (value.index()) {
    case 0: return Scalar::of_integer(*std::get_if<std::int64_t>(&value));
    case 1: return Scalar::of_real(*std::get_if<double>(&value));
    case 2: return Scalar::of_boolean(*std::get_if<bool>(&value));
    default: return Scalar::of_string(std::get_if<std::string>(&value));
  }
}

bool is_integral(const Scalar& scalar) { return scalar.kind == Kind::integer || scalar.kind == Kind::boolean; }
std::int64_t as_integer(const Scalar& scalar) {
  return scalar.kind == Kind::boolean ? static_cast<std::int64_t>(scalar.boolean) : scalar.integer;
}
double as_real(const Scalar& scalar) {
  return scalar.kind == Kind::real ? scalar.real : static_cast<double>(as_integer(scalar));
}

void collect_names(const Node& node, std::set<std::pair<std::string, int>>& names) {
  if (node.operation == Operation::name) names.emplace(node.text, node.slot);
  for (const auto& child : node.children) collect_names(child, names);
}

// "'10 // x' with x = 0": the failing part and the values it read, so that a user can tell which
// configuration broke which part of a long constraint.
[[noreturn]] [[gnu::cold]] [[gnu::noinline]] void fail(const Node& node, const EvaluationContext& context,
                                                        const std::string& problem) {
  std::set<std::pair<std::string, int>> names;
  collect_names(node, names);
  std::string values;
  for (const auto& [name, slot] : names) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= context.slots.size()) continue;
    values += fmt::format("{}{} = {}", values.empty() ? " with " : ", ", name, to_string(context.slots[slot]));
  }
  std::string part = print_tree(node);
  std::string message = part == *context.text
                            ? fmt::format("evaluating '{}'{}: {}", *context.text, values, problem)
                            : fmt::format("evaluating '{}': {} in '{}'{}", *context.text, problem, part, values);
  throw EvaluationError(*context.where, message);
}

[[noreturn]] void fail_operand_types(const Node& node, const EvaluationContext& context, std::string_view operation,
                                     const Scalar& left, const Scalar& right) {
  fail(node, context, fmt::format("unsupported operand types for {}: {} and {}", operation, scalar_type_name(left),
                                  scalar_type_name(right)));
}

[[noreturn]] void fail_operand_type(const Node& node, const EvaluationContext& context, std::string_view operation,
                                    const Scalar& operand) {
  fail(node, context, fmt::format("bad operand type for {}: {}", operation, scalar_type_name(operand)));
}

std::int64_t real_to_integer(double value, const Node& node, const EvaluationContext& context) {
  if (std::isnan(value)) fail(node, context, "cannot convert float NaN to integer");
  if (std::isinf(value)) fail(node, context, "cannot convert float infinity to integer");
  // 2^63 is exactly representable; every double below it and at or above -2^63 fits.
  if (value >= 9223372036854775808.0 || value < -9223372036854775808.0) {
    fail(node, context, fmt::format("{} does not fit in a 64-bit integer", value));
  }
  return static_cast<std::int64_t>(value);
}

// Python's int // int: rounds toward negative infinity.
std::int64_t floor_divide_integers(std::int64_t a, std::int64_t b, const Node& node, const EvaluationContext& context) {
  if (b == 0) fail(node, context, "integer division by zero");
  if (a == std::numeric_limits<std::int64_t>::min() && b == -1) fail(node, context, "integer overflow");
  std::int64_t quotient = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

// Python's int % int: the result takes the sign of the divisor.
std::int64_t modulo_integers(std::int64_t a, std::int64_t b, const Node& node, const EvaluationContext& context) {
  if (b == 0) fail(node, context, "integer modulo by zero");
  if (b == -1) return 0;  // also avoids INT64_MIN % -1, which traps
  std::int64_t remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

// Python's float divmod (Objects/floatobject.c): floor division and modulo that agree with each other.
double modulo_reals(double a, double b) {
  double remainder = std::fmod(a, b);
  if (remainder != 0) {
    if ((b < 0) != (remainder < 0)) remainder += b;
  } else {
    remainder = std::copysign(0.0, b);
  }
  return remainder;
}

double floor_divide_reals(double a, double b) {
  double remainder = std::fmod(a, b);
  double quotient = (a - remainder) / b;
  if (remainder != 0 && ((b < 0) != (remainder < 0))) quotient -= 1.0;
  if (quotient == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(quotient);
  if (quotient - floored > 0.5) floored += 1.0;
  return floored;
}

Scalar power(const Node& node, const Scalar& base, const Scalar& exponent, const EvaluationContext& context) {
  if (is_integral(base) && is_integral(exponent)) {
    std::int64_t a = as_integer(base);
    std::int64_t n = as_integer(exponent);
    if (n < 0) {
      if (a == 0) fail(node, context, "0 cannot be raised to a negative power");
      return Scalar::of_real(std::pow(static_cast<double>(a), static_cast<double>(n)));
    }
    std::int64_t result = 1;
    while (n > 0) {
      if ((n & 1) != 0 && __builtin_mul_overflow(result, a, &result)) fail(node, context, "integer overflow");
      n >>= 1;
      if (n > 0 && __builtin_mul_overflow(a, a, &a)) fail(node, context, "integer overflow");
    }
    return Scalar::of_integer(result);
  }
  double x = as_real(base);
  double y = as_real(exponent);
  if (x == 0 && y < 0) fail(node, context, "0.0 cannot be raised to a negative power");
  if (x < 0 && std::isfinite(y) && y != std::floor(y)) {
    fail(node, context, "a negative number raised to a fractional power is complex");
  }
  double result = std::pow(x, y);
  if (std::isinf(result) && std::isfinite(x) && std::isfinite(y)) fail(node, context, "float overflow");
  return Scalar::of_real(result);
}

Scalar arithmetic(const Node& node, const Scalar& left, const Scalar& right, const EvaluationContext& context) {
  static constexpr const char* symbols[] = {"+", "-", "*", "/", "//", "%", "**"};
  auto symbol = symbols[static_cast<int>(node.operation) - static_cast<int>(Operation::add)];
  if (left.kind == Kind::string || right.kind == Kind::string) fail_operand_types(node, context, symbol, left, right);
  if (node.operation == Operation::power) return power(node, left, right, context);
  if (is_integral(left) && is_integral(right)) {
    std::int64_t a = as_integer(left);
    std::int64_t b = as_integer(right);
    std::int64_t result = 0;
    switch (node.operation) {
      case Operation::add:
        if (__builtin_add_overflow(a, b, &result)) fail(node, context, "integer overflow");
        return Scalar::of_integer(result);
      case Operation::subtract:
        if (__builtin_sub_overflow(a, b, &result)) fail(node, context, "integer overflow");
        return Scalar::of_integer(result);
      case Operation::multiply:
        if (__builtin_mul_overflow(a, b, &result)) fail(node, context, "integer overflow");
        return Scalar::of_integer(result);
      case Operation::divide:
        if (b == 0) fail(node, context, "division by zero");
        return Scalar::of_real(static_cast<double>(a) / static_cast<double>(b));
      case Operation::floor_divide:
        return Scalar::of_integer(floor_divide_integers(a, b, node, context));
      case Operation::modulo:
        return Scalar::of_integer(modulo_integers(a, b, node, context));
      default:
        break;
    }
  }
  double a = as_real(left);
  double b = as_real(right);
  switch (node.operation) {
    case Operation::add: return Scalar::of_real(a + b);
    case Operation::subtract: return Scalar::of_real(a - b);
    case Operation::multiply: return Scalar::of_real(a * b);
    case Operation::divide:
      if (b == 0) fail(node, context, "division by zero");
      return Scalar::of_real(a / b);
    case Operation::floor_divide:
      if (b == 0) fail(node, context, "float floor division by zero");
      return Scalar::of_real(floor_divide_reals(a, b));
    case Operation::modulo:
      if (b == 0) fail(node, context, "float modulo by zero");
      return Scalar::of_real(modulo_reals(a, b));
    default:
      break;
  }
  fail(node, context, "internal error: not an arithmetic operation");
}

Scalar negate(const Node& node, const Scalar& operand, const EvaluationContext& context) {
  if (operand.kind == Kind::real) return Scalar::of_real(-operand.real);
  if (operand.kind == Kind::string) fail_operand_type(node, context, "unary -", operand);
  std::int64_t result = 0;
  if (__builtin_sub_overflow(std::int64_t{0}, as_integer(operand), &result)) fail(node, context, "integer overflow");
  return Scalar::of_integer(result);
}

Scalar unary_plus(const Node& node, const Scalar& operand, const EvaluationContext& context) {
  if (operand.kind == Kind::string) fail_operand_type(node, context, "unary +", operand);
  if (operand.kind == Kind::boolean) return Scalar::of_integer(operand.boolean);
  return operand;
}

bool scalars_equal(const Scalar& a, const Scalar& b) {
  if (a.kind == Kind::string || b.kind == Kind::string) {
    return a.kind == b.kind && *a.string == *b.string;
  }
  if (is_integral(a) && is_integral(b)) return as_integer(a) == as_integer(b);
  // long double holds every int64 and every double exactly, so 2**53 + 1 != 2.0**53 as in Python.
  long double x = a.kind == Kind::real ? a.real : static_cast<long double>(as_integer(a));
  long double y = b.kind == Kind::real ? b.real : static_cast<long double>(as_integer(b));
  return x == y;
}

bool compare(const Node& node, Comparison comparison, const Scalar& a, const Scalar& b,
             const EvaluationContext& context) {
  if (comparison == Comparison::equal) return scalars_equal(a, b);
  if (comparison == Comparison::not_equal) return !scalars_equal(a, b);
  int order = 0;
  bool unordered = false;
  if (a.kind == Kind::string || b.kind == Kind::string) {
    if (a.kind != b.kind) {
      fail(node, context, fmt::format("'{}' not supported between {} and {}", comparison_symbol(comparison),
                                      scalar_type_name(a), scalar_type_name(b)));
    }
    int result = a.string->compare(*b.string);
    order = result < 0 ? -1 : result > 0 ? 1 : 0;
  } else if (is_integral(a) && is_integral(b)) {
    std::int64_t x = as_integer(a);
    std::int64_t y = as_integer(b);
    order = x < y ? -1 : x > y ? 1 : 0;
  } else {
    long double x = a.kind == Kind::real ? a.real : static_cast<long double>(as_integer(a));
    long double y = b.kind == Kind::real ? b.real : static_cast<long double>(as_integer(b));
    unordered = std::isnan(x) || std::isnan(y);
    order = x < y ? -1 : x > y ? 1 : 0;
  }
  if (unordered) return false;
  switch (comparison) {
    case Comparison::less: return order < 0;
    case Comparison::less_equal: return order <= 0;
    case Comparison::greater: return order > 0;
    case Comparison::greater_equal: return order >= 0;
    default: return false;
  }
}

Scalar evaluate_compare(const Node& node, const EvaluationContext& context) {
  Scalar left = evaluate_tree(node.children[0], context);
  for (std::size_t i = 0; i < node.comparisons.size(); ++i) {
    Comparison comparison = node.comparisons[i];
    const Node& right_node = node.children[i + 1];
    if (comparison == Comparison::in || comparison == Comparison::not_in) {
      // Every element is evaluated, as Python builds the whole list before testing membership.
      bool found = false;
      for (const auto& element : right_node.children) {
        found = scalars_equal(left, evaluate_tree(element, context)) || found;
      }
      if (found != (comparison == Comparison::in)) return Scalar::of_boolean(false);
      continue;  // the parser allows nothing after a list
    }
    Scalar right = evaluate_tree(right_node, context);
    if (!compare(node, comparison, left, right, context)) return Scalar::of_boolean(false);
    left = right;
  }
  return Scalar::of_boolean(true);
}

std::string_view trim(std::string_view text) {
  auto first = text.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(" \t\n\r");
  return text.substr(first, last - first + 1);
}

Scalar string_to_integer(const Node& node, const std::string& text, const EvaluationContext& context) {
  std::string_view digits = trim(text);
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  std::int64_t value = 0;
  auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
    fail(node, context, fmt::format("invalid literal for int(): '{}'", text));
  }
  return Scalar::of_integer(value);
}

Scalar string_to_real(const Node& node, const std::string& text, const EvaluationContext& context) {
  std::string_view digits = trim(text);
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  double value = 0;
  auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
    fail(node, context, fmt::format("could not convert string to float: '{}'", text));
  }
  return Scalar::of_real(value);
}

Scalar call(const Node& node, const EvaluationContext& context) {
  const auto name = function_info(node.function).name;
  if (node.function == Function::min || node.function == Function::max) {
    Comparison better = node.function == Function::min ? Comparison::less : Comparison::greater;
    Scalar best = evaluate_tree(node.children[0], context);
    for (std::size_t i = 1; i < node.children.size(); ++i) {
      Scalar candidate = evaluate_tree(node.children[i], context);
      if (compare(node, better, candidate, best, context)) best = candidate;
    }
    return best;
  }
  if (node.function == Function::ceil_div) {
    Scalar numerator = evaluate_tree(node.children[0], context);
    Scalar denominator = evaluate_tree(node.children[1], context);
    if (numerator.kind == Kind::string || denominator.kind == Kind::string) {
      fail_operand_types(node, context, "ceil_div", numerator, denominator);
    }
    if (is_integral(numerator) && is_integral(denominator)) {
      std::int64_t a = as_integer(numerator);
      std::int64_t b = as_integer(denominator);
      if (b == 0) fail(node, context, "integer division by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) fail(node, context, "integer overflow");
      std::int64_t quotient = a / b;
      if (a % b != 0 && ((a < 0) == (b < 0))) ++quotient;
      return Scalar::of_integer(quotient);
    }
    double b = as_real(denominator);
    if (b == 0) fail(node, context, "division by zero");
    return Scalar::of_integer(real_to_integer(std::ceil(as_real(numerator) / b), node, context));
  }

  Scalar argument = evaluate_tree(node.children[0], context);
  if (node.function == Function::to_int && argument.kind == Kind::string) {
    return string_to_integer(node, *argument.string, context);
  }
  if (node.function == Function::to_float && argument.kind == Kind::string) {
    return string_to_real(node, *argument.string, context);
  }
  if (argument.kind == Kind::string) fail_operand_type(node, context, fmt::format("{}()", name), argument);
  bool integral = is_integral(argument);
  switch (node.function) {
    case Function::abs:
      if (integral) {
        std::int64_t value = as_integer(argument);
        if (value == std::numeric_limits<std::int64_t>::min()) fail(node, context, "integer overflow");
        return Scalar::of_integer(value < 0 ? -value : value);
      }
      return Scalar::of_real(std::fabs(argument.real));
    case Function::floor:
      if (integral) return Scalar::of_integer(as_integer(argument));
      return Scalar::of_integer(real_to_integer(std::floor(argument.real), node, context));
    case Function::ceil:
      if (integral) return Scalar::of_integer(as_integer(argument));
      return Scalar::of_integer(real_to_integer(std::ceil(argument.real), node, context));
    case Function::log2: {
      double value = as_real(argument);
      if (!(value > 0)) fail(node, context, fmt::format("math domain error: log2 of {}", scalar_to_string(argument)));
      return Scalar::of_real(std::log2(value));
    }
    case Function::ilog2: {
      if (integral) {
        std::int64_t value = as_integer(argument);
        if (value <= 0) fail(node, context, fmt::format("math domain error: ilog2 of {}", value));
        return Scalar::of_integer(63 - __builtin_clzll(static_cast<unsigned long long>(value)));
      }
      if (!(argument.real > 0)) {
        fail(node, context, fmt::format("math domain error: ilog2 of {}", scalar_to_string(argument)));
      }
      return Scalar::of_integer(real_to_integer(std::floor(std::log2(argument.real)), node, context));
    }
    case Function::is_pow2: {
      std::int64_t value = 0;
      if (integral) {
        value = as_integer(argument);
      } else {
        double real = argument.real;
        if (!(real >= 1 && real < 9223372036854775808.0) || real != std::floor(real)) return Scalar::of_boolean(false);
        value = static_cast<std::int64_t>(real);
      }
      return Scalar::of_boolean(value > 0 && (value & (value - 1)) == 0);
    }
    case Function::to_int:
      if (integral) return Scalar::of_integer(as_integer(argument));
      return Scalar::of_integer(real_to_integer(std::trunc(argument.real), node, context));
    case Function::to_float:
      return Scalar::of_real(as_real(argument));
    case Function::round:
      if (integral) return Scalar::of_integer(as_integer(argument));
      // nearbyint in the default rounding mode rounds half to even, as Python's round() does.
      return Scalar::of_integer(real_to_integer(std::nearbyint(argument.real), node, context));
    case Function::sqrt: {
      double value = as_real(argument);
      if (value < 0) fail(node, context, fmt::format("math domain error: sqrt of {}", scalar_to_string(argument)));
      return Scalar::of_real(std::sqrt(value));
    }
    default:
      break;
  }
  fail(node, context, "internal error: unknown function");
}

}  // namespace

Scalar evaluate_tree(const Node& node, const EvaluationContext& context) {
  switch (node.operation) {
    case Operation::literal:
      if (node.literal.kind == Kind::string) return Scalar::of_string(&node.text);
      return node.literal;
    case Operation::name: {
      if (node.slot < 0 || static_cast<std::size_t>(node.slot) >= context.slots.size()) {
        throw TunerError(fmt::format("expression '{}' evaluated {}", *context.text,
                                     node.slot < 0 ? "before bind()" : "with fewer values than its scope has names"));
      }
      return load(context.slots[static_cast<std::size_t>(node.slot)]);
    }
    case Operation::negate:
      return negate(node, evaluate_tree(node.children[0], context), context);
    case Operation::unary_plus:
      return unary_plus(node, evaluate_tree(node.children[0], context), context);
    case Operation::logical_not:
      return Scalar::of_boolean(!scalar_truthy(evaluate_tree(node.children[0], context)));
    case Operation::add:
    case Operation::subtract:
    case Operation::multiply: {
      Scalar left = evaluate_tree(node.children[0], context);
      Scalar right = evaluate_tree(node.children[1], context);
      if (left.kind == Kind::integer && right.kind == Kind::integer) {
        std::int64_t result = 0;
        bool overflow = node.operation == Operation::add        ? __builtin_add_overflow(left.integer, right.integer, &result)
                        : node.operation == Operation::subtract ? __builtin_sub_overflow(left.integer, right.integer, &result)
                                                                : __builtin_mul_overflow(left.integer, right.integer, &result);
        if (!overflow) return Scalar::of_integer(result);
      }
      return arithmetic(node, left, right, context);
    }
    case Operation::divide:
    case Operation::floor_divide:
    case Operation::modulo:
    case Operation::power:
      return arithmetic(node, evaluate_tree(node.children[0], context), evaluate_tree(node.children[1], context),
                        context);
    case Operation::logical_and:
      for (const auto& operand : node.children) {
        if (!scalar_truthy(evaluate_tree(operand, context))) return Scalar::of_boolean(false);
      }
      return Scalar::of_boolean(true);
    case Operation::logical_or:
      for (const auto& operand : node.children) {
        if (scalar_truthy(evaluate_tree(operand, context))) return Scalar::of_boolean(true);
      }
      return Scalar::of_boolean(false);
    case Operation::compare:
      return evaluate_compare(node, context);
    case Operation::conditional:
      return scalar_truthy(evaluate_tree(node.children[1], context)) ? evaluate_tree(node.children[0], context)
                                                                      : evaluate_tree(node.children[2], context);
    case Operation::call:
      return call(node, context);
    case Operation::list:
      break;
  }
  fail(node, context, "a list is only allowed after 'in' or 'not in'");
}

Scalar to_scalar(const Value& value) { return load(value); }

Scalar evaluate_program(const Node& root, const EvaluationContext& context) {
  const Program& program = root.program;
  if (program.code.empty()) return evaluate_tree(root, context);
  if (program.unbound || static_cast<std::size_t>(program.slot_count) > context.slots.size()) {
    throw TunerError(fmt::format("expression '{}' evaluated {}", *context.text,
                                 program.unbound ? "before bind()" : "with fewer values than its scope has names"));
  }
  Scalar stack[program_stack_capacity];
  int top = -1;
  const Scalar* constants = program.constants.data();
  const Value* slots = context.slots.data();
  // Right before left: when both are on the stack, the right one is on top. A macro rather than a lambda:
  // GCC did not inline the lambda, which cost 40% of the time of a typical constraint.
#define KERNLATHE_EXPR_FETCH(kind, index)                                                  \
  ((kind) == OperandKind::slot    ? load(slots[index])                                 \
   : (kind) == OperandKind::stack ? stack[top--]                                       \
                                  : constants[index])
  const Instruction* code = program.code.data();
  const int size = static_cast<int>(program.code.size());
  for (int pc = 0; pc < size; ++pc) {
    const Instruction& instruction = code[pc];
    switch (instruction.opcode) {
      case Opcode::push: {
        Scalar value = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        stack[++top] = value;
        break;
      }
      case Opcode::add:
      case Opcode::subtract:
      case Opcode::multiply: {
        Scalar right = KERNLATHE_EXPR_FETCH(instruction.right_kind, instruction.right);
        Scalar left = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        if (left.kind == Kind::integer && right.kind == Kind::integer) {
          std::int64_t result = 0;
          bool overflow = instruction.opcode == Opcode::add ? __builtin_add_overflow(left.integer, right.integer, &result)
                          : instruction.opcode == Opcode::subtract
                              ? __builtin_sub_overflow(left.integer, right.integer, &result)
                              : __builtin_mul_overflow(left.integer, right.integer, &result);
          if (!overflow) {
            stack[++top] = Scalar::of_integer(result);
            break;
          }
        }
        stack[++top] = arithmetic(*instruction.node, left, right, context);
        break;
      }
      case Opcode::divide:
      case Opcode::floor_divide:
      case Opcode::modulo:
      case Opcode::power: {
        Scalar right = KERNLATHE_EXPR_FETCH(instruction.right_kind, instruction.right);
        Scalar left = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        stack[++top] = arithmetic(*instruction.node, left, right, context);
        break;
      }
      case Opcode::compare:
      case Opcode::compare_chain: {
        Scalar right = KERNLATHE_EXPR_FETCH(instruction.right_kind, instruction.right);
        Scalar left = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        bool result = false;
        if (left.kind == Kind::integer && right.kind == Kind::integer) {
          std::int64_t a = left.integer;
          std::int64_t b = right.integer;
          switch (instruction.comparison) {
            case Comparison::equal: result = a == b; break;
            case Comparison::not_equal: result = a != b; break;
            case Comparison::less: result = a < b; break;
            case Comparison::less_equal: result = a <= b; break;
            case Comparison::greater: result = a > b; break;
            case Comparison::greater_equal: result = a >= b; break;
            default: break;
          }
        } else {
          result = compare(*instruction.node, instruction.comparison, left, right, context);
        }
        if (instruction.opcode == Opcode::compare) {
          stack[++top] = Scalar::of_boolean(result);
        } else if (result) {
          stack[++top] = right;
        } else {
          stack[++top] = Scalar::of_boolean(false);
          pc = instruction.target - 1;
        }
        break;
      }
      case Opcode::negate:
      case Opcode::unary_plus: {
        Scalar operand = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        if (operand.kind == Kind::integer && instruction.opcode == Opcode::negate &&
            operand.integer != std::numeric_limits<std::int64_t>::min()) {
          stack[++top] = Scalar::of_integer(-operand.integer);
          break;
        }
        stack[++top] = instruction.opcode == Opcode::negate ? negate(*instruction.node, operand, context)
                                                            : unary_plus(*instruction.node, operand, context);
        break;
      }
      case Opcode::logical_not: {
        Scalar operand = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        stack[++top] = Scalar::of_boolean(!truthy_inline(operand));
        break;
      }
      case Opcode::jump_if_false_or_pop:
        if (!truthy_inline(stack[top])) {
          stack[top] = Scalar::of_boolean(false);
          pc = instruction.target - 1;
        } else {
          --top;
        }
        break;
      case Opcode::jump_if_true_or_pop:
        if (truthy_inline(stack[top])) {
          stack[top] = Scalar::of_boolean(true);
          pc = instruction.target - 1;
        } else {
          --top;
        }
        break;
      case Opcode::to_boolean:
        stack[top] = Scalar::of_boolean(truthy_inline(stack[top]));
        break;
      case Opcode::pop_jump_if_false:
        if (!truthy_inline(stack[top--])) pc = instruction.target - 1;
        break;
      case Opcode::jump:
        pc = instruction.target - 1;
        break;
      case Opcode::member_of_constants: {
        Scalar operand = KERNLATHE_EXPR_FETCH(instruction.left_kind, instruction.left);
        bool found = false;
        for (int i = 0; i < instruction.target && !found; ++i) found = scalars_equal(operand, constants[instruction.right + i]);
        stack[++top] = Scalar::of_boolean(found == (instruction.comparison == Comparison::in));
        break;
      }
      case Opcode::subtree:
        stack[++top] = evaluate_tree(*instruction.node, context);
        break;
    }
  }
#undef KERNLATHE_EXPR_FETCH
  return stack[top];
}

Value to_value(const Scalar& scalar) {
  switch (scalar.kind) {
    case Kind::integer: return scalar.integer;
    case Kind::real: return scalar.real;
    case Kind::boolean: return scalar.boolean;
    case Kind::string: return *scalar.string;
  }
  return std::int64_t{0};
}

bool scalar_truthy(const Scalar& scalar) { return truthy_inline(scalar); }

bool scalar_equal(const Scalar& a, const Scalar& b) { return scalars_equal(a, b); }

}  // namespace kernlathe::expr
