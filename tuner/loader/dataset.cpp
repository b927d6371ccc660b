#include "tuner/loader/dataset.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>

namespace kernlathe::loader {
namespace fs = std::filesystem;

namespace {

constexpr char npy_magic[] = "\x93NUMPY";
constexpr std::size_t npy_magic_length = 6;

std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t result = 1;
  for (std::int64_t dimension : shape) result *= dimension;
  return result;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t index = 0; index < shape.size(); ++index) {
    text += fmt::format("{}{}", index ? ", " : "", shape[index]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// The value of `key` in the header's Python dict literal, as the text up to the next top-level comma.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& file) {
  std::regex pattern("['\"]" + key + "['\"]\\s*:\\s*");
  std::smatch match;
  if (!std::regex_search(dict, match, pattern)) {
    throw InputError(SourceLocation{file}, fmt::format("the .npy header has no '{}' entry: {}", key, dict));
  }
  std::size_t begin = static_cast<std::size_t>(match.position(0) + match.length(0));
  int depth = 0;
  std::size_t end = begin;
  for (; end < dict.size(); ++end) {
    char c = dict[end];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string value = dict.substr(begin, end - begin);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

std::uint64_t split_mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
void store_as(double value, std::byte* destination) {
  T converted = static_cast<T>(value);
  std::memcpy(destination, &converted, sizeof converted);
}

void store_value(Dtype dtype, double value, std::byte* destination) {
  switch (dtype) {
    case Dtype::f32: return store_as<float>(value, destination);
    case Dtype::f64: return store_as<double>(value, destination);
    case Dtype::i8: return store_as<std::int8_t>(value, destination);
    case Dtype::u8: return store_as<std::uint8_t>(value, destination);
    case Dtype::i32: return store_as<std::int32_t>(value, destination);
    case Dtype::u32: return store_as<std::uint32_t>(value, destination);
    case Dtype::i64: return store_as<std::int64_t>(value, destination);
    case Dtype::f16:
    case Dtype::bf16: break;
  }
  throw InputError(fmt::format("generated stream items cannot be {}: use f32, f64 or an integer type, or files",
                               dtype_name(dtype)));
}

// Files opened once; items map to (file, byte offset).
class FileDataset final : public BatchSource {
 public:
  explicit FileDataset(const FileDatasetOptions& options)
      : item_bytes_(static_cast<std::size_t>(product(options.item_shape)) * dtype_size(options.dtype)),
        items_(options.items) {
    if (item_bytes_ == 0) throw InputError("stream items must not be empty: the item shape has a zero dimension");
    std::int64_t available = 0;
    for (const fs::path& path : options.files) {
      if (items_ > 0 && available >= items_) break;  // later files are not needed
      OpenFile file;
      file.path = path;
      file.descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (file.descriptor < 0) {
        throw InputError(SourceLocation{path.string()}, fmt::format("cannot open stream input: {}", std::strerror(errno)));
      }
      struct stat status {};
      ::fstat(file.descriptor, &status);
      std::int64_t size = status.st_size;
      if (options.format == StreamWorkload::FileFormat::npy) {
        NpyHeader header = read_npy_header(path);
        check_npy(header, options, path);
        file.data_offset = header.data_offset;
        std::int64_t item_elements = product(options.item_shape);
        file.items = product(header.shape) / std::max<std::int64_t>(item_elements, 1);
        std::int64_t promised = static_cast<std::int64_t>(header.data_offset) + file.items * static_cast<std::int64_t>(item_bytes_);
        if (size < promised) {
          throw InputError(SourceLocation{path.string()},
                           fmt::format("short file: its header promises {} items ({} bytes with the header), the file "
                                       "has {} bytes; write it again (scripts/make_stream_data.sh)",
                                       file.items, promised, size));
        }
      } else {
        if (size % static_cast<std::int64_t>(item_bytes_) != 0) {
          throw InputError(SourceLocation{path.string()},
                           fmt::format("raw stream file of {} bytes is not a whole number of {}-byte items ({} {})",
                                       size, item_bytes_, dtype_name(options.dtype), shape_text(options.item_shape)));
        }
        file.items = size / static_cast<std::int64_t>(item_bytes_);
      }
      file.first_item = available;
      available += file.items;
      if (options.memory_map && size > 0) {
        // Populated now, so the first pass does not pay for page-table faults the later ones do not.
        void* mapping = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED | MAP_POPULATE,
                               file.descriptor, 0);
        if (mapping != MAP_FAILED) {
          file.mapping = static_cast<const std::byte*>(mapping);
          file.mapped_bytes = static_cast<std::size_t>(size);
        }
      }
      files_.push_back(std::move(file));
    }
    if (items_ == 0) items_ = available;
    if (available < items_) {
      throw InputError(fmt::format("the stream's files hold {} items of {} {} in {} files, but {} are asked for",
                                   available, dtype_name(options.dtype), shape_text(options.item_shape),
                                   options.files.size(), items_));
    }
  }

  ~FileDataset() override {
    for (OpenFile& file : files_) {
      if (file.mapping) ::munmap(const_cast<std::byte*>(file.mapping), file.mapped_bytes);
      ::close(file.descriptor);
    }
  }

  std::int64_t item_count() const override { return items_; }
  std::size_t item_bytes() const override { return item_bytes_; }

  void read(const BatchRange& batch, std::span<std::byte> destination) const override {
    if (batch.first_item < 0 || batch.first_item + batch.item_count > items_) {
      throw TunerError(fmt::format("batch {} (items {}..{}) is outside the dataset of {} items", batch.index,
                                   batch.first_item, batch.first_item + batch.item_count - 1, items_));
    }
    std::int64_t item = batch.first_item;
    std::byte* cursor = destination.data();
    while (item < batch.first_item + batch.item_count) {
      // The last file whose first item is at or before `item`.
      auto file = std::upper_bound(files_.begin(), files_.end(), item,
                                   [](std::int64_t wanted, const OpenFile& open) { return wanted < open.first_item; });
      --file;
      std::int64_t in_file = std::min(file->first_item + file->items, batch.first_item + batch.item_count) - item;
      std::size_t bytes = static_cast<std::size_t>(in_file) * item_bytes_;
      off_t offset = static_cast<off_t>(file->data_offset + static_cast<std::size_t>(item - file->first_item) * item_bytes_);
      std::size_t done = 0;
      if (file->mapping) {
        struct stat status {};
        if (::fstat(file->descriptor, &status) != 0) {
          throw TunerError(fmt::format("{}: cannot check its size for batch {}: {}", file->path.string(), batch.index,
                                       std::strerror(errno)));
        }
        off_t usable = std::min<off_t>(status.st_size, static_cast<off_t>(file->mapped_bytes));
        if (offset + static_cast<off_t>(bytes) > usable) {
          throw TunerError(fmt::format("{}: short file: batch {} needs bytes {}..{} but the file ends at byte {}",
                                       file->path.string(), batch.index, offset, offset + static_cast<off_t>(bytes),
                                       usable));
        }
        std::memcpy(cursor, file->mapping + offset, bytes);
        done = bytes;
      }
      while (done < bytes) {
        ssize_t got = ::pread(file->descriptor, cursor + done, bytes - done, offset + static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
          throw TunerError(fmt::format("{}: read failed for batch {}: {}", file->path.string(), batch.index,
                                       std::strerror(errno)));
        }
        if (got == 0) {
          throw TunerError(fmt::format("{}: short file: batch {} needs bytes {}..{} but the file ends at byte {}",
                                       file->path.string(), batch.index, offset, offset + static_cast<off_t>(bytes),
                                       offset + static_cast<off_t>(done)));
        }
        done += static_cast<std::size_t>(got);
      }
      cursor += bytes;
      item += in_file;
    }
  }

 private:
  struct OpenFile {
    fs::path path;
    int descriptor = -1;
    std::size_t data_offset = 0;
    std::int64_t first_item = 0;
    std::int64_t items = 0;
    const std::byte* mapping = nullptr;  // FileDatasetOptions::memory_map
    std::size_t mapped_bytes = 0;
  };

  static void check_npy(const NpyHeader& header, const FileDatasetOptions& options, const fs::path& path) {
    SourceLocation where{path.string()};
    std::string expected = npy_descr(options.dtype);
    if (header.descr != expected) {
      throw InputError(where, fmt::format("the .npy file holds dtype '{}', the stream expects {} ('{}')", header.descr,
                                          dtype_name(options.dtype), expected));
    }
    if (header.fortran_order) {
      throw InputError(where, "the .npy file is in Fortran order; write it in C order (numpy.ascontiguousarray)");
    }
    const std::vector<std::int64_t>& item = options.item_shape;
    bool one_item = header.shape == item;
    bool many_items = header.shape.size() == item.size() + 1 &&
                      std::equal(item.begin(), item.end(), header.shape.begin() + 1);
    if (!one_item && !many_items) {
      throw InputError(where, fmt::format("the .npy file has shape {}, the stream expects items of shape {} (one item, "
                                          "or a leading item dimension: (N, ...))",
                                          shape_text(header.shape), shape_text(item)));
    }
  }

  std::size_t item_bytes_;
  std::int64_t items_;
  std::vector<OpenFile> files_;
};

class GeneratedDataset final : public BatchSource {
 public:
  GeneratedDataset(Dtype dtype, std::int64_t item_elements, std::int64_t items, const Initialisation& init)
      : dtype_(dtype), item_elements_(item_elements), items_(items), init_(init) {
    store_value(dtype, 0, scratch_);  // rejects dtypes the generator cannot produce, at construction
  }
  std::int64_t item_count() const override { return items_; }
  std::size_t item_bytes() const override { return static_cast<std::size_t>(item_elements_) * dtype_size(dtype_); }
  void read(const BatchRange& batch, std::span<std::byte> destination) const override {
    std::size_t item_bytes = this->item_bytes();
    for (std::int64_t offset = 0; offset < batch.item_count; ++offset) {
      std::vector<std::byte> item = generated_item(dtype_, item_elements_, batch.first_item + offset, init_);
      std::memcpy(destination.data() + static_cast<std::size_t>(offset) * item_bytes, item.data(), item_bytes);
    }
  }

 private:
  Dtype dtype_;
  std::int64_t item_elements_;
  std::int64_t items_;
  Initialisation init_;
  std::byte scratch_[8] = {};
};

}  // namespace

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& file) {
  SourceLocation where{file};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), npy_magic, npy_magic_length) != 0) {
    throw InputError(where, "not a .npy file: it does not start with \\x93NUMPY");
  }
  auto byte_at = [&](std::size_t index) { return static_cast<unsigned>(bytes[index]); };
  unsigned major = byte_at(6);
  std::size_t header_length = 0, prefix = 0;
  if (major == 1) {
    header_length = byte_at(8) | (byte_at(9) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(where, "the .npy header is cut short");
    header_length = byte_at(8) | (byte_at(9) << 8) | (byte_at(10) << 16) | (static_cast<std::size_t>(byte_at(11)) << 24);
    prefix = 12;
  } else {
    throw InputError(where, fmt::format(".npy format version {} is not supported (1, 2 and 3 are)", major));
  }
  if (bytes.size() < prefix + header_length) throw InputError(where, "the .npy header is cut short");
  std::string dict(reinterpret_cast<const char*>(bytes.data() + prefix), header_length);

  NpyHeader header;
  header.data_offset = prefix + header_length;
  std::string descr = dict_value(dict, "descr", file);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) {
    throw InputError(where, fmt::format("the .npy descr {} is not a simple dtype string (structured dtypes are not "
                                        "supported)",
                                        descr));
  }
  header.descr = descr.substr(1, descr.size() - 2);
  std::string order = dict_value(dict, "fortran_order", file);
  if (order != "True" && order != "False") {
    throw InputError(where, fmt::format("the .npy fortran_order is '{}', expected True or False", order));
  }
  header.fortran_order = order == "True";
  std::string shape = dict_value(dict, "shape", file);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    throw InputError(where, fmt::format("the .npy shape '{}' is not a tuple", shape));
  }
  std::string inside = shape.substr(1, shape.size() - 2);
  std::size_t position = 0;
  while (position < inside.size()) {
    std::size_t comma = inside.find(',', position);
    std::string part = inside.substr(position, comma == std::string::npos ? std::string::npos : comma - position);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    if (!part.empty()) {
      char* end = nullptr;
      long long value = std::strtoll(part.c_str(), &end, 10);
      if (*end != '\0' || value < 0) throw InputError(where, fmt::format("the .npy shape '{}' has a bad dimension '{}'", shape, part));
      header.shape.push_back(value);
    }
    if (comma == std::string::npos) break;
    position = comma + 1;
  }
  return header;
}

