// Measurements on the GPU, through an evaluation worker process (tuner/run/gpu_evaluator.h). This file turns a
// spec and a configuration into the plain launch descriptions the worker understands: buffer sizes, scalar
// values, grid, block and shared memory, all evaluated here from the spec's expressions.
#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tuner/compile/instantiate.h"
#include "tuner/driver/tensor_map_strides.h"
#include "tuner/loader/dataset.h"
#include "tuner/loader/pipeline.h"
#include "tuner/measure/measurement.h"
#include "tuner/run/gpu_evaluator.h"
#include "tuner/session/device_query.h"
#include "tuner/session/measurer.h"
#include "tuner/session/tuning_session.h"
#include "tuner/space/configuration_checks.h"

namespace kernlathe {
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

// The configuration the worker computes the reference outputs with: the spec's verification reference (the first
// of its mappings valid here), or, with the baseline as reference, one that only sizes the buffers and is compiled
// once: the run's default, else (the GEMM specs' shared defaults fit none of their dtypes) the first valid one.
Configuration verification_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  if (!spec.verification.reference_is_baseline) return reference_configuration(spec, space);
  Configuration configuration = run_default_configuration(spec, space).values;
  if (!space.is_valid(configuration) && space.valid_count() > 0) return space.at(0);
  return configuration;
}

// Streamed specs (tuner/loader): the loader settings of one configuration, from the spec's loader expressions;
// an empty expression takes the naive value.
loader::LoaderConfiguration loader_configuration(const LoaderExpressions& settings, const Bindings& bindings) {
  loader::LoaderConfiguration loader;
  auto integer = [&](const Expression& expression, std::int64_t naive) {
    return expression.empty() ? naive : evaluate_integer_in(expression, bindings, naive);
  };
  loader.pinned = !settings.pinned.empty() && expr::truthy(evaluate_in(settings.pinned, bindings));
  loader.workers = static_cast<int>(integer(settings.workers, 1));
  loader.prefetch = static_cast<int>(integer(settings.prefetch, 1));
  loader.streams = static_cast<int>(integer(settings.streams, 1));
  loader.batch = integer(settings.batch, 1);
  loader.chunk_bytes = integer(settings.chunk_bytes, 0);
  return loader;
}

// A tensor map's strides and extent at the problem, checked here so that a bad problem is one InputError before any
// worker starts, not a launch error of every configuration: the rules of tuner/driver/tensor_map_strides.h, and a
// buffer large enough for the view (the worker checks that again per configuration).
void check_tensor_map_at_problem(const Argument& argument, const WorkerArgument& map,
                                 const std::vector<WorkerArgument>& arguments) {
  const WorkerArgument& buffer = arguments.at(static_cast<std::size_t>(map.tensor_buffer));
  const auto element_bytes = static_cast<std::int64_t>(dtype_size(buffer.dtype));
  if (std::string why = gpu::stride_problem(map.tensor_dims, map.tensor_strides, element_bytes); !why.empty()) {
    throw InputError(argument.where, fmt::format("tensor map '{}' at dims [{}] and strides [{}]: {}", argument.name,
                                                 fmt::join(map.tensor_dims, ", "), fmt::join(map.tensor_strides, ", "),
                                                 why));
  }
  const std::uint64_t span = gpu::span_elements(map.tensor_dims, map.tensor_strides);
  if (span > static_cast<std::uint64_t>(std::max<std::int64_t>(buffer.element_count, 0))) {
    throw InputError(argument.where, fmt::format("tensor map '{}' reaches {} elements of buffer '{}', which holds {}; "
                                                 "make the buffer's count cover the map's dims and strides",
                                                 argument.name, span, buffer.name, buffer.element_count));
  }
}

