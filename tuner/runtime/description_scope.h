#pragma once
// A kernel description's expressions (kernlathe/database.h) parsed and bound once for one device and one problem,
// so that checking a configuration costs evaluations only. select() checks every candidate of its ladder against the
// constraints and plan_kernel (tuner/runtime/kernel_plan.h) evaluates the launch of the one taken; each used to
// parse and bind every derived value and constraint again per candidate, which was most of a plan (gemm_bf16, 27
// derived values and 32 constraints: select() 0.84 ms of a 1.28 ms plan_kernel, benchmarks/bench_runtime_plan.cpp).
//
// Names are bound in the order expressions read them: device properties, problem symbols (the problem completed with
// the description's defaults), parameters, derived values, each derived value seeing only the ones before it; a
// problem default's condition sees device properties and problem symbols only. An expression that cannot be parsed
// or bound throws the error it always gave when it is evaluated, not before: a configuration that breaks an earlier
// constraint is still said to break that one.

#include <exception>
#include <map>
#include <string>
#include <vector>

#include "kernlathe/database.h"
#include "tuner/expr/expression.h"

namespace kernlathe {

class DescriptionScope {
 public:
  // Keeps a reference to the description, which must outlive the scope.
  DescriptionScope(const KernelDescription& description, const DeviceIdentity& device, const Problem& problem);
  DescriptionScope(const DescriptionScope&) = delete;
  DescriptionScope& operator=(const DescriptionScope&) = delete;

  const KernelDescription& description() const { return description_; }
  const Problem& problem() const { return problem_; }  // completed with the description's defaults

  // The condition of the description's problem default `index`.
  Value problem_default_condition(std::size_t index) const;

  // Binds the parameters to a configuration's values, in declared order: "" or "it has no value for parameter P".
  std::string set_parameters(const ConfigurationValues& configuration);
  // Derived value `index` with the parameters set and the derived values before it evaluated; binds its name to it.
  Value evaluate_derived(std::size_t index);
  // Constraint `index` (Python truthiness), once every derived value is evaluated.
  bool constraint_holds(std::size_t index) const;
  // Any other expression of every name (launch geometry, arguments, template arguments, loader settings), parsed and
  // bound on first use and kept.
  Value evaluate(const std::string& text);

  // The names derived value `index` reads (expr::Expression::names); throws when it cannot be parsed.
  std::vector<std::string> derived_reads(std::size_t index) const;

 private:
  // An expression parsed and bound, or the error either step threw (after a bind error, the parsed expression).
  struct Compiled {
    expr::Expression expression;
    std::exception_ptr error;
  };
  Compiled compile(const std::string& text) const;
  Value run(const Compiled& compiled) const;
  void set(int slot, const Value& value);

  const KernelDescription& description_;
  Problem problem_;
  expr::Scope scope_;
  std::vector<Value> slots_;
  std::vector<Value> base_slots_;  // device properties and problem symbols alone
  std::vector<int> parameter_slots_;
  std::vector<int> derived_slots_;
  std::vector<Compiled> conditions_;
  std::vector<Compiled> derived_;
  std::vector<Compiled> constraints_;
  std::map<std::string, Compiled, std::less<>> others_;
};

// Why a configuration cannot run at the scope's problem on its device, as unusable_reason (kernlathe/database.h)
// says it; "" when every constraint holds. Leaves the configuration's parameters and derived values bound.
std::string unusable_reason(DescriptionScope& scope, const ConfigurationValues& configuration);

// select() (kernlathe/database.h) over a scope of the database's description, the device and the requested problem
// that the caller keeps, so plan_kernel evaluates the launch of the configuration taken with the expressions bound
// here; std::invalid_argument for a scope of another description. Defined beside select(), in database.cpp, which
// builds a scope of its own for the same ladder.
Selection select(const KernelDatabase& database, const DeviceIdentity& device, DescriptionScope& scope,
                 const SelectOptions& options);

}  // namespace kernlathe
