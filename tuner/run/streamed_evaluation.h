#pragma once
// Streamed workloads in the evaluation worker (tuner/loader, issue 7): a configuration is measured over whole
// passes through the dataset, as an application streams it, and verified against a reference pass of the
// reference configuration with the naive loader, whose outputs stay on the host.

#include <cstddef>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tuner/loader/cuda_pipeline_device.h"
#include "tuner/loader/dataset.h"
#include "tuner/loader/host_memory.h"
#include "tuner/measure/measurement.h"
#include "tuner/record/evaluation.h"
#include "tuner/run/kernel_preparation.h"
#include "tuner/run/protocol.h"

namespace kernlathe {

// Where the reference pass's time went, for the start-up profile.
struct ReferencePassTimes {
  double memory_wait_ms = 0;  // waiting for the reference outputs' memory to be made resident
  double pass_ms = 0;         // the naive pass, its outputs copied into that memory
  double check_ms = 0;        // the outputs checked for elements the reference never wrote
};

class StreamedEvaluation {
 public:
  // Opens the items (generated, or the stream's files) for setup.stream, in `context`, and begins making the
  // reference outputs' memory resident on other threads.
  StreamedEvaluation(const WorkerSetup& setup, CUcontext context);

  // The reference pass: `reference` (the reference configuration, prepared) over every item with the naive
  // loader; its outputs are kept. Throws ConfigurationFailure when the pass fails, TunerError when the reference
  // left outputs unwritten (NaN) while verification is on.
  ReferencePassTimes run_reference(const PreparedKernel& reference, std::string& phase);

  // A verified pass (when `verify`) and timed passes under the setup's measurement rule with the loader settings
  // `loader`; fills the time (end-to-end per pass) and the stage breakdown of the median pass. Throws
  // ConfigurationFailure: launch_error for a batch that does not divide the items or a failing host loader,
  // wrong_result for a mismatch.
  void measure(const PreparedKernel& kernel, const loader::LoaderConfiguration& loader, bool verify,
               Evaluation& result, std::string& phase);

 private:
  std::size_t output_item_bytes() const;
  loader::BatchKernel batch_kernel(const PreparedKernel& kernel) const;

  const WorkerSetup& setup_;  // the worker's, alive as long as this object
  std::unique_ptr<loader::BatchSource> source_;
  std::unique_ptr<loader::CudaPipelineDevice> device_;
  std::future<loader::ResidentBuffer> reference_memory_;  // made resident while the worker does the rest
  loader::ResidentBuffer reference_;
};

}  // namespace kernlathe
