// Dataset readers of streamed workloads: .npy and raw files, the generator, globbing and environment expansion.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tuner/loader/dataset.h"

namespace fs = std::filesystem;
using namespace kernlathe;
using namespace kernlathe::loader;

namespace {

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              fmt::format("loader_dataset_{}_{}", getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  // `items` images of 2x3 floats; element e of item i is 100 * i + e.
  static std::vector<float> images(int first_item, int items) {
    std::vector<float> values;
    for (int item = first_item; item < first_item + items; ++item)
      for (int element = 0; element < 6; ++element) values.push_back(static_cast<float>(100 * item + element));
    return values;
  }
  static std::span<const std::byte> bytes_of(const std::vector<float>& values) { return std::as_bytes(std::span(values)); }

  FileDatasetOptions options(std::int64_t items, StreamWorkload::FileFormat format = StreamWorkload::FileFormat::npy) {
    FileDatasetOptions result;
    result.files = glob_files((folder_ / (format == StreamWorkload::FileFormat::npy ? "*.npy" : "*.raw")).string());
    result.format = format;
    result.dtype = Dtype::f32;
    result.item_shape = {2, 3};
    result.items = items;
    return result;
  }

  static std::vector<float> read_batch(const BatchSource& source, BatchRange range) {
    std::vector<float> values(static_cast<std::size_t>(range.item_count) * 6);
    source.read(range, std::as_writable_bytes(std::span(values)));
    return values;
  }

  fs::path folder_;
};

TEST_F(DatasetTest, NpyHeaderRoundTrips) {
  std::vector<float> values = images(0, 4);
  write_npy(folder_ / "a.npy", Dtype::f32, {4, 2, 3}, bytes_of(values));
  NpyHeader header = read_npy_header(folder_ / "a.npy");
  EXPECT_EQ(header.descr, "<f4");
  EXPECT_FALSE(header.fortran_order);
  EXPECT_EQ(header.shape, (std::vector<std::int64_t>{4, 2, 3}));
  EXPECT_EQ(header.data_offset % 64, 0u);  // NumPy pads the header to 64 bytes
  EXPECT_EQ(fs::file_size(folder_ / "a.npy"), header.data_offset + 4 * 6 * sizeof(float));
}

TEST_F(DatasetTest, ParsesNumpyWrittenHeaderWithSpacesAndOneDimension) {
  std::string dict = "{'descr': '<i4', 'fortran_order': True, 'shape': (7,), }";
  std::string text = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
  NpyHeader header = parse_npy_header(std::as_bytes(std::span(text.data(), text.size())), "x.npy");
  EXPECT_EQ(header.descr, "<i4");
  EXPECT_TRUE(header.fortran_order);
  EXPECT_EQ(header.shape, (std::vector<std::int64_t>{7}));
  EXPECT_EQ(header.data_offset, 10 + dict.size());
}

TEST_F(DatasetTest, RejectsAFileThatIsNotNpy) {
  std::string text = "PK\x03\x04 not numpy at all";
  try {
    parse_npy_header(std::as_bytes(std::span(text.data(), text.size())), "images.npz");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("images.npz"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("not a .npy file"), std::string::npos) << error.what();
  }
}

TEST_F(DatasetTest, ReadsBatchesAcrossShardFilesInOrder) {
  // Files of 3, 1 and 4 items: batch items 2..5 span all three.
  write_npy(folder_ / "part0.npy", Dtype::f32, {3, 2, 3}, bytes_of(images(0, 3)));
  write_npy(folder_ / "part1.npy", Dtype::f32, {2, 3}, bytes_of(images(3, 1)));  // a single item, no leading dim
  write_npy(folder_ / "part2.npy", Dtype::f32, {4, 2, 3}, bytes_of(images(4, 4)));
  std::unique_ptr<BatchSource> source = open_file_dataset(options(8));
  EXPECT_EQ(source->item_count(), 8);
  EXPECT_EQ(source->item_bytes(), 24u);
  EXPECT_EQ(read_batch(*source, {1, 2, 4}), images(2, 4));
  EXPECT_EQ(read_batch(*source, {0, 0, 8}), images(0, 8));
  EXPECT_EQ(read_batch(*source, {7, 7, 1}), images(7, 1));
}

TEST_F(DatasetTest, ServesOnlyTheItemsAskedFor) {
  write_npy(folder_ / "part0.npy", Dtype::f32, {5, 2, 3}, bytes_of(images(0, 5)));
  std::unique_ptr<BatchSource> source = open_file_dataset(options(3));
  EXPECT_EQ(source->item_count(), 3);
  EXPECT_THROW(read_batch(*source, {1, 2, 2}), TunerError);  // item 3 is beyond the 3 asked for
}

TEST_F(DatasetTest, RawFilesAreWholeItems) {
  std::vector<float> values = images(0, 4);
  std::ofstream(folder_ / "a.raw", std::ios::binary).write(reinterpret_cast<const char*>(values.data()), 4 * 24);
  std::unique_ptr<BatchSource> source = open_file_dataset(options(4, StreamWorkload::FileFormat::raw));
  EXPECT_EQ(read_batch(*source, {1, 2, 2}), images(2, 2));

  std::ofstream(folder_ / "b.raw", std::ios::binary).write(reinterpret_cast<const char*>(values.data()), 30);
  try {
    open_file_dataset(options(5, StreamWorkload::FileFormat::raw));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("b.raw"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("not a whole number of 24-byte items"), std::string::npos) << error.what();
  }
}

TEST_F(DatasetTest, WrongDtypeNamesTheFileAndBothDtypes) {
  std::vector<double> values(6, 1.0);
  write_npy(folder_ / "doubles.npy", Dtype::f64, {2, 3}, std::as_bytes(std::span(values)));
  try {
    open_file_dataset(options(1));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("doubles.npy"), std::string::npos) << message;
    EXPECT_NE(message.find("'<f8'"), std::string::npos) << message;
    EXPECT_NE(message.find("f32"), std::string::npos) << message;
  }
}