// The stream as the worker runs it. Files are found and their headers checked here, in the tuner, so a missing or
// malformed dataset is an InputError before any worker starts.
WorkerStream worker_stream(const KernelSpec& spec, const WorkerSetup& setup, const Bindings& reference_bindings) {
  const StreamWorkload& stream = spec.stream;
  WorkerStream worker;
  worker.dtype = stream.dtype;
  worker.generator = stream.generator;
  worker.npy = stream.format == StreamWorkload::FileFormat::npy;
  worker.items = evaluate_integer_in(stream.items, reference_bindings, 0);
  for (const Expression& dimension : stream.item_shape)
    worker.item_shape.push_back(evaluate_integer_in(dimension, reference_bindings, 0));
  std::int64_t item_elements = 1;
  for (std::int64_t dimension : worker.item_shape) item_elements *= dimension;
  if (worker.items < 1 || item_elements < 1) {
    throw InputError(stream.where, fmt::format("stream of {} items of {} elements: both must be at least 1", worker.items,
                                               item_elements));
  }
  for (std::size_t index = 0; index < setup.arguments.size(); ++index) {
    const WorkerArgument& argument = setup.arguments[index];
    if (argument.name == stream.input_argument) {
      worker.input_argument = static_cast<int>(index);
      if (argument.element_count != item_elements) {
        throw InputError(stream.where, fmt::format("stream input '{}' has count {} per item, but stream.item_shape "
                                                   "holds {} elements",
                                                   argument.name, argument.element_count, item_elements));
      }
    }
    if (argument.name == stream.output_argument) {
      worker.output_argument = static_cast<int>(index);
      worker.output_item_elements = argument.element_count;
    }
  }
  if (stream.source == StreamWorkload::SourceKind::files) {
    std::string pattern = loader::expand_environment(stream.pattern);
    std::filesystem::path path(pattern);
    std::filesystem::path written(stream.pattern);
    if (path.is_relative()) path = stream.base_directory / path;
    if (written.is_relative()) written = stream.base_directory / written;
    loader::FileDatasetOptions options;
    options.files = loader::glob_files(path.string(), written.string());
    options.format = stream.format;
    options.dtype = stream.dtype;
    options.item_shape = worker.item_shape;
    options.items = worker.items;
    loader::open_file_dataset(options);  // checks every header now
    for (const std::filesystem::path& file : options.files) worker.files.push_back(file.string());
  } else {
    loader::make_generated_dataset(stream.dtype, item_elements, worker.items, stream.generator);  // dtype check
  }
  worker.reference_loader = loader::LoaderConfiguration::reference(loader_configuration(spec.loader, reference_bindings).batch);
  return worker;
}

class GpuMeasurer final : public Measurer {
 public:
  GpuMeasurer(const KernelSpec& spec, const GpuMeasurerOptions& options)
      : spec_(spec), options_(options), evaluator_(evaluator_options(spec, options)) {
    info_ = evaluator_.device_info();  // NoGpuError without driver or device
  }

  const DeviceProperties& device() const override { return info_.properties; }
  std::string driver_version() const override { return info_.driver_version; }
  bool needs_compilation() const override { return true; }

  void prepare(const SpaceEnumerator& space) override {
    phases_.clear();
    LapClock clock;
    const Configuration reference = verification_configuration(spec_, space);
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
      if (argument.tensor_map) {
        worker_argument.tensor_buffer = argument_index(argument.tensor_map->buffer);
        for (const Expression& dimension : argument.tensor_map->dims)
          worker_argument.tensor_dims.push_back(evaluate_integer_in(dimension, bindings, 0));
        for (const Expression& stride : argument.tensor_map->strides)
          worker_argument.tensor_strides.push_back(evaluate_integer_in(stride, bindings, 0));
      }
      setup.arguments.push_back(worker_argument);
    }
    for (std::size_t index = 0; index < spec_.arguments.size(); ++index) {
      if (setup.arguments[index].is_tensor_map())
        check_tensor_map_at_problem(spec_.arguments[index], setup.arguments[index], setup.arguments);
    }
    if (spec_.baseline.present()) setup.baseline = baseline_call(bindings);
    setup.reference_from_baseline = spec_.verification.reference_is_baseline;
    for (const Argument& argument : spec_.arguments)
      if (argument.is_buffer && argument.role != Role::in)
        setup.tolerance[argument.dtype] = spec_.verification.tolerance_for(argument.dtype);
    setup.verification_enabled = spec_.verification.enabled;
    setup.measurement = options_.measurement;
    if (spec_.stream.enabled) setup.stream = worker_stream(spec_, setup, bindings);  // checks the files' headers
    phases_.push_back({"build the worker's setup", clock.lap()});

