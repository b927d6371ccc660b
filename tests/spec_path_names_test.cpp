// Names from a spec that become output path components: one component, no climbing out, no hiding.
#include "tuner/spec/path_names.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

using spec_test::input_error_of;

TEST(PathNames, AcceptsLettersDigitsUnderscoresDotsAndDashes) {
  EXPECT_EQ(path_name_problem("gemm_f16"), std::nullopt);
  EXPECT_EQ(path_name_problem("conv3x3.v2-b"), std::nullopt);
  EXPECT_EQ(path_name_problem(std::string(max_path_name_length, 'a')), std::nullopt);
}

TEST(PathNames, RejectsPathsEmptyHiddenAndLongNames) {
  EXPECT_EQ(path_name_problem("../../x").value_or(""), "contains '/' (a name is one folder or file name, not a path)");
  EXPECT_EQ(path_name_problem("/tmp/x").value_or(""), "contains '/' (a name is one folder or file name, not a path)");
  EXPECT_EQ(path_name_problem("a\\b").value_or(""), "contains '\\' (a name is one folder or file name, not a path)");
  EXPECT_EQ(path_name_problem("").value_or(""), "is empty");
  EXPECT_EQ(path_name_problem("..").value_or("").rfind("starts with a dot", 0), 0u);
  EXPECT_EQ(path_name_problem(".hidden").value_or("").rfind("starts with a dot", 0), 0u);
  EXPECT_EQ(path_name_problem("a b").value_or(""), "contains ' '");
  EXPECT_EQ(path_name_problem("a\nb").value_or(""), "contains the byte 0x0a");
  EXPECT_EQ(path_name_problem(std::string(max_path_name_length + 1, 'a')).value_or(""),
            "has 65 characters, more than the 64 a name may have");
}

TEST(PathNames, CheckThrowsAtTheGivenLocationNamingWhat) {
  std::string message =
      input_error_of([] { check_path_name("../x", "kernel name", SourceLocation{"spec.yaml", 1, 7}); });
  EXPECT_EQ(message.rfind("spec.yaml:1:7: kernel name '../x' contains '/'", 0), 0u) << message;
  EXPECT_NE(message.find("results/runs/<kernel>"), std::string::npos) << message;
  EXPECT_NO_THROW(check_path_name("saxpy", "kernel name", SourceLocation{"spec.yaml", 1, 7}));
}

}  // namespace
}  // namespace kernlathe
