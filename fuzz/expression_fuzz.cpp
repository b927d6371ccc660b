// Fuzzes the expression language: any bytes either fail to parse with an InputError or parse into an
// expression that prints back to itself, lists its names, binds, and evaluates (or fails with an
// EvaluationError) the same way through the compiled program as through the tree walker.
// Any other exception, a crash or a sanitizer report is a bug.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/expr/expression.h"
#include "tuner/expr/node.h"

namespace {

using kernlathe::expr::EvaluationError;
using kernlathe::expr::Expression;
using kernlathe::expr::Value;

[[noreturn]] void bug(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "BUG: %s\ninput: %.*s\n", what.c_str(), static_cast<int>(input.size()), input.data());
  std::abort();
}

void collect_names(const kernlathe::expr::Node& node, std::set<std::string>& names) {
  if (node.operation == kernlathe::expr::Operation::name) names.insert(node.text);
  for (const auto& child : node.children) collect_names(child, names);
}

void assign_slots(kernlathe::expr::Node& node, const kernlathe::expr::Scope& scope) {
  if (node.operation == kernlathe::expr::Operation::name) node.slot = scope.slot_of(node.text);
  for (auto& child : node.children) assign_slots(child, scope);
}

// "error" or the type and value, so that the two evaluation paths can be compared as text.
template <typename Evaluate>
std::string outcome(Evaluate evaluate) {
  try {
    Value value = evaluate();
    return kernlathe::expr::type_name(value) + " " + kernlathe::expr::to_string(value);
  } catch (const EvaluationError&) {
    return "error";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Expression expression;
  try {
    expression = Expression::parse(text, {"fuzz", 1, 1});
  } catch (const EvaluationError& error) {
    bug(std::string("parse threw an EvaluationError: ") + error.what(), text);
  } catch (const kernlathe::InputError&) {
    return 0;
  }

  std::string canonical = expression.to_string();
  Expression reparsed;
  try {
    reparsed = Expression::parse(canonical);
  } catch (const kernlathe::InputError& error) {
    bug("to_string() does not parse back: '" + canonical + "': " + error.what(), text);
  }
  if (reparsed.to_string() != canonical) {
    bug("to_string() is not a fixed point: '" + canonical + "' became '" + reparsed.to_string() + "'", text);
  }

  std::vector<std::string> names = expression.names();
  if (reparsed.names() != names) bug("names() changed across to_string()", text);
  std::set<std::string> tree_names;
  kernlathe::expr::Node tree = kernlathe::expr::parse_tree(text, {});
  collect_names(tree, tree_names);
  if (std::vector<std::string>(tree_names.begin(), tree_names.end()) != names) bug("names() misses a name", text);

  kernlathe::expr::Scope scope;
  for (const auto& name : names) scope.add(name);
  expression.bind(scope);
  reparsed.bind(scope);
  assign_slots(tree, scope);
  kernlathe::expr::compile(tree);

  const std::string tree_text(text);
  const kernlathe::SourceLocation nowhere;
  const std::vector<Value> samples{
      Value{std::int64_t{0}},  Value{std::int64_t{1}},       Value{std::int64_t{-7}},
      Value{std::int64_t{64}}, Value{2.5},                   Value{true},
      Value{std::string("row")}, Value{std::int64_t{9223372036854775807}},
  };
  for (std::size_t round = 0; round < samples.size(); ++round) {
    // Name i gets sample round + i, so that expressions of several names also see them differ.
    std::vector<Value> slots;
    for (std::size_t i = 0; i < names.size(); ++i) slots.push_back(samples[(round + i) % samples.size()]);
    try {
      std::string compiled = outcome([&] { return expression.evaluate(slots); });
      std::string again = outcome([&] { return reparsed.evaluate(slots); });
      kernlathe::expr::EvaluationContext context{slots, &tree_text, &nowhere};
      std::string walked = outcome([&] { return kernlathe::expr::to_value(kernlathe::expr::evaluate_tree(tree, context)); });
      std::string program = outcome([&] { return kernlathe::expr::to_value(kernlathe::expr::evaluate_program(tree, context)); });
      // NaN prints the same both ways, so comparing text is exact here.
      if (compiled != again) bug("the reparsed expression evaluates differently: " + compiled + " vs " + again, text);
      if (walked != program) bug("program and tree walk differ: " + program + " vs " + walked, text);
      if (walked != compiled) bug("tree walk and Expression::evaluate differ: " + walked + " vs " + compiled, text);
      (void)outcome([&] { return Value{expression.evaluate_bool(slots)}; });
      (void)outcome([&] { return Value{expression.evaluate_number(slots)}; });
      (void)outcome([&] { return Value{expression.evaluate_integer(slots)}; });
    } catch (const EvaluationError&) {
      // outcome() catches these; evaluate_* may also throw them.
    }
  }
  return 0;
}