    if (!needs_reference_kernel(setup)) {
      // The baseline is the reference (GEMM) or nothing is verified: no launch of the template at setup, so
      // nothing to compile before the first configuration.
      evaluator_.setup(setup);
    } else {
      // The reference configuration compiles on a thread while the worker fills the buffers and times the
      // baseline; its launch follows the setup (GpuEvaluator::setup with a reference).
      const std::string arch = arch_for(info_.properties, spec_.needs_arch_specific);
      std::future<std::pair<CompileResult, double>> compiling = std::async(std::launch::async, [&] {
        LapClock compile_clock;
        CompileResult compiled = compile_cubin(instantiate(spec_, space, reference, arch), options_.cubin_cache_dir);
        return std::make_pair(std::move(compiled), compile_clock.lap());
      });
      bool cached = false;
      double compile_seconds = 0;
      evaluator_.setup(setup, [&] {
        auto [compiled, seconds] = compiling.get();
        cached = compiled.cached;
        compile_seconds = seconds;
        if (!compiled.ok)
          throw TunerError(fmt::format("the reference configuration {} does not compile:\n{}",
                                       to_string(spec_.space, reference), compiled.log));
        return launch_for(reference, compiled, space);
      });
      phases_.push_back({cached ? "reference cubin (cached)" : "compile reference", compile_seconds, true});
    }
    const double setup_seconds = clock.lap();
    double staged = 0;
    for (const WorkerSetupStage& stage : evaluator_.setup_stages()) {
      phases_.push_back({"worker: " + stage.name, stage.seconds, stage.alongside});
      if (!stage.alongside) staged += stage.seconds;
    }
    phases_.push_back({"worker round trip", std::max(setup_seconds - staged, 0.0)});
    copy_bandwidth_gbps_ = evaluator_.copy_bandwidth_gbps();
    phases_.push_back({"copy ceiling", clock.lap()});
  }

  std::vector<ProfilePhase> preparation_phases() const override { return phases_; }

  double copy_bandwidth_gbps() const override { return copy_bandwidth_gbps_; }
  double measure_pinned_copy_in_gbps() override { return evaluator_.pinned_copy_in_gbps(); }
  double baseline_ms() const override {
    return evaluator_.baseline_time() ? evaluator_.baseline_time()->time.median_ms : 0;
  }
  Ceilings ceilings() override { return evaluator_.ceilings(); }
  std::vector<ProfilePhase> ceiling_phases() const override {
    std::vector<ProfilePhase> phases;
    for (const WorkerSetupStage& part : evaluator_.ceiling_parts()) phases.push_back({"ceilings: " + part.name, part.seconds});
    return phases;
  }
  void rest() override {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(burst_rest_ms));
    burst_next_ = true;
  }

  std::optional<double> sustained_ms(const Configuration* configuration, const CompileResult* compiled,
                                     const SpaceEnumerator& space) override {
    if (configuration == nullptr) {
      if (!spec_.baseline.present()) return std::nullopt;
      const Evaluation baseline = evaluator_.measure_baseline(false, false, sustained_seconds);
      return baseline.ok() ? std::optional(baseline.time.median_ms) : std::nullopt;
    }
    std::variant<EvaluationRequest, Evaluation> request = request_for(*configuration, compiled, space, false);
    auto* timing = std::get_if<EvaluationRequest>(&request);
    if (timing == nullptr || spec_.stream.enabled) return std::nullopt;
    timing->sustained_seconds = sustained_seconds;
    const Evaluation evaluation = evaluator_.evaluate(*timing);
    return evaluation.ok() ? std::optional(evaluation.time.median_ms) : std::nullopt;
  }

  Evaluation measure_baseline(bool measure_energy) override {
    if (!spec_.baseline.present()) return Measurer::measure_baseline(measure_energy);
    return evaluator_.measure_baseline(measure_energy, std::exchange(burst_next_, false));
  }
  std::string baseline_library() const override {
    return evaluator_.baseline_time() ? evaluator_.baseline_time()->library : "";
  }

  Evaluation measure(const Configuration& configuration, const CompileResult* compiled, const SpaceEnumerator& space,
                     bool measure_energy) override {
    std::variant<EvaluationRequest, Evaluation> request = request_for(configuration, compiled, space, measure_energy);
    if (auto* timing = std::get_if<EvaluationRequest>(&request)) timing->burst = burst_next_;
    burst_next_ = false;
    // No GPU work for a configuration refused before launch (geometry or loader settings that cannot be evaluated).
    Evaluation evaluation = std::holds_alternative<Evaluation>(request)
                                ? std::move(std::get<Evaluation>(request))
                                : evaluator_.evaluate(std::get<EvaluationRequest>(request));
    evaluation.configuration = configuration;
    return evaluation;
  }

 private:
  // The worker's request for a configuration, or the evaluation that refuses it before any GPU work (launch
  // geometry or loader settings that cannot be evaluated).
  std::variant<EvaluationRequest, Evaluation> request_for(const Configuration& configuration,
                                                          const CompileResult* compiled, const SpaceEnumerator& space,
                                                          bool measure_energy) const {
    EvaluationRequest request;
    request.measure_energy = measure_energy;
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
    if (spec_.stream.enabled) {
      try {
        request.loader = loader_configuration(spec_.loader, space.bindings(configuration));
      } catch (const InputError& error) {
        Evaluation evaluation;
        evaluation.configuration = configuration;
        evaluation.status = Status::launch_error;
        evaluation.message = fmt::format("loader settings: {}", error.what());
        return evaluation;
      }
    }
    return request;
  }

  static GpuEvaluatorOptions evaluator_options(const KernelSpec& spec, const GpuMeasurerOptions& options) {
    GpuEvaluatorOptions evaluator;
    for (const Argument& argument : spec.arguments)
      if (argument.is_buffer) evaluator.buffer_dtypes.push_back(argument.dtype);
    evaluator.worker_executable = options.worker_executable;
    evaluator.device = options.device;
    evaluator.timeout_seconds = options.timeout_seconds;
    evaluator.measurement = options.measurement;
    evaluator.cubin_cache_dir = options.cubin_cache_dir;
    // A measurer always sets up: its worker opens the device while the session enumerates the space.
    evaluator.open_device_early = true;
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
    for (const Argument& argument : spec_.arguments) {
      if (argument.is_scalar()) launch.scalar_values[argument.name] = to_scalar(evaluate_in(argument.value, bindings));
      if (argument.tensor_map) {
        TensorMapBox& box = launch.tensor_maps[argument.name];
        for (const Expression& size : argument.tensor_map->box) box.box.push_back(evaluate_integer_in(size, bindings, 1));
        box.swizzle_bytes = evaluate_integer_in(argument.tensor_map->swizzle, bindings, 0);
      }
    }
    return launch;
  }

  int argument_index(const std::string& name) const {
    for (std::size_t index = 0; index < spec_.arguments.size(); ++index)
      if (spec_.arguments[index].name == name) return static_cast<int>(index);
    throw InputError(fmt::format("{}: no argument named '{}'", spec_.file.string(), name));
  }

  double scalar_argument(const std::string& name, const Bindings& bindings) const {
    const Argument& argument = spec_.arguments.at(static_cast<std::size_t>(argument_index(name)));
    return std::visit([](auto held) { return static_cast<double>(held); }, to_scalar(evaluate_in(argument.value, bindings)));
  }

  BaselineCall baseline_call(const Bindings& bindings) const {
    const Baseline& baseline = spec_.baseline;
    BaselineCall call;
    call.library = "cublas";
    call.operation = baseline.operation;
    call.compute = baseline.compute;
    call.m = evaluate_integer_in(baseline.m, bindings, 0);
    call.n = evaluate_integer_in(baseline.n, bindings, 0);
    call.k = evaluate_integer_in(baseline.k, bindings, 0);
    call.transpose_b = !baseline.transpose_b.empty() && evaluate_integer_in(baseline.transpose_b, bindings, 0) != 0;
    call.a = argument_index(baseline.a);
    call.b = argument_index(baseline.b);
    call.c = argument_index(baseline.c);
    call.alpha = scalar_argument(baseline.alpha, bindings);
    call.beta = scalar_argument(baseline.beta, bindings);
    return call;
  }

  KernelSpec spec_;
  GpuMeasurerOptions options_;
  GpuEvaluator evaluator_;
  gpu::DeviceInfo info_;
  double copy_bandwidth_gbps_ = 0;
  std::vector<ProfilePhase> phases_;
  bool burst_next_ = false;  // rest() ran: the next measurement is a burst timing
};

}  // namespace

std::unique_ptr<Measurer> make_gpu_measurer(const KernelSpec& spec, const GpuMeasurerOptions& options) {
  return std::make_unique<GpuMeasurer>(spec, options);
}

Ceilings query_gpu_ceilings(int index) {
  GpuEvaluatorOptions options;
  options.worker_executable = current_executable();
  options.device = index;
  GpuEvaluator evaluator(options);
  return evaluator.ceilings();
}

DeviceProperties query_gpu_properties(int index) {
  GpuEvaluatorOptions options;
  options.worker_executable = current_executable();
  options.device = index;
  GpuEvaluator evaluator(options);
  return evaluator.device_properties();
}

}  // namespace kernlathe
