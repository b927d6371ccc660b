// The arguments section: buffers, scalars, dtypes and initialisations.
#include "tuner/spec/argument_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace spec_test;

class ArgumentReaderTest : public spec_test::SpecFolderTest {};

TEST_F(ArgumentReaderTest, UnknownDtypeSuggestsOurSpelling) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nspace: {}\narguments:\n  - {name: x, type: float, "
                      "count: 4}\nlaunch: {grid: [1], block: [1]}\n",
                      spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:6:21: argument 'x' type 'float' is not a dtype (did you mean 'f32'?)"),
            std::string::npos)
      << message;
}

TEST_F(ArgumentReaderTest, ArgumentNeedsCountOrValue) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nspace: {}\narguments:\n  - {name: x, type: f32}\n"
                      "launch: {grid: [1], block: [1]}\n",
                      spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:6:5: argument 'x' needs count"), std::string::npos) << message;
}


// ---------------------------------------------------------------- scratch: true

// One argument on line 6 of an otherwise valid spec.
KernelSpec parse_argument(const fs::path& file, const std::string& argument) {
  return parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nspace: {}\narguments:\n" + argument +
                               "launch: {grid: [1], block: [1]}\n",
                           file);
}

TEST_F(ArgumentReaderTest, ScratchBufferStartingAtZero) {
  KernelSpec spec = parse_argument(
      spec_file(), "  - {name: counters, type: i32, count: 2, init: {constant: 0}, role: in, scratch: true}\n");
  EXPECT_TRUE(spec.arguments[0].scratch);
  KernelSpec inout = parse_argument(
      spec_file(), "  - {name: counters, type: i32, count: 2, init: {constant: 0}, role: inout, scratch: true}\n");
  EXPECT_TRUE(inout.arguments[0].scratch);
  KernelSpec plain = parse_argument(spec_file(), "  - {name: x, type: f32, count: 2, scratch: false}\n");
  EXPECT_FALSE(plain.arguments[0].scratch);
}

TEST_F(ArgumentReaderTest, ScratchNeedsAnExplicitZeroInit) {
  std::string missing = input_error_of(
      [&] { parse_argument(spec_file(), "  - {name: c, type: i32, count: 2, role: in, scratch: true}\n"); });
  EXPECT_EQ(missing, spec_file().string() +
                         ":6:46: argument 'c' is scratch: true, so it needs init: {constant: 0} (a scratch buffer "
                         "starts zero and the kernel leaves it zero); it has no init (the default is random)");
  std::string nonzero = input_error_of([&] {
    parse_argument(spec_file(), "  - {name: c, type: i32, count: 2, init: {constant: 1}, scratch: true}\n");
  });
  EXPECT_NE(nonzero.find(":6:57: argument 'c' is scratch: true, so it needs init: {constant: 0}"), std::string::npos)
      << nonzero;
  EXPECT_NE(nonzero.find("its init is not 0"), std::string::npos) << nonzero;
  std::string random = input_error_of([&] {
    parse_argument(spec_file(), "  - {name: c, type: i32, count: 2, init: {random: {seed: 1}}, scratch: true}\n");
  });
  EXPECT_NE(random.find("its init is not 0"), std::string::npos) << random;
}

TEST_F(ArgumentReaderTest, ScratchMayNotBeAnOutput) {
  std::string message = input_error_of([&] {
    parse_argument(spec_file(), "  - {name: c, type: i32, count: 2, init: {constant: 0}, role: out, scratch: true}\n");
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":6:68: argument 'c' is scratch: true with role: out", 0), 0u)
      << message;
}

TEST_F(ArgumentReaderTest, ScratchAppliesToBuffersOnly) {
  std::string message =
      input_error_of([&] { parse_argument(spec_file(), "  - {name: s, type: i32, value: 4, scratch: true}\n"); });
  EXPECT_EQ(message, spec_file().string() +
                         ":6:36: argument 's' is a scalar (it has value:); scratch applies to buffers only");
  std::string not_bool = input_error_of([&] {
    parse_argument(spec_file(), "  - {name: c, type: i32, count: 2, init: {constant: 0}, scratch: yes}\n");
  });
  EXPECT_NE(not_bool.find("argument 'c' scratch must be true or false, found 'yes'"), std::string::npos) << not_bool;
}

}  // namespace
}  // namespace kernlathe