NpyHeader read_npy_header(const fs::path& file) {
  std::ifstream stream(file, std::ios::binary);
  if (!stream) throw InputError(SourceLocation{file.string()}, "cannot open the .npy file");
  std::vector<std::byte> prefix(12);
  stream.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
  prefix.resize(static_cast<std::size_t>(stream.gcount()));
  // Read just enough for the header: the length field says how much.
  std::size_t wanted = prefix.size();
  if (prefix.size() >= 10 && static_cast<unsigned>(prefix[6]) == 1) {
    wanted = 10 + (static_cast<unsigned>(prefix[8]) | (static_cast<unsigned>(prefix[9]) << 8));
  } else if (prefix.size() >= 12) {
    wanted = 12 + (static_cast<std::size_t>(prefix[8]) | (static_cast<std::size_t>(prefix[9]) << 8) |
                   (static_cast<std::size_t>(prefix[10]) << 16) | (static_cast<std::size_t>(prefix[11]) << 24));
  }
  wanted = std::min<std::size_t>(wanted, 1 << 24);
  std::vector<std::byte> bytes(wanted);
  stream.clear();
  stream.seekg(0);
  stream.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(stream.gcount()));
  return parse_npy_header(bytes, file.string());
}

std::string npy_descr(Dtype dtype) {
  switch (dtype) {
    case Dtype::f16: return "<f2";
    case Dtype::bf16: return "<u2";
    case Dtype::f32: return "<f4";
    case Dtype::f64: return "<f8";
    case Dtype::i8: return "|i1";
    case Dtype::u8: return "|u1";
    case Dtype::i32: return "<i4";
    case Dtype::u32: return "<u4";
    case Dtype::i64: return "<i8";
  }
  return "?";
}

