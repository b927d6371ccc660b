#pragma once
// Streamed kernels through kernlathe's runtime: an application feeds its own items (files on disk, or anything it
// can read into memory) through the same pipeline `tune` measured, with the loader settings tuned for this GPU.
//
//   kernlathe::Runtime runtime(kernlathe::RuntimeOptions::from_export("export"));
//   kernlathe::StreamedKernel conv(runtime, "conv3x3_stream_small", {{"W", 64}, {"H", 64}});
//   auto images = kernlathe::open_item_files(kernlathe::files_matching("data/images_*.npy"), conv.input_item());
//   kernlathe::StreamReport report = conv.run(*images, kernlathe::Arguments().set("filter", filter),
//       [&](const kernlathe::ItemBatch& batch, std::span<const std::byte> results) { ... });
//
// Host workers read batches into staging buffers (pinned or pageable, as tuned), batches are copied to the GPU on
// several streams, the kernel runs on each, results come back, and the consumer is called with each batch's results
// on a host worker (several batches at once, in any order; a batch's buffer is reused once the consumer returns).
// The input and output buffers are the pipeline's; the application sets the kernel's other arguments.
//
// One run at a time per StreamedKernel (run() holds a lock); its staging and device buffers are kept between runs.
// This header includes no CUDA header.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernlathe/runtime.h"

namespace kernlathe {

// How items reach the GPU: what `tune` tunes with the kernel for streamed specs.
struct LoaderSettings {
  bool pinned = false;          // page-locked staging buffers (cuMemHostAlloc) rather than pageable memory
  int workers = 1;              // host threads reading items
  int prefetch = 1;             // batches in flight (being read, copied, computed or consumed)
  int streams = 1;              // copy/compute streams, used round-robin
  std::int64_t batch = 1;       // items per batch; fixed by the configuration (it is part of the launch grid)
  std::int64_t chunk_bytes = 0; // host-to-device copies in pieces of this size; 0: one copy per batch

  std::string to_string() const;  // "pinned=1 workers=4 prefetch=8 streams=2 batch=64 chunk=0"
  bool operator==(const LoaderSettings&) const = default;
};

// The element type and shape of one item ("f32", {64, 64}).
struct ItemLayout {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::int64_t elements() const;
  std::size_t bytes() const;
};

// Batch `index` holds items [first_item, first_item + item_count); the last batch may be short.
struct ItemBatch {
  std::int64_t index = 0;
  std::int64_t first_item = 0;
  std::int64_t item_count = 0;
};

// Where a run's items come from. read() is called from several host workers at once, each with its own batch.
class ItemSource {
 public:
  virtual ~ItemSource() = default;
  virtual std::int64_t item_count() const = 0;
  virtual std::size_t item_bytes() const = 0;
  // Fills destination (exactly batch.item_count * item_bytes() bytes) with the batch's items; throws to stop the run.
  virtual void read(const ItemBatch& batch, std::span<std::byte> destination) const = 0;
};

// Files whose name matches a glob (* and ? in the file name only), sorted by name. Throws RuntimeError when the
// folder does not exist or nothing matches.
std::vector<std::filesystem::path> files_matching(const std::string& pattern);

enum class FileFormat { npy, raw };

// Items from .npy files (little-endian, C order, trailing dimensions equal to the item shape, dtype as the item's;
// one item per file or many along a leading dimension) or raw files (a whole number of items each). Each file is
// opened once and read with pread straight into the staging buffers. `items` 0 serves every item of the files.
// Throws RuntimeError naming the file for a header or size that does not fit, or fewer items than asked for.
std::unique_ptr<ItemSource> open_item_files(const std::vector<std::filesystem::path>& files, const ItemLayout& item,
                                            FileFormat format = FileFormat::npy, std::int64_t items = 0);

// Called with each batch's results (batch.item_count * output_item().bytes() bytes), from host workers, several
// batches at once. An exception stops the run and is rethrown by run().
using BatchConsumer = std::function<void(const ItemBatch& batch, std::span<const std::byte> results)>;

// What a run did, timed from the first read to the last result consumed.
struct StreamReport {
  std::int64_t items = 0;
  std::int64_t batches = 0;
  double seconds = 0;
  double items_per_second = 0;
  double input_gbps = 0;       // host-to-device bytes per nanosecond of the whole run
  double gpu_busy_fraction = 0; // share of the run with a copy or the kernel on the GPU
  int max_in_flight = 0;        // most batches in flight at once (at most prefetch)
  LoaderSettings loader;
};

class StreamedKernel {
 public:
  // Selects, compiles and loads the kernel through runtime.kernel(name, problem) and evaluates its loader settings
  // for the selected configuration. Throws RuntimeError when the kernel is not a streamed one.
  StreamedKernel(Runtime& runtime, const std::string& name, const Problem& problem = {});
  ~StreamedKernel();
  StreamedKernel(const StreamedKernel&) = delete;
  StreamedKernel& operator=(const StreamedKernel&) = delete;

  const Kernel& kernel() const;           // the per-batch kernel, its selection and how it was obtained
  const LoaderSettings& loader() const;   // the tuned settings (or the naive ones on the ladder's last rung)
  // Other settings for the next runs (e.g. to compare with the naive loader); batch must stay as selected, since
  // the launch grid covers one batch. Throws RuntimeError for settings below 1 or another batch.
  void set_loader(const LoaderSettings& settings);
  const ItemLayout& input_item() const;   // what one item of an ItemSource must be
  const ItemLayout& output_item() const;  // what the consumer gets per item
  std::int64_t tuned_items() const;       // items per pass that `tune` streams at this problem (the spec's stream.items)
  const std::string& input_argument() const;
  const std::string& output_argument() const;

  // Streams every item of `source` through the kernel. `arguments` sets the kernel's other arguments (device
  // pointers and scalars, as Kernel::bind takes them); the input and output buffers are the pipeline's. Throws
  // RuntimeError when the source's items do not have the input item's size, a read fails (naming the batch), or
  // the GPU reports an error; rethrows the consumer's exception.
  StreamReport run(const ItemSource& source, const Arguments& arguments, const BatchConsumer& consume);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kernlathe
