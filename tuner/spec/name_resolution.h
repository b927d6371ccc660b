#pragma once
// Name resolution of a whole kernel spec: every expression is bound against what it may read (device properties,
// problem symbols, parameters, derived values declared before it), so a typo fails at load, before any
// compilation or enumeration starts. Internal to the spec loader; other stages use spec_loader.h.

#include <string_view>

#include "tuner/expr/expression.h"
#include "tuner/spec/model.h"

namespace kernlathe::spec_loading {

// Binds a copy of `expression` against scope: an unknown name is an InputError at the expression.
void check_resolves(const Expression& expression, const expr::Scope& scope);

// Buffer sizes and scalar arguments are fixed once per problem: the expression may use problem symbols and device
// properties (problem_scope), not parameters or derived values. `what` names it in the message.
void check_fixed_per_problem(const Expression& expression, const expr::Scope& problem_scope, const Space& space,
                             std::string_view what);

// Every expression of the spec and its space (the stream section is checked by stream_section.h).
void check_names(const KernelSpec& spec);

}  // namespace kernlathe::spec_loading
