// Measurements on the GPU, through an evaluation worker process (tuner/run/gpu_evaluator.h). This file turns a
// spec and a configuration into the plain launch descriptions the worker understands: buffer sizes, scalar
// values, grid, block and shared memory, all evaluated here from the spec's expressions.
#include <fmt/format.h>

#include "tuner/compile/instantiate.h"
#include "tuner/run/gpu_evaluator.h"
#include "tuner/session/device_query.h"
#include "tuner/session/measurer.h"
#include "tuner/session/tuning_session.h"

namespace tuner {
namespace {

Value evaluate_in(const Expression& expression, const Bindings& bindings) {
  Expression bound = expression;
  bound.bind(bindings.scope);
  return bound.evaluate(bindings.slots);
}

std::int64_t evaluate_integer_in(const Expression& expression, const Bindings& bindings, std::int64_t if_empty) {
  if (expression.empty()) return if_empty;
  Expression bound = expression;
  bound.bind(bindings.scope);
  return bound.evaluate_integer(bindings.slots);
}

ScalarValue to_scalar(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  if (const auto* real = std::get_if<double>(&value)) return *real;
  if (const auto* boolean = std::get_if<bool>(&value)) return static_cast<std::int64_t>(*boolean);
  throw InputError(fmt::format("a scalar kernel argument cannot be the string '{}'", std::get<std::string>(value)));
}

// The configuration the spec names as reference: its named values, the space defaults for the rest.
Configuration reference_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  Configuration configuration = space.default_configuration();
  for (const auto& [name, value] : spec.verification.reference) {
    bool found = false;
    for (std::size_t i = 0; i < spec.space.parameters.size(); ++i) {
      if (spec.space.parameters[i].name != name) continue;
      configuration[i] = value;
      found = true;
    }
    if (!found) throw InputError(fmt::format("{}: verify.reference names '{}', which is not a parameter", spec.file.string(), name));
  }
  if (!space.is_valid(configuration))
    throw InputError(fmt::format("{}: the reference configuration {} is not a valid configuration of the space",
                                 spec.file.string(), to_string(spec.space, configuration)));
  return configuration;
}

class GpuMeasurer final : public Measurer {
 public:
  GpuMeasurer(const KernelSpec& spec, const GpuMeasurerOptions& options)
      : spec_(spec), options_(options), evaluator_(evaluator_options(options)) {
    info_ = evaluator_.device_info();  // NoGpuError without driver or device
  }

  const DeviceProperties& device() const override { return info_.properties; }
  std::string driver_version() const override { return info_.driver_version; }
  bool needs_compilation() const override { return true; }

  void prepare(const SpaceEnumerator& space) override {
    const Configuration reference = reference_configuration(spec_, space);
    const Bindings bindings = space.bindings(reference);
    WorkerSetup setup;
    setup.device = options_.device;
    for (const Argument& argument : spec_.arguments) {
      WorkerArgument worker_argument;
      worker_argument.name = argument.name;
      worker_argument.dtype = argument.dtype;
      worker_argument.is_buffer = argument.is_buffer;
      worker_argument.role = argument.role;
      worker_argument.init = argument.init;
      if (argument.is_buffer) worker_argument.element_count = evaluate_integer_in(argument.count, bindings, 0);
      setup.arguments.push_back(worker_argument);
    }
    for (const Argument& argument : spec_.arguments)
      if (argument.is_buffer && argument.role != Role::in)
        setup.tolerance[argument.dtype] = spec_.verification.tolerance_for(argument.dtype);
    setup.verification_enabled = spec_.verification.enabled;
    setup.measurement = options_.measurement;

    CompileResult compiled = compile_cubin(
        instantiate(spec_, space, reference, arch_for(info_.properties, spec_.needs_arch_specific)),
        options_.cubin_cache_dir);
    if (!compiled.ok)
      throw TunerError(fmt::format("the reference configuration {} does not compile:\n{}",
                                   to_string(spec_.space, reference), compiled.log));
    setup.reference = launch_for(reference, compiled, space);
    evaluator_.setup(setup);
    copy_bandwidth_gbps_ = evaluator_.copy_bandwidth_gbps();
  }

  double copy_bandwidth_gbps() const override { return copy_bandwidth_gbps_; }

  Evaluation measure(const Configuration& configuration, const CompileResult* compiled,
                     const SpaceEnumerator& space) override {
    EvaluationRequest request;
    try {
      request.launch = launch_for(configuration, *compiled, space);
    } catch (const InputError& error) {
      Evaluation evaluation;
      evaluation.configuration = configuration;
      evaluation.status = Status::launch_error;
      evaluation.message = fmt::format("launch geometry: {}", error.what());
      return evaluation;
    }
    request.verify = spec_.verification.enabled;
    request.timeout_seconds = options_.timeout_seconds;
    Evaluation evaluation = evaluator_.evaluate(request);
    evaluation.configuration = configuration;
    return evaluation;
  }

 private:
  static GpuEvaluatorOptions evaluator_options(const GpuMeasurerOptions& options) {
    GpuEvaluatorOptions evaluator;
    evaluator.worker_executable = options.worker_executable;
    evaluator.device = options.device;
    evaluator.timeout_seconds = options.timeout_seconds;
    evaluator.measurement = options.measurement;
    return evaluator;
  }

  KernelLaunch launch_for(const Configuration& configuration, const CompileResult& compiled,
                          const SpaceEnumerator& space) const {
    const Bindings bindings = space.bindings(configuration);
    KernelLaunch launch;
    launch.cubin_path = compiled.cubin_path;
    launch.lowered_name = compiled.lowered_name;
    for (int d = 0; d < 3; ++d) {
      launch.grid[d] = evaluate_integer_in(spec_.launch.grid[d], bindings, 1);
      launch.block[d] = evaluate_integer_in(spec_.launch.block[d], bindings, 1);
    }
    launch.dynamic_shared_bytes = evaluate_integer_in(spec_.launch.dynamic_shared_bytes, bindings, 0);
    for (const Argument& argument : spec_.arguments)
      if (!argument.is_buffer) launch.scalar_values[argument.name] = to_scalar(evaluate_in(argument.value, bindings));
    return launch;
  }

  KernelSpec spec_;
  GpuMeasurerOptions options_;
  GpuEvaluator evaluator_;
  gpu::DeviceInfo info_;
  double copy_bandwidth_gbps_ = 0;
};

}  // namespace

std::unique_ptr<Measurer> make_gpu_measurer(const KernelSpec& spec, const GpuMeasurerOptions& options) {
  return std::make_unique<GpuMeasurer>(spec, options);
}

DeviceProperties query_gpu_properties(int index) {
  GpuEvaluatorOptions options;
  options.worker_executable = current_executable();
  options.device = index;
  GpuEvaluator evaluator(options);
  return evaluator.device_properties();
}

}  // namespace tuner
