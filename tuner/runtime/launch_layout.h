#pragma once
// Which value fills each parameter of a kernel launch, resolved from the names the application sets: one of its
// addresses or numbers (by position), a scalar's default, a scratch buffer the runtime owns, or a tensor map over a
// buffer. Kernel::bind resolves the names of each Arguments it is given; Kernel::prepare resolves them once, so that a
// PreparedLaunch only writes values into parameter slots (kernlathe.torch's eager path, where every call counts
// against issue 34's 3 us floor over Kernel::launch). No GPU and no CUDA header: tested on any machine.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/runtime/kernel_plan.h"

namespace kernlathe {

enum class ParameterFill {
  pointer,         // the application's address at `position` among its pointers
  scalar,          // the application's number at `position` among its scalars
  default_scalar,  // the scalar's default at the problem (ArgumentPlan::default_value)
  scratch,         // the runtime's own zeroed buffer
  tensor_map       // encoded over the buffer of parameter `position`
};

struct ParameterSource {
  ParameterFill fill = ParameterFill::pointer;
  std::size_t position = 0;
};

struct LaunchLayout {
  std::vector<ParameterSource> parameters;  // one per argument of the plan, in the kernel's parameter order
  std::size_t pointer_count = 0;
  std::size_t scalar_count = 0;
  bool has_tensor_maps = false;
};

// Resolves the application's pointer and scalar names against a plan's arguments. Throws RuntimeError
// (kernlathe/runtime.h) naming the kernel and the argument: a name that is not an argument the application sets (with
// the ones it sets), a name given twice, a buffer given a number or a scalar given a pointer, a buffer left unset.
LaunchLayout resolve_launch_layout(const std::string& kernel, const std::vector<ArgumentPlan>& arguments,
                                   std::span<const std::string_view> pointer_names,
                                   std::span<const std::string_view> scalar_names);

// Writes a scalar in the argument's dtype (f16 and bf16 rounded to nearest even) at destination (8 bytes at most).
// Throws RuntimeError for a text value or a dtype the runtime does not convert to.
void store_scalar(const ArgumentDescription& argument, const Value& value, std::byte* destination,
                  const std::string& kernel);

}  // namespace kernlathe
