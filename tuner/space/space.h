#pragma once
// Constraint-aware enumeration of a space's valid configurations.
//
// Never materialises the Cartesian product. Parameters are split into groups that share no constraint
// (connected components of the "appear in the same constraint or derived value" graph); the number of valid
// configurations is the product of the groups' counts. Within a group, parameters are bound in an order that
// lets constraints prune early, each constraint is evaluated as soon as every name it reads is bound, and the
// valid tuples are kept as a prefix tree with subtree counts, so index <-> configuration is a descent.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/expr/expression.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// One value per parameter, in the space's declared parameter order.
using Configuration = std::vector<Value>;

// "BLOCK=128 VEC=4 USE_SHMEM=true"
std::string to_string(const Space& space, const Configuration& configuration);

// Names and values fixed for a whole run: device properties and problem symbols.
using Constants = std::vector<std::pair<std::string, Value>>;

// Everything an expression of a spec may read for one configuration, in slot order:
// constants, then parameters, then derived values.
struct Bindings {
  expr::Scope scope;
  std::vector<Value> slots;
  Value get(std::string_view name) const;  // throws TunerError for an unknown name
};

class SpaceEnumerator {
 public:
  // Binds every constraint and derived value (unknown names -> InputError), then enumerates.
  // Throws InputError when no configuration is valid, or when a constraint or derived value cannot be
  // evaluated for some configuration (division by zero, type error): the message names the configuration.
  SpaceEnumerator(const Space& space, Constants constants);
  ~SpaceEnumerator();
  SpaceEnumerator(SpaceEnumerator&&) noexcept;
  SpaceEnumerator& operator=(SpaceEnumerator&&) noexcept;

  const Space& space() const;
  double total_combinations() const;  // Cartesian product size (double: may exceed 2^64)
  std::uint64_t valid_count() const;

  // Stable mapping over [0, valid_count()): the same space and constants give the same order.
  Configuration at(std::uint64_t index) const;
  std::optional<std::uint64_t> index_of(const Configuration& configuration) const;
  bool is_valid(const Configuration& configuration) const;

  // n distinct valid configurations drawn uniformly (all of them when n >= valid_count()), deterministic
  // for a seed, in draw order.
  std::vector<Configuration> sample(std::uint64_t n, std::uint64_t seed) const;

  // Valid configurations that differ from `configuration` in exactly one parameter, taking the adjacent
  // value in declared order (adjacent_only) or any other value.
  std::vector<Configuration> neighbours(const Configuration& configuration, bool adjacent_only = true) const;

  // The space's default configuration (declared defaults). May be invalid; check is_valid.
  Configuration default_configuration() const;

  // Constants + parameters + derived values for one configuration.
  Bindings bindings(const Configuration& configuration) const;

  // Derived values only, in declared order (for template constants and records).
  std::vector<std::pair<std::string, Value>> derived_values(const Configuration& configuration) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernlathe
