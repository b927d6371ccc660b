#include "tuner/run/streamed_evaluation.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "tuner/loader/pipeline.h"

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail_with(const loader::PipelineResult& pass) {
  const bool host = pass.failure == loader::PipelineFailure::loader;
  throw ConfigurationFailure{host ? Status::launch_error : Status::wrong_result,
                             host ? "host loader: " + pass.message : pass.message};
}

}  // namespace

StreamedEvaluation::StreamedEvaluation(const WorkerSetup& setup, CUcontext context) : setup_(setup) {
  const WorkerStream& stream = *setup_.stream;
  std::int64_t item_elements = 1;
  for (std::int64_t dimension : stream.item_shape) item_elements *= dimension;
  if (stream.files.empty()) {
    source_ = loader::make_generated_dataset(stream.dtype, item_elements, stream.items, stream.generator);
  } else {
    loader::FileDatasetOptions options;
    for (const std::string& file : stream.files) options.files.emplace_back(file);
    options.format = stream.npy ? StreamWorkload::FileFormat::npy : StreamWorkload::FileFormat::raw;
    options.dtype = stream.dtype;
    options.item_shape = stream.item_shape;
    options.items = stream.items;
    source_ = loader::open_file_dataset(options);
  }
  device_ = std::make_unique<loader::CudaPipelineDevice>(context);
  const std::size_t reference_bytes = static_cast<std::size_t>(stream.items) * output_item_bytes();
  reference_memory_ = std::async(std::launch::async, [reference_bytes] {
    return loader::ResidentBuffer(reference_bytes, loader::host_job_threads());
  });
}

std::size_t StreamedEvaluation::output_item_bytes() const {
  const WorkerStream& stream = *setup_.stream;
  const WorkerArgument& output = setup_.arguments.at(static_cast<std::size_t>(stream.output_argument));
  return static_cast<std::size_t>(stream.output_item_elements) * dtype_size(output.dtype);
}

loader::BatchKernel StreamedEvaluation::batch_kernel(const PreparedKernel& kernel) const {
  loader::BatchKernel batch;
  batch.function = kernel.function;
  batch.grid = kernel.grid;
  batch.block = kernel.block;
  batch.dynamic_shared_bytes = kernel.dynamic_shared_bytes;
  batch.parameters = kernel.parameters;
  batch.input_parameter = setup_.stream->input_argument;
  batch.output_parameter = setup_.stream->output_argument;
  return batch;
}

ReferencePassTimes StreamedEvaluation::run_reference(const PreparedKernel& reference, std::string& phase) {
  using Milliseconds = std::chrono::duration<double, std::milli>;
  ReferencePassTimes times;
  Clock::time_point start = Clock::now();
  if (reference_memory_.valid()) reference_ = reference_memory_.get();
  times.memory_wait_ms = Milliseconds(Clock::now() - start).count();
  const WorkerStream& stream = *setup_.stream;
  const std::size_t item_bytes = output_item_bytes();
  const int threads = loader::host_job_threads();
  phase = "stream reference pass";
  start = Clock::now();
  device_->set_kernel(batch_kernel(reference), stream.reference_loader.batch);
  device_->set_poison_outputs(true);
  loader::PipelineResult result = loader::run_pipeline(
      *source_, item_bytes, *device_, stream.reference_loader,
      [&](const loader::BatchRange& batch, std::span<const std::byte> output) -> std::optional<std::string> {
        // The reference loader checks on its one worker: a large batch's copy is shared with helper threads, a
        // thread per MiB at most (16 MiB a batch in two of the shipped examples).
        std::byte* destination = reference_.data() + static_cast<std::size_t>(batch.first_item) * item_bytes;
        const int parts = static_cast<int>(std::min<std::size_t>(threads, output.size() >> 20));
        loader::run_in_parallel(output.size(), parts, 4096, [&](std::size_t begin, std::size_t end) {
          std::memcpy(destination + begin, output.data() + begin, end - begin);
        });
        return std::nullopt;
      });
  device_->set_poison_outputs(false);
  times.pass_ms = Milliseconds(Clock::now() - start).count();
  if (!result.ok()) throw ConfigurationFailure{Status::launch_error, result.message};
  if (setup_.verification_enabled) {
    // Poison (NaN) left in the reference is an element the reference never wrote: it would fail every configuration.
    start = Clock::now();
    const WorkerArgument& output = setup_.arguments.at(static_cast<std::size_t>(stream.output_argument));
    loader::BatchRange everything{0, 0, stream.items};
    std::span<const std::byte> all = reference_.span();
    if (auto unwritten = loader::compare_batch_in_parallel(output.dtype, Tolerance{}, everything,
                                                           stream.output_item_elements, all, all, threads)) {
      throw TunerError("the reference configuration left stream outputs unwritten or NaN: " + *unwritten);
    }
    times.check_ms = Milliseconds(Clock::now() - start).count();
  }
  return times;
}