void write_npy(const fs::path& file, Dtype dtype, const std::vector<std::int64_t>& shape,
               std::span<const std::byte> data) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(dtype),
                                 shape_text(shape));
  // The header (magic, version, length, dict, newline) is padded to a multiple of 64 bytes, as NumPy does.
  std::size_t total = npy_magic_length + 4 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::ofstream stream(file, std::ios::binary | std::ios::trunc);
  if (!stream) throw TunerError(fmt::format("cannot write {}", file.string()));
  stream.write(npy_magic, npy_magic_length);
  char version[2] = {1, 0};
  stream.write(version, 2);
  char length[2] = {static_cast<char>(dict.size() & 0xFF), static_cast<char>(dict.size() >> 8)};
  stream.write(length, 2);
  stream << dict;
  stream.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!stream) throw TunerError(fmt::format("cannot write {}", file.string()));
}

std::string expand_environment(const std::string& text) {
  std::string result;
  std::size_t position = 0;
  while (position < text.size()) {
    std::size_t start = text.find("${", position);
    if (start == std::string::npos) {
      result += text.substr(position);
      break;
    }
    result += text.substr(position, start - position);
    std::size_t end = text.find('}', start);
    if (end == std::string::npos) throw InputError(fmt::format("'{}': '${{' without a closing '}}'", text));
    std::string inside = text.substr(start + 2, end - start - 2);
    std::string name = inside, fallback;
    bool has_fallback = false;
    if (std::size_t separator = inside.find(":-"); separator != std::string::npos) {
      name = inside.substr(0, separator);
      fallback = inside.substr(separator + 2);
      has_fallback = true;
    }
    const char* value = std::getenv(name.c_str());
    if (value != nullptr && *value != '\0') {
      result += value;
    } else if (has_fallback) {
      result += fallback;
    } else {
      throw InputError(fmt::format("'{}' uses the environment variable {}, which is not set (write ${{{}:-default}} for "
                                   "a default)",
                                   text, name, name));
    }
    position = end + 1;
  }
  return result;
}

