// kernlathe/stream.h: the runtime's face of the streaming pipeline (tuner/loader), which `tune` measures streamed
// specs with. The pipeline, its driver layer and the file readers are the same code; this file adapts the public
// types to them and turns their errors into RuntimeErrors.
#include "kernlathe/stream.h"

#include <exception>
#include <mutex>

#include <fmt/format.h>

#include "tuner/loader/cuda_pipeline_device.h"
#include "tuner/loader/dataset.h"
#include "tuner/loader/pipeline.h"
#include "tuner/runtime/runtime_access.h"
#include "tuner/spec/model.h"

namespace kernlathe {

namespace {

// An application's ItemSource seen by the pipeline.
class SourceAdapter final : public loader::BatchSource {
 public:
  explicit SourceAdapter(const ItemSource& source) : source_(source) {}
  std::int64_t item_count() const override { return source_.item_count(); }
  std::size_t item_bytes() const override { return source_.item_bytes(); }
  void read(const loader::BatchRange& batch, std::span<std::byte> destination) const override {
    source_.read(ItemBatch{batch.index, batch.first_item, batch.item_count}, destination);
  }

 private:
  const ItemSource& source_;
};

// The pipeline's file reader seen by an application.
class FileItems final : public ItemSource {
 public:
  explicit FileItems(std::unique_ptr<loader::BatchSource> files) : files_(std::move(files)) {}
  std::int64_t item_count() const override { return files_->item_count(); }
  std::size_t item_bytes() const override { return files_->item_bytes(); }
  void read(const ItemBatch& batch, std::span<std::byte> destination) const override {
    files_->read(loader::BatchRange{batch.index, batch.first_item, batch.item_count}, destination);
  }

 private:
  std::unique_ptr<loader::BatchSource> files_;
};

loader::LoaderConfiguration configuration_of(const LoaderSettings& settings) {
  loader::LoaderConfiguration configuration;
  configuration.pinned = settings.pinned;
  configuration.workers = settings.workers;
  configuration.prefetch = settings.prefetch;
  configuration.streams = settings.streams;
  configuration.batch = settings.batch;
  configuration.chunk_bytes = settings.chunk_bytes;
  return configuration;
}

}  // namespace

std::string LoaderSettings::to_string() const { return configuration_of(*this).to_string(); }

std::int64_t ItemLayout::elements() const {
  std::int64_t product = 1;
  for (std::int64_t dimension : shape) product *= dimension;
  return product;
}

std::size_t ItemLayout::bytes() const { return static_cast<std::size_t>(elements()) * dtype_bytes(dtype); }

std::vector<std::filesystem::path> files_matching(const std::string& pattern) {
  try {
    return loader::glob_files(pattern);
  } catch (const std::exception& error) {
    throw RuntimeError(error.what());
  }
}

std::unique_ptr<ItemSource> open_item_files(const std::vector<std::filesystem::path>& files, const ItemLayout& item,
                                            FileFormat format, std::int64_t items) {
  std::optional<Dtype> dtype = parse_dtype(item.dtype);
  if (!dtype) throw RuntimeError(fmt::format("open_item_files: unknown dtype '{}'", item.dtype));
  if (files.empty()) throw RuntimeError("open_item_files: no files given");
  if (items < 0) throw RuntimeError(fmt::format("open_item_files: {} items asked for", items));
  loader::FileDatasetOptions options;
  options.files = files;
  options.format = format == FileFormat::npy ? StreamWorkload::FileFormat::npy : StreamWorkload::FileFormat::raw;
  options.dtype = *dtype;
  options.item_shape = item.shape;
  options.items = items;
  try {
    return std::make_unique<FileItems>(loader::open_file_dataset(options));
  } catch (const std::exception& error) {
    throw RuntimeError(error.what());
  }
}

// ---------------------------------------------------------------- StreamedKernel

struct StreamedKernel::State {
  const Kernel* kernel = nullptr;
  const StreamPlan* plan = nullptr;
  LoaderSettings loader;
  CUcontext context = nullptr;
  std::mutex mutex;  // one run at a time: the pipeline device's buffers are the run's
  std::unique_ptr<loader::CudaPipelineDevice> device;
};

StreamedKernel::StreamedKernel(Runtime& runtime, const std::string& name, const Problem& problem)
    : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.kernel = &runtime.kernel(name, problem);
  const KernelPlan& plan = RuntimeAccess::plan(*state.kernel);
  if (!plan.stream) {
    throw RuntimeError(fmt::format("{}: not a streamed kernel (its spec has no stream: section); launch it with "
                                   "Runtime::kernel()", name));
  }
  state.plan = &*plan.stream;
  state.loader = plan.stream->loader;
  state.context = RuntimeAccess::context(runtime);
  try {
    state.device = std::make_unique<loader::CudaPipelineDevice>(state.context);
  } catch (const std::exception& error) {
    throw RuntimeError(fmt::format("{}: {}", name, error.what()));
  }
}

StreamedKernel::~StreamedKernel() = default;

