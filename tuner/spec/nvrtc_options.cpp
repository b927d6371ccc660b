#include "tuner/spec/nvrtc_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace kernlathe {
namespace {

bool is_macro_name(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front()))) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// An option as NVRTC spells it: the long name and the short one.
struct Spelling {
  std::string_view long_name;
  std::string_view short_name;
};

constexpr std::array<Spelling, 4> allowed_flags = {{{"--use_fast_math", "-use_fast_math"},
                                                    {"--generate-line-info", "-lineinfo"},
                                                    {"--extra-device-vectorization", "-extra-device-vectorization"},
                                                    {"--device-as-default-execution-space", "-default-device"}}};

// The text after "--name=" or "-short=", when option starts with either.
std::optional<std::string_view> value_of(std::string_view option, Spelling spelling) {
  for (std::string_view name : {spelling.long_name, spelling.short_name}) {
    std::string prefix = fmt::format("{}=", name);
    if (option.starts_with(prefix)) return option.substr(prefix.size());
  }
  return std::nullopt;
}

std::optional<std::string> macro_definition_problem(std::string_view definition, bool with_value) {
  std::string_view name = definition.substr(0, definition.find('='));
  if (!is_macro_name(name)) {
    return fmt::format("'{}' is not a macro name (letters, digits and _, not starting with a digit)", name);
  }
  if (!with_value && name.size() != definition.size()) return std::string("-U takes a macro name only");
  return std::nullopt;
}

}  // namespace

std::string allowed_compile_options_summary() {
  return "-std=c++11|c++14|c++17|c++20, -D<name>[=<text>], -U<name>, -use_fast_math, -lineinfo, "
         "-maxrregcount=<1..255>, -ftz=, -prec-div=, -prec-sqrt=, -fmad= (true|false), -extra-device-vectorization, "
         "-default-device, and their long spellings (README: \"What a spec can and cannot do\")";
}

std::optional<std::string> compile_option_problem(std::string_view option) {
  // A control character would reach NVRTC's option parser (and a -D value the source) as it is.
  if (std::any_of(option.begin(), option.end(), [](char c) { return std::iscntrl(static_cast<unsigned char>(c)); })) {
    return std::string("it contains a control character");
  }
  for (const Spelling& flag : allowed_flags) {
    if (option == flag.long_name || option == flag.short_name) return std::nullopt;
  }
  if (auto standard = value_of(option, {"--std", "-std"})) {
    for (std::string_view known : {"c++11", "c++14", "c++17", "c++20"}) {
      if (*standard == known) return std::nullopt;
    }
    return fmt::format("-std takes c++11, c++14, c++17 or c++20, not '{}'", *standard);
  }
  for (Spelling flag : {Spelling{"--ftz", "-ftz"}, Spelling{"--prec-div", "-prec-div"},
                        Spelling{"--prec-sqrt", "-prec-sqrt"}, Spelling{"--fmad", "-fmad"}}) {
    if (auto value = value_of(option, flag)) {
      if (*value == "true" || *value == "false") return std::nullopt;
      return fmt::format("{} takes true or false, not '{}'", flag.short_name, *value);
    }
  }
  if (auto count = value_of(option, {"--maxrregcount", "-maxrregcount"})) {
    int registers = 0;
    auto [end, error] = std::from_chars(count->data(), count->data() + count->size(), registers);
    if (error == std::errc() && end == count->data() + count->size() && registers >= 1 && registers <= 255) {
      return std::nullopt;
    }
    return fmt::format("-maxrregcount takes a register count from 1 to 255, not '{}'", *count);
  }
  if (option.starts_with("--define-macro=")) return macro_definition_problem(option.substr(15), true);
  if (option.starts_with("--undefine-macro=")) return macro_definition_problem(option.substr(17), false);
  if (option.starts_with("-D")) return macro_definition_problem(option.substr(2), true);
  if (option.starts_with("-U")) return macro_definition_problem(option.substr(2), false);
  if (option.starts_with("-I") || option.starts_with("--include-path")) {
    return std::string("include paths are not a spec's to set: a template includes from its own folder and the "
                       "CUDA toolkit");
  }
  if (option.starts_with("-arch") || option.starts_with("--gpu-architecture")) {
    return std::string("the architecture comes from the GPU or --arch (arch_specific: true for sm_90a)");
  }
  return std::string("it is not on the list of options a spec may pass (some NVRTC options write files)");
}

}  // namespace kernlathe