std::vector<fs::path> glob_files(const std::string& pattern, const std::string& pattern_as_written) {
  // Messages quote the pattern as the spec wrote it: its expansion may hold values of the environment.
  const std::string& shown = pattern_as_written.empty() ? pattern : pattern_as_written;
  fs::path path(pattern);
  fs::path folder = path.parent_path();
  std::string name = path.filename().string();
  if (folder.string().find_first_of("*?") != std::string::npos) {
    throw InputError(fmt::format("stream files '{}': wildcards are allowed in the file name only", shown));
  }
  std::error_code error;
  if (!fs::is_directory(folder.empty() ? fs::path(".") : folder, error)) {
    throw InputError(fmt::format("stream files '{}': the folder {} does not exist (generate the data first, e.g. "
                                 "scripts/make_stream_data.sh)",
                                 shown, fs::path(shown).parent_path().string()));
  }
  std::string expression;
  for (char c : name) {
    if (c == '*') expression += ".*";
    else if (c == '?') expression += '.';
    else if (std::isalnum(static_cast<unsigned char>(c))) expression += c;
    else expression += std::string("\\") + c;
  }
  std::regex matcher(expression);
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder.empty() ? fs::path(".") : folder)) {
    if (entry.is_regular_file() && std::regex_match(entry.path().filename().string(), matcher)) files.push_back(entry.path());
  }
  if (files.empty()) throw InputError(fmt::format("stream files '{}': no file matches", shown));
  std::sort(files.begin(), files.end());
  return files;
}