const Kernel& StreamedKernel::kernel() const { return *state_->kernel; }
const LoaderSettings& StreamedKernel::loader() const { return state_->loader; }
const ItemLayout& StreamedKernel::input_item() const { return state_->plan->input_item; }
const ItemLayout& StreamedKernel::output_item() const { return state_->plan->output_item; }
std::int64_t StreamedKernel::tuned_items() const { return state_->plan->tuned_items; }
const std::string& StreamedKernel::input_argument() const {
  return RuntimeAccess::plan(*state_->kernel).arguments[static_cast<std::size_t>(state_->plan->input_argument)].description.name;
}
const std::string& StreamedKernel::output_argument() const {
  return RuntimeAccess::plan(*state_->kernel).arguments[static_cast<std::size_t>(state_->plan->output_argument)].description.name;
}

void StreamedKernel::set_loader(const LoaderSettings& settings) {
  State& state = *state_;
  const std::string& name = state.kernel->name();
  if (settings.workers < 1 || settings.prefetch < 1 || settings.streams < 1 || settings.chunk_bytes < 0)
    throw RuntimeError(fmt::format("{}: loader settings {} are out of range (at least 1 worker, 1 batch in flight and 1 "
                                   "stream; chunk 0 or more)", name, settings.to_string()));
  if (settings.batch != state.plan->loader.batch)
    throw RuntimeError(fmt::format("{}: batch {} asked for, but the selected configuration's launch grid covers batches "
                                   "of {}", name, settings.batch, state.plan->loader.batch));
  std::lock_guard lock(state.mutex);
  state.loader = settings;
}

StreamReport StreamedKernel::run(const ItemSource& source, const Arguments& arguments, const BatchConsumer& consume) {
  State& state = *state_;
  std::lock_guard lock(state.mutex);
  const Kernel& kernel = *state.kernel;
  const StreamPlan& plan = *state.plan;
  if (source.item_bytes() != plan.input_item.bytes()) {
    throw RuntimeError(fmt::format("{}: the source's items have {} bytes, the kernel's input items {} ({} of shape {})",
                                   kernel.name(), source.item_bytes(), plan.input_item.bytes(), plan.input_item.dtype,
                                   fmt::join(plan.input_item.shape, "x")));
  }
  for (const Arguments::Item& item : arguments.items()) {
    if (item.name == input_argument() || item.name == output_argument())
      throw RuntimeError(fmt::format("{}: '{}' is the stream's {} buffer: the pipeline sets it per batch", kernel.name(),
                                     item.name, item.name == input_argument() ? "input" : "output"));
  }
  // The pipeline's buffers are placed per batch; null until then.
  Arguments all = arguments;
  all.set(input_argument(), static_cast<const void*>(nullptr)).set(output_argument(), static_cast<const void*>(nullptr));
  BoundLaunch bound = kernel.bind(all);

  const KernelPlan& kernel_plan = RuntimeAccess::plan(kernel);
  loader::BatchKernel batch_kernel;
  batch_kernel.function = RuntimeAccess::function(kernel);
  for (std::size_t axis = 0; axis < 3; ++axis) {
    batch_kernel.grid[axis] = static_cast<unsigned int>(kernel_plan.grid[axis]);
    batch_kernel.block[axis] = static_cast<unsigned int>(kernel_plan.block[axis]);
  }
  batch_kernel.dynamic_shared_bytes = static_cast<unsigned int>(kernel_plan.dynamic_shared_bytes);
  batch_kernel.parameters = RuntimeAccess::parameters(bound);
  batch_kernel.input_parameter = plan.input_argument;
  batch_kernel.output_parameter = plan.output_argument;

  // The first exception a consumer throws stops the pipeline (as a failed check does) and is rethrown here. Without
  // a consumer the pipeline gets no check at all: the completer then frees each slot itself instead of handing it to
  // a host worker first, as in `tune`'s timed passes (H200, conv3x3_stream_small: 18.0 ms a pass with an empty
  // check, 13.3 ms recorded by tune without one).
  std::mutex consumer_mutex;
  std::exception_ptr consumer_error;
  loader::BatchCheck check;
  if (consume) {
    check = [&](const loader::BatchRange& batch, std::span<const std::byte> results) -> std::optional<std::string> {
      try {
        consume(ItemBatch{batch.index, batch.first_item, batch.item_count}, results);
        return std::nullopt;
      } catch (...) {
        std::lock_guard hold(consumer_mutex);
        if (!consumer_error) consumer_error = std::current_exception();
        return fmt::format("the consumer of batch {} threw", batch.index);
      }
    };
  }

  SourceAdapter adapter(source);
  loader::PipelineResult result;
  try {
    state.device->enter_thread();
    state.device->set_kernel(batch_kernel, state.loader.batch);
    result = loader::run_pipeline(adapter, plan.output_item.bytes(), *state.device, configuration_of(state.loader), check);
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& error) {
    throw RuntimeError(fmt::format("{}: {}", kernel.name(), error.what()));
  }
  if (consumer_error) std::rethrow_exception(consumer_error);
  if (!result.ok()) throw RuntimeError(fmt::format("{}: {}", kernel.name(), result.message));

  const loader::StageBreakdown& stages = result.breakdown;
  StreamReport report;
  report.items = stages.items;
  report.batches = stages.batches;
  report.seconds = stages.end_to_end_ms / 1e3;
  report.items_per_second = stages.items_per_second;
  report.input_gbps = stages.input_bytes_per_second / 1e9;
  report.gpu_busy_fraction = stages.end_to_end_ms > 0 ? stages.gpu_busy_ms / stages.end_to_end_ms : 0;
  report.max_in_flight = result.max_in_flight;
  report.loader = state.loader;
  return report;
}

}  // namespace kernlathe
