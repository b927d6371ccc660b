#pragma once
// The value lists of community T1 files, written as Python expressions ("[2**i for i in range(5)]",
// "list(range(1, 33))", "[16, 32, 64]"), evaluated once when the file is read with the project's expression language
// and a small reader of the list forms; no Python runs. The forms:
//
//   literal         [a, b, c]   (a, b, c)        elements are expressions: 2**5, 'row', True, 1.5
//   range           range(stop)  range(start, stop[, step])     integer arguments, step != 0
//   conversion      list(ITERABLE)  tuple(ITERABLE)
//   comprehension   [EXPR for NAME in ITERABLE]  [EXPR for NAME in ITERABLE if CONDITION]
//   concatenation   LIST + LIST
//
// where ITERABLE is any of the forms and EXPR, CONDITION are expressions of the expression language
// (tuner/expr/expression.h) that may read NAME.

#include <string_view>
#include <vector>

#include "tuner/expr/expression.h"

namespace kernlathe {

// The values, in order. InputError when the text is not one of the forms; the message quotes the part that was not
// understood and lists the forms (the caller prefixes the file and parameter). At most 1,000,000 values.
std::vector<expr::Value> evaluate_python_list(std::string_view text);

}  // namespace kernlathe
