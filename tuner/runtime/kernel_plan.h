#pragma once
// Everything about launching a tuned kernel that needs no GPU: the selection (the ladder of kernlathe/database.h),
// the values every expression of the kernel takes for the requested problem on this device, the compile request,
// the launch geometry and what each argument is. The Runtime (kernlathe/runtime.h) turns a plan into a loaded
// module and launches; tests check plans on any machine.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernlathe/database.h"
#include "kernlathe/stream.h"
#include "tuner/nvrtc/compile_request.h"
#include "tuner/runtime/source_bundle.h"

namespace kernlathe {

struct ArgumentPlan {
  ArgumentDescription description;
  std::size_t element_bytes = 0;  // buffers and tensor maps: bytes per element of the (described) buffer
  std::int64_t count = 0;         // buffers: elements at the requested problem
  Value default_value;            // scalars: the kernel's default at the requested problem
  // tensor maps: shape (innermost first) and box in elements, swizzle span in bytes, the buffer's index
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> box;
  std::int64_t swizzle_bytes = 0;
  std::vector<std::int64_t> strides;  // tensor maps: of dims 1 .. rank - 1 in elements; empty: dense
  int buffer_index = -1;
};

// Streamed kernels: which arguments the pipeline owns, what an item is, and the loader settings of the selection.
struct StreamPlan {
  int input_argument = -1;   // index into KernelPlan::arguments
  int output_argument = -1;
  ItemLayout input_item;     // the description's dtype and item shape
  ItemLayout output_item;    // the output buffer's dtype; one dimension, its count (per item)
  std::int64_t tuned_items = 0;  // items of the workload the kernel was tuned on
  LoaderSettings loader;
};

struct KernelPlan {
  Selection selection;
  Problem problem;  // the requested problem, completed with the kernel's defaults
  CompileRequest request;
  // embedded_key() of the request without the unkeyed values: the name of the cubin in embedded and exported sets.
  std::string embedded_key;
  // Derived values that depend on a device property other than the arch (sm_count, directly or through another
  // derived value) and that no file of the sources names: they are bound at launch (grid, shared memory,
  // arguments) and cannot change the binary, so they stay out of embedded_key and one cubin serves every board of
  // the arch (issue 36: an sm_90 export built with the H100 SXM's 132 SMs missed on an H100 PCIe's 114). Those the
  // sources do name (gemm's WG_SPLITS) are compiled in and stay in the key.
  std::vector<std::string> unkeyed_values;
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t dynamic_shared_bytes = 0;
  std::vector<ArgumentPlan> arguments;  // in the kernel's parameter order
  std::optional<StreamPlan> stream;     // streamed kernels only
};

// select(), and a RuntimeError (kernlathe/runtime.h) when no candidate is usable (Rung::none): "KERNEL: no usable
// configuration for DEVICE (ARCH) at PROBLEM: the default configuration (ORIGIN) breaks the constraint ...". The one
// place the runtime, plan_kernel and `tune best --select` turn an unusable ladder into that error.
Selection select_usable(const KernelDatabase& database, const DeviceIdentity& device, const Problem& requested,
                        const SelectOptions& options = {});

// Selects a configuration (select_usable) and evaluates the kernel's expressions for it. Throws RuntimeError
// (kernlathe/runtime.h) naming the kernel when no configuration is usable, an expression cannot be evaluated, the
// launch geometry is out of range, an argument is malformed, or the sources do not match the database (template
// hash).
KernelPlan plan_kernel(const KernelDatabase& database, const TemplateSource& source, const DeviceIdentity& device,
                       const Problem& requested, const SelectOptions& options = {});
// The same with sources whose template hash was computed when they were read (the runtime's way): 100 KiB of
// sources are not hashed again to be checked.
KernelPlan plan_kernel(const KernelDatabase& database, const KernelSources& sources, const DeviceIdentity& device,
                       const Problem& requested, const SelectOptions& options = {});

// A key for embedded cubins that needs no NVRTC: a hash of the source, the headers, the entry point, the arch and
// the options other than include paths (which differ between machines).
std::string embedded_key(const CompileRequest& request);

// The derived values of a description that read a device property other than arch, arch_major and arch_minor
// (directly or through an earlier derived value), in declared order; device_properties are the names a device
// gives expressions.
std::vector<std::string> device_dependent_values(const KernelDescription& description,
                                                 const std::vector<std::string>& device_properties);

// Whether name occurs as a whole identifier in the template text or any of its files, comments included (so the
// check errs on the side of keying a value). A macro that no file names cannot change what NVRTC compiles (short of
// token pasting, which no shipped template uses for these names).
bool sources_name(const TemplateSource& source, const std::string& name);

// Bytes per element of a dtype name ("f32" -> 4); 0 for an unknown name.
std::size_t dtype_bytes(const std::string& dtype);

}  // namespace kernlathe
