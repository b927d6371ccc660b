#pragma once
// Where a streamed workload's items come from: .npy or raw binary files on disk, or a deterministic generator.
//
// A dataset is a sequence of equally sized items. Files may hold one item each or many (a leading dimension), so
// thousands of small images need not mean thousands of open() calls per pass: every file is opened once, and a
// batch is read with pread() straight into the staging buffer (pinned or not), which several host workers may do
// at the same time. No CUDA here: the readers are tested on any machine.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tuner/spec/model.h"

namespace kernlathe::loader {

// A contiguous run of items: batch `index` holds items [first_item, first_item + item_count).
struct BatchRange {
  std::int64_t index = 0;
  std::int64_t first_item = 0;
  std::int64_t item_count = 0;
};

// Reads or produces batches. read() is called from several host worker threads at once.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual std::int64_t item_count() const = 0;
  virtual std::size_t item_bytes() const = 0;
  // Fills destination (exactly item_count * item_bytes bytes) with the batch's items. Throws TunerError naming
  // the file and the batch when an item cannot be read.
  virtual void read(const BatchRange& batch, std::span<std::byte> destination) const = 0;
};

// ---------------------------------------------------------------- .npy

// The parts of a .npy header the loader checks (NumPy format 1.0-3.0).
struct NpyHeader {
  std::string descr;                // "<f4"
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;      // bytes from the start of the file to the first element
};

// Parses the header at the start of `bytes` (at least the whole header). Throws InputError naming `file` when the
// magic, version or dictionary is malformed.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& file);
NpyHeader read_npy_header(const std::filesystem::path& file);

// The NumPy descr of a dtype: "<f4" for f32, "<f2" for f16, "<u2" for bf16 (NumPy has no bfloat16), "|i1" ...
std::string npy_descr(Dtype dtype);

// Writes a little-endian C-order array. Throws TunerError when the file cannot be written.
void write_npy(const std::filesystem::path& file, Dtype dtype, const std::vector<std::int64_t>& shape,
               std::span<const std::byte> data);

// ---------------------------------------------------------------- datasets

// Expands ${NAME} and ${NAME:-default} from the environment; an unset variable without a default is an InputError.
std::string expand_environment(const std::string& text);

// Files matching a glob whose wildcards (* and ?) are in the file name only, sorted by name so item order is
// stable. InputError naming the pattern when the folder does not exist or nothing matches: pattern_as_written
// when given (the spec's text before expand_environment, so no environment value reaches a message), else pattern.
std::vector<std::filesystem::path> glob_files(const std::string& pattern, const std::string& pattern_as_written = "");

struct FileDatasetOptions {
  std::vector<std::filesystem::path> files;
  StreamWorkload::FileFormat format = StreamWorkload::FileFormat::npy;
  Dtype dtype = Dtype::f32;
  std::vector<std::int64_t> item_shape;
  std::int64_t items = 0;  // items to serve, from the first file on; the files may hold more; 0: all they hold
  // Read through a shared read-only mapping of each file (a memcpy from the page cache, no system call per read)
  // instead of pread. The size is checked before each copy, so a file cut short names the file and the batch;
  // one cut short during that very copy would raise SIGBUS, which pread never does.
  bool memory_map = false;
};

// Opens every file once, checks .npy headers (dtype, C order, trailing dimensions equal to the item shape) or raw
// file sizes (a whole number of items), and maps items to (file, offset). InputError naming the file for a bad
// header, and when the files hold fewer items than asked for. A file that shrinks afterwards fails the batch that
// reads it ("short file").
std::unique_ptr<BatchSource> open_file_dataset(const FileDatasetOptions& options);

// Item i's values come from a generator seeded with (seed, i): any batch can be produced by any worker, in any
// order, with the same bytes.
std::unique_ptr<BatchSource> make_generated_dataset(Dtype dtype, std::int64_t item_elements, std::int64_t items,
                                                    const Initialisation& init);

// The bytes that make_generated_dataset produces for one item (for writing example files and for tests).
std::vector<std::byte> generated_item(Dtype dtype, std::int64_t item_elements, std::int64_t item_index,
                                      const Initialisation& init);

}  // namespace kernlathe::loader