std::unique_ptr<BatchSource> open_file_dataset(const FileDatasetOptions& options) {
  return std::make_unique<FileDataset>(options);
}

std::unique_ptr<BatchSource> make_generated_dataset(Dtype dtype, std::int64_t item_elements, std::int64_t items,
                                                    const Initialisation& init) {
  return std::make_unique<GeneratedDataset>(dtype, item_elements, items, init);
}

std::vector<std::byte> generated_item(Dtype dtype, std::int64_t item_elements, std::int64_t item_index,
                                      const Initialisation& init) {
  std::size_t size = dtype_size(dtype);
  std::vector<std::byte> bytes(static_cast<std::size_t>(item_elements) * size);
  std::uint64_t item_seed = split_mix(init.seed ^ split_mix(static_cast<std::uint64_t>(item_index)));
  for (std::int64_t element = 0; element < item_elements; ++element) {
    double value = 0;
    switch (init.kind) {
      case Initialisation::Kind::random: {
        std::uint64_t bits = split_mix(item_seed + static_cast<std::uint64_t>(element));
        double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;
        value = init.low + unit * (init.high - init.low);
        break;
      }
      case Initialisation::Kind::constant: value = init.value; break;
      case Initialisation::Kind::sequence:
        value = init.start + static_cast<double>(item_index * item_elements + element) * init.step;
        break;
    }
    store_value(dtype, value, bytes.data() + static_cast<std::size_t>(element) * size);
  }
  return bytes;
}

}  // namespace kernlathe::loader