void StreamedEvaluation::measure(const PreparedKernel& kernel, const loader::LoaderConfiguration& settings, bool verify,
                                 Evaluation& result, std::string& phase) {
  const WorkerStream& stream = *setup_.stream;
  if (settings.batch < 1 || stream.items % settings.batch != 0) {
    throw ConfigurationFailure{Status::launch_error,
                               fmt::format("loader batch {} does not divide the stream's {} items (the launch "
                                           "geometry covers whole batches)",
                                           settings.batch, stream.items)};
  }
  device_->set_kernel(batch_kernel(kernel), settings.batch);
  const std::size_t item_bytes = output_item_bytes();
  if (verify) {
    phase = "verified stream pass";
    const WorkerArgument& output = setup_.arguments.at(static_cast<std::size_t>(stream.output_argument));
    Tolerance tolerance;
    if (auto found = setup_.tolerance.find(output.dtype); found != setup_.tolerance.end()) tolerance = found->second;
    device_->set_poison_outputs(true);
    loader::PipelineResult verified = loader::run_pipeline(
        *source_, item_bytes, *device_, settings, [&](const loader::BatchRange& batch, std::span<const std::byte> got) {
          std::span<const std::byte> expected(reference_.data() + static_cast<std::size_t>(batch.first_item) * item_bytes,
                                              got.size());
          return loader::compare_batch(output.dtype, tolerance, batch, stream.output_item_elements, got, expected);
        });
    device_->set_poison_outputs(false);
    if (!verified.ok()) fail_with(verified);
  }
  // Timed passes: whole passes over the dataset, so the median includes start-up and drain, as a user sees it.
  phase = "timed stream passes";
  std::vector<loader::PipelineResult> passes;
  std::vector<double> samples;
  const Clock::time_point start = Clock::now();
  auto elapsed_seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  do {
    loader::PipelineResult pass = loader::run_pipeline(*source_, item_bytes, *device_, settings, nullptr);
    if (!pass.ok()) fail_with(pass);
    samples.push_back(pass.breakdown.end_to_end_ms);
    passes.push_back(std::move(pass));
  } while (!measurement_complete(samples, elapsed_seconds(), setup_.measurement));
  std::vector<std::size_t> order(passes.size());
  for (std::size_t index = 0; index < order.size(); ++index) order[index] = index;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return samples[a] < samples[b]; });
  const loader::StageBreakdown& median = passes[order[order.size() / 2]].breakdown;
  result.time = summarise(samples);
  result.stream.end_to_end_ms = median.end_to_end_ms;
  result.stream.host_read_ms = median.host_read_ms;
  result.stream.copy_in_ms = median.copy_in_ms;
  result.stream.kernel_ms = median.kernel_ms;
  result.stream.copy_out_ms = median.copy_out_ms;
  result.stream.gpu_idle_ms = median.gpu_idle_ms;
  result.stream.items_per_second = median.items_per_second;
  result.stream.bytes_per_second = median.bytes_per_second;
  result.stream.input_gbps = median.input_bytes_per_second / 1e9;
}

}  // namespace kernlathe
