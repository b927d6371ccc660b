#pragma once
// Streamed workloads in the evaluation worker (tuner/loader, issue 7): a configuration is measured over whole
// passes through the dataset, as an application streams it, and verified against a reference pass of the
// reference configuration with the naive loader, whose outputs stay on the host.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tuner/loader/cuda_pipeline_device.h"
#include "tuner/loader/dataset.h"
#include "tuner/measure/measurement.h"
#include "tuner/record/evaluation.h"
#include "tuner/run/kernel_preparation.h"
#include "tuner/run/protocol.h"

namespace kernlathe {

class StreamedEvaluation {
 public:
  // Opens the items (generated, or the stream's files) for setup.stream, in `context`.
  StreamedEvaluation(const WorkerSetup& setup, CUcontext context);

  // The reference pass: `reference` (the reference configuration, prepared) over every item with the naive
  // loader; its outputs are kept. Throws ConfigurationFailure when the pass fails, TunerError when the reference
  // left outputs unwritten (NaN) while verification is on.
  void run_reference(const PreparedKernel& reference, std::string& phase);

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
  std::vector<std::byte> reference_;
};

}  // namespace kernlathe
