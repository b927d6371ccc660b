#pragma once
// A kernel's template and every project file it includes, as one JSON document (<kernel>.source.json): what
// `tune export` ships beside the database so that an application can compile the kernel for an arch that was not
// exported, and what `--embed` compiles into the application.
//   {"format": 1, "kernel": "gemm_bf16", "template": "gemm.cu", "template_hash": "...", "text": "...",
//    "headers": [{"name": "gemm/common.cuh", "text": "..."}, ...]}

#include <filesystem>
#include <string>

#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {

// Sources as the runtime reads them, with their template_hash computed once when they were read: plan_kernel checks
// it against the database at every plan, and hashing gemm_bf16's 100 KiB of sources took 0.1 ms each time
// (benchmarks/bench_runtime_plan.cpp). The readers below fill both; whoever edits `source` must hash it again.
struct KernelSources {
  TemplateSource source;
  std::string template_hash;  // template_hash(source)
};

std::string source_bundle_json(const std::string& kernel, const TemplateSource& source);

// Throws RuntimeError (kernlathe/runtime.h) naming origin when the text is not a bundle, or when its recorded
// template hash does not match its contents.
KernelSources parse_source_bundle(const std::string& json_text, const std::string& origin);

// The sources of a kernel from a directory: <directory>/<kernel>.source.json when it exists, otherwise the template
// file <directory>/<template_name> with the files it includes. Throws RuntimeError when neither exists.
KernelSources read_kernel_sources(const std::filesystem::path& directory, const std::string& kernel,
                                  const std::string& template_name);

}  // namespace kernlathe
