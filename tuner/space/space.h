#pragma once
// Constraint-aware enumeration of a space's valid configurations.
//
// Never materialises the Cartesian product. Parameters are split into groups that share no constraint
// (connected components of the "appear in the same constraint or derived value" graph); the number of valid
// configurations is the product of the groups' counts. Within a group, parameters are bound in an order that
// lets constraints prune early, each constraint is evaluated as soon as every name it reads is bound, and the
// valid tuples are kept as a prefix tree with subtree counts, so index <-> configuration is a descent.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
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

// Bounds on the work and the memory of an enumeration. Only groups of parameters tied by constraints cost
// anything: their valid tuples are walked and kept in a prefix tree (one node per valid prefix, every valid tuple a
// leaf), while a parameter no constraint reads costs nothing whatever its size. A space beyond either bound is an
// InputError naming the group's parameters and constraints, before the memory is spent.
struct EnumerationLimits {
  // Prefix-tree nodes over all groups kept as trees (not the first group of an `in_order` enumerator, which keeps
  // none). spaces/bench_large.yaml, the largest space measured here (17.2 million valid configurations), needs 28.4
  // million nodes in 126 MiB; 2^26 = 67.1 million is 2.4 times that, about 0.3 GiB at that density and 0.5 GiB at the
  // widest node layout.
  std::uint64_t max_tree_nodes = std::uint64_t{1} << 26;
  // Candidate values tried over all groups' walks (each a check of one prefix against the constraints that
  // complete there). bench_large tries 41 million, counted in 0.15 s and kept as a tree in 0.40 s; 2^31 = 2.1
  // billion is at most half a minute of that.
  std::uint64_t max_candidates = std::uint64_t{1} << 31;
};

// What an enumerator keeps of the valid tuples of its first group of parameters (the most significant digit of the
// index). `indexed`, the default, keeps them as a prefix tree like every other group's, so the configuration at an
// index and the index of a configuration are a descent: at(), index_of(), is_valid(), sample(), for_each_sample()
// and neighbours() work. `in_order` only counts them, and for_each_in_order() walks them again: what `tune space`
// counts and lists, in memory that does not grow with the first group (spaces/bench_large.yaml is one group of 17
// million tuples, 126 MiB as a tree). The functions that need the index throw TunerError on such an enumerator.
enum class EnumeratorKind { indexed, in_order };

// At most this many configurations are drawn by one SpaceEnumerator::sample call (each is held in memory).
inline constexpr std::uint64_t max_sample_size = std::uint64_t{1} << 20;

class SpaceEnumerator {
 public:
  // Binds every constraint and derived value (unknown names -> InputError), then enumerates.
  // Throws InputError when no configuration is valid, when a constraint or derived value cannot be evaluated for
  // some configuration (division by zero, type error): the message names the configuration, or when the space
  // needs more than limits allow.
  SpaceEnumerator(const Space& space, Constants constants, const EnumerationLimits& limits = {},
                  EnumeratorKind kind = EnumeratorKind::indexed);
  ~SpaceEnumerator();
  SpaceEnumerator(SpaceEnumerator&&) noexcept;
  SpaceEnumerator& operator=(SpaceEnumerator&&) noexcept;

  const Space& space() const;
  double total_combinations() const;  // Cartesian product size (double: may exceed 2^64)
  std::uint64_t valid_count() const;

  // Stable mapping over [0, valid_count()): the same space and constants give the same order.
  Configuration at(std::uint64_t index) const;
  // The configurations [first, first + count) (clamped to valid_count()) in index order, each given to visit as the
  // value index of every parameter in declared order (space().parameters[p].values[value_indices[p]]) and the first
  // parameter, in declared order, whose value may differ from the configuration visited before (0 for the first):
  // the parameters before it are unchanged. Each step advances the walk of the group that changes (one valid tuple
  // to the next) instead of decoding an index: `tune space --list all` lists bench_large's 17 million this way. On an
  // `in_order` enumerator the first group is walked from its start, so a large first costs that walk.
  void for_each_in_order(
      std::uint64_t first, std::uint64_t count,
      const std::function<void(std::span<const std::uint32_t> value_indices, std::size_t first_changed)>& visit) const;
  // The index of configuration's canonical form; nullopt when that is not valid.
  std::optional<std::uint64_t> index_of(const Configuration& configuration) const;
  bool is_valid(const Configuration& configuration) const;

  // n distinct valid configurations drawn uniformly (all of them when n >= valid_count()), deterministic
  // for a seed, in draw order. More than max_sample_size (after the clamp to valid_count()) is an InputError.
  std::vector<Configuration> sample(std::uint64_t n, std::uint64_t seed) const;
  // The same draws handed to visit one by one; memory for the drawn indices only.
  void for_each_sample(std::uint64_t n, std::uint64_t seed,
                       const std::function<void(const Configuration&)>& visit) const;

  // Valid configurations that differ from `configuration` in exactly one relevant parameter, taking the adjacent
  // value in declared order (adjacent_only) or any other value, each in canonical form and given once. A move that
  // makes other parameters relevant gives them their defaults; where that is invalid, the first value (in declared
  // order) of one of them that makes it valid. So a single move can switch a path (PATH in spaces/gemm.yaml).
  std::vector<Configuration> neighbours(const Configuration& configuration, bool adjacent_only = true) const;

  // Conditional parameters (`when:` in a space file). A parameter whose condition is false for a configuration is
  // irrelevant there and takes its default value: the canonical form. Configurations that differ only in irrelevant
  // parameters are one configuration: at(), sample() and neighbours() give canonical forms only, and index_of() and
  // is_valid() canonicalise what they are given first. A condition that cannot be evaluated -> InputError.
  Configuration canonical(Configuration configuration) const;
  // Per parameter, whether it is relevant for configuration (all true in a space without conditions).
  std::vector<bool> relevance(const Configuration& configuration) const;
  bool has_conditions() const;
  // The parameters (indices) a derived value reads, directly or through derived values declared before it.
  const std::vector<int>& parameters_read_by_derived(std::size_t derived) const;

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