TEST_F(DatasetTest, WrongShapeIsRejected) {
  write_npy(folder_ / "wide.npy", Dtype::f32, {3, 2}, bytes_of(images(0, 1)));
  try {
    open_file_dataset(options(1));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("shape (3, 2)"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("(2, 3)"), std::string::npos) << error.what();
  }
}

TEST_F(DatasetTest, TooFewItemsSaysHowManyThereAre) {
  write_npy(folder_ / "a.npy", Dtype::f32, {2, 2, 3}, bytes_of(images(0, 2)));
  try {
    open_file_dataset(options(10));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("hold 2 items"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("but 10 are asked for"), std::string::npos) << error.what();
  }
}

TEST_F(DatasetTest, ShortFileNamesTheFileAndTheBatch) {
  write_npy(folder_ / "a.npy", Dtype::f32, {4, 2, 3}, bytes_of(images(0, 4)));
  std::unique_ptr<BatchSource> source = open_file_dataset(options(4));
  // The file loses its last item after opening: the batch that reads it must fail, naming both.
  fs::resize_file(folder_ / "a.npy", fs::file_size(folder_ / "a.npy") - 10);
  EXPECT_EQ(read_batch(*source, {0, 0, 2}), images(0, 2));
  try {
    read_batch(*source, {1, 2, 2});
    FAIL() << "expected TunerError";
  } catch (const TunerError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("a.npy"), std::string::npos) << message;
    EXPECT_NE(message.find("short file"), std::string::npos) << message;
    EXPECT_NE(message.find("batch 1"), std::string::npos) << message;
  }
}

TEST_F(DatasetTest, MemoryMappedReadsMatchPreadAcrossFilesAndNameAShortFile) {
  write_npy(folder_ / "a.npy", Dtype::f32, {3, 2, 3}, bytes_of(images(0, 3)));
  write_npy(folder_ / "b.npy", Dtype::f32, {4, 2, 3}, bytes_of(images(3, 4)));
  FileDatasetOptions mapped = options(7);
  mapped.memory_map = true;
  std::unique_ptr<BatchSource> source = open_file_dataset(mapped);
  EXPECT_EQ(read_batch(*source, {0, 0, 7}), images(0, 7));
  EXPECT_EQ(read_batch(*source, {1, 2, 3}), images(2, 3));  // items 2..4 span both files
  fs::resize_file(folder_ / "b.npy", fs::file_size(folder_ / "b.npy") - 10);
  EXPECT_EQ(read_batch(*source, {0, 0, 3}), images(0, 3));
  try {
    read_batch(*source, {2, 4, 3});
    FAIL() << "expected TunerError";
  } catch (const TunerError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("b.npy: short file: batch 2"), std::string::npos) << message;
  }
}

TEST_F(DatasetTest, MissingFolderAndNoMatchesAreInputErrors) {
  try {
    glob_files((folder_ / "absent" / "*.npy").string());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("does not exist"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("make_stream_data.sh"), std::string::npos) << error.what();
  }
  EXPECT_THROW(glob_files((folder_ / "*.npy").string()), InputError);
}

