// libFuzzer target for enumeration: any bytes read as a space (spaces/*.yaml) and enumerated against the sm_90
// device profile, under small limits, end in a space or an InputError; anything else (another exception, a crash,
// a sanitizer report, a run past libFuzzer's -timeout) is a bug. A space that enumerates keeps its promises: every
// index maps to a valid configuration and back, and a sample is distinct and valid.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace {

using namespace kernlathe;

[[noreturn]] void bug(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "BUG: %s\ninput: %.*s\n", what.c_str(), static_cast<int>(input.size()), input.data());
  std::abort();
}

// Small enough that one input takes milliseconds: the limits themselves are what is being exercised.
EnumerationLimits fuzz_limits() {
  EnumerationLimits limits;
  limits.max_tree_nodes = 100000;
  limits.max_candidates = 1000000;
  return limits;
}

const Constants& fuzz_constants() {
  static const Constants constants = [] {
    Constants result = device_property_values(device_profile("sm_90"));
    for (const char* symbol : {"M", "N", "K"}) result.emplace_back(symbol, Value{std::int64_t{4096}});
    return result;
  }();
  return constants;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Space space;
  try {
    space = parse_space(text, "fuzz.yaml");
  } catch (const InputError&) {
    return 0;
  }
  // A parameter of a million values is allowed (up to 2^20) but costs a second to copy: not what is fuzzed here.
  for (const Parameter& parameter : space.parameters)
    if (parameter.values.size() > 4096) return 0;
  try {
    SpaceEnumerator enumerator(space, fuzz_constants(), fuzz_limits());
    const std::uint64_t valid = enumerator.valid_count();
    if (valid == 0) bug("an enumerated space has no valid configuration", text);
    if (static_cast<double>(valid) > enumerator.total_combinations()) bug("more valid than combinations", text);
    const std::uint64_t step = valid / 64 + 1;
    for (std::uint64_t index = 0; index < valid; index += step) {
      Configuration configuration = enumerator.at(index);
      std::optional<std::uint64_t> back = enumerator.index_of(configuration);
      if (!back || *back != index) bug("index -> configuration -> index is not the identity", text);
      if (!enumerator.is_valid(configuration)) bug("at() returned an invalid configuration", text);
    }
    std::set<std::uint64_t> drawn;
    enumerator.for_each_sample(16, size > 0 ? data[0] : 0, [&](const Configuration& configuration) {
      std::optional<std::uint64_t> index = enumerator.index_of(configuration);
      if (!index) bug("sample() returned an invalid configuration", text);
      if (!drawn.insert(*index).second) bug("sample() returned a configuration twice", text);
    });
    if (drawn.size() != std::min<std::uint64_t>(16, valid)) bug("sample() returned too few", text);
  } catch (const InputError&) {
  }
  return 0;
}
