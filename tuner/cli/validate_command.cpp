#include "tuner/cli/validate_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "tuner/space/json_values.h"
#include "tuner/common/error.h"
#include "tuner/compile/instantiate.h"
#include "tuner/session/tuning_session.h"
#include "tuner/space/configuration_checks.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;



}  // namespace

void ValidateCommand::add_to(CLI::App& command) {
  command.add_option("spec", spec_name, "kernel spec")->required();
  command.add_option("--arch", arch, "device profile used to enumerate the space");
  command.add_flag("--json", json, "machine-readable output");
}

int ValidateCommand::run() const {
  KernelSpec spec = load_kernel_spec(find_spec(spec_name));
  // Enumerating with a device profile finds what loading cannot: a constraint that divides by zero for some
  // configuration, or constraints that leave nothing valid.
  SpaceEnumerator space(spec.space, run_constants(spec, device_profile(arch)));
  // The reference configuration meets the constraints; buffer counts, launch geometry and shared memory of the
  // run's default configuration evaluate to usable values (and type errors surface here).
  check_spec_configurations(spec, space);
  const RunDefault run_default = run_default_configuration(spec, space);
  if (!run_default.fallback_note.empty()) fmt::print(stderr, "tune: note: {}\n", run_default.fallback_note);
  // Template arguments of the default configuration evaluate.
  instantiate(spec, space, run_default.values, arch);
  if (json) {
    Json output{{"spec", spec.file.string()}, {"kernel", spec.name}, {"valid", space.valid_count()}, {"ok", true}};
    output["default"] = configuration_to_json(spec.space, run_default.values);
    if (!run_default.fallback_note.empty()) output["default_note"] = run_default.fallback_note;
    fmt::print("{}\n", output.dump(2));
  } else {
    fmt::print("{}: ok: kernel {}, {} parameters, {} valid configurations for {}\n", spec.file.string(), spec.name,
               spec.space.parameters.size(), space.valid_count(), arch);
  }
  return exit_ok;
}

}  // namespace kernlathe