TEST_F(DatasetTest, MessagesQuoteThePatternAsWrittenNotItsExpansion) {
  ::setenv("KERNLATHE_LOADER_TEST_SECRET", (folder_ / "secret-value").string().c_str(), 1);
  const std::string written = "${KERNLATHE_LOADER_TEST_SECRET}/*.npy";
  for (const std::string& pattern : {expand_environment(written), (folder_ / "*.npy").string()}) {
    try {
      glob_files(pattern, written);
      FAIL() << "expected InputError for " << pattern;
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.find("secret-value"), std::string::npos) << message;
      EXPECT_EQ(message.rfind("stream files '${KERNLATHE_LOADER_TEST_SECRET}/*.npy': ", 0), 0u) << message;
    }
  }
  ::unsetenv("KERNLATHE_LOADER_TEST_SECRET");
}

TEST_F(DatasetTest, GlobSortsByNameAndMatchesOnlyThePattern) {
  for (const char* name : {"img_b.npy", "img_a.npy", "img_c.raw", "other.npy"}) std::ofstream(folder_ / name) << "x";
  std::vector<fs::path> files = glob_files((folder_ / "img_?.npy").string());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "img_a.npy");
  EXPECT_EQ(files[1].filename(), "img_b.npy");
}

TEST_F(DatasetTest, EnvironmentExpansion) {
  ::setenv("KERNLATHE_LOADER_TEST_DIR", "/scratch/data", 1);
  ::unsetenv("KERNLATHE_LOADER_TEST_UNSET");
  EXPECT_EQ(expand_environment("${KERNLATHE_LOADER_TEST_DIR}/small/*.npy"), "/scratch/data/small/*.npy");
  EXPECT_EQ(expand_environment("${KERNLATHE_LOADER_TEST_UNSET:-/tmp/x}/a"), "/tmp/x/a");
  EXPECT_EQ(expand_environment("plain/path"), "plain/path");
  EXPECT_THROW(expand_environment("${KERNLATHE_LOADER_TEST_UNSET}/a"), InputError);
}

TEST_F(DatasetTest, GeneratedItemsDependOnlyOnSeedAndIndex) {
  Initialisation init;
  init.seed = 11;
  init.low = 2;
  init.high = 3;
  std::unique_ptr<BatchSource> source = make_generated_dataset(Dtype::f32, 6, 10, init);
  std::vector<float> batch = read_batch(*source, {2, 4, 3});
  std::vector<std::byte> item5 = generated_item(Dtype::f32, 6, 5, init);
  EXPECT_EQ(std::memcmp(batch.data() + 6, item5.data(), 24), 0);  // item 5 is the batch's second
  for (float value : batch) {
    EXPECT_GE(value, 2.0f);
    EXPECT_LT(value, 3.0f);
  }
  EXPECT_NE(generated_item(Dtype::f32, 6, 4, init), item5);
  init.kind = Initialisation::Kind::sequence;
  init.start = 1;
  init.step = 0.5;
  std::vector<std::byte> sequence = generated_item(Dtype::f32, 6, 2, init);
  float third = 0;
  std::memcpy(&third, sequence.data() + 2 * 4, 4);
  EXPECT_FLOAT_EQ(third, 1 + 0.5f * (2 * 6 + 2));
}

}  // namespace

namespace {

TEST_F(DatasetTest, NpyShorterThanItsHeaderIsRejectedWhenOpened) {
  write_npy(folder_ / "a.npy", Dtype::f32, {4, 2, 3}, bytes_of(images(0, 4)));
  fs::resize_file(folder_ / "a.npy", fs::file_size(folder_ / "a.npy") - 4);
  try {
    open_file_dataset(options(4));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("a.npy"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("short file: its header promises 4 items"), std::string::npos) << error.what();
  }
}

TEST_F(DatasetTest, FortranOrderIsRejected) {
  std::vector<float> values = images(0, 1);
  write_npy(folder_ / "f.npy", Dtype::f32, {2, 3}, bytes_of(values));
  // Flip the header's flag in place: same length, so the data offset holds.
  std::fstream file(folder_ / "f.npy", std::ios::in | std::ios::out | std::ios::binary);
  std::string head(128, '\0');
  file.read(head.data(), 128);
  std::size_t flag = head.find("False");
  ASSERT_NE(flag, std::string::npos);
  file.seekp(static_cast<std::streamoff>(flag));
  file.write("True ", 5);
  file.close();
  try {
    open_file_dataset(options(1));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("Fortran order"), std::string::npos) << error.what();
  }
}

}  // namespace
