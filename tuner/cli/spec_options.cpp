#include "tuner/cli/spec_options.h"

#include "tuner/spec/spec_loader.h"

namespace kernlathe {

CLI::Option* CommonSpecOptions::add_to(CLI::App& command, bool with_device) {
  command
      .add_option("spec", spec,
                  "kernel spec (a path, or a name under kernels/); a path ending in .json is a community T1 file")
      ->required();
  command.add_option("--arch", arch, "use a built-in device profile: sm_80, sm_86, sm_89 or sm_90");
  command.add_option("--problem", problem, "override problem symbols, e.g. M=1024,N=2048");
  CLI::Option* device_option = nullptr;
  if (with_device) device_option = command.add_option("--device", device, "GPU index")->check(CLI::NonNegativeNumber);
  command.add_flag("--json", json, "machine-readable output on stdout");
  return device_option;
}

namespace {

CLI::Validator number_check(const char* description, bool (*accepted)(double), const char* wanted) {
  return CLI::Validator(
      [accepted, wanted](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return text + " is not a number";
        return accepted(value) ? std::string() : text + " is not " + wanted;
      },
      description);
}

}  // namespace

CLI::Validator above_zero() {
  return number_check("> 0", [](double value) { return value > 0; }, "above 0");
}

CLI::Validator zero_or_more() {
  return number_check(">= 0", [](double value) { return value >= 0; }, "0 or more");
}

KernelSpec CommonSpecOptions::load() const {
  return load_kernel_spec(find_spec(spec), parse_problem_overrides(problem));
}

}  // namespace kernlathe
