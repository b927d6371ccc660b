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

}  // namespace
}  // namespace kernlathe
