// The ceilings' run.json form (tuner/measure/ceilings.h); measuring them needs a GPU (tests/gpu).
#include "tuner/measure/ceilings.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

TEST(CeilingMetadata, RoundTripsAndLeavesUnmeasuredCeilingsOut) {
  Ceilings ceilings;
  ceilings.copy_gbps = 4321.5;
  ceilings.pinned_h2d_gbps = 55.2;
  ceilings.fma_gflops = 61234.5;
  ceilings.tensor_gflops = 812345.25;
  ceilings.tensor_source = "cuBLAS 13.0.2 bf16 8192^3";
  std::map<std::string, std::string> extra = ceiling_metadata(ceilings);
  EXPECT_EQ(extra.at("ceiling_copy_gbps"), "4321.5");
  EXPECT_EQ(extra.at("ceiling_tensor_gflops"), "812345.2");  // one decimal is what run.json keeps
  EXPECT_EQ(extra.count("ceiling_pinned_duplex_gbps"), 0u);   // not measured: absent, not "0.0"
  Ceilings back = ceilings_from_metadata(extra);
  EXPECT_DOUBLE_EQ(back.copy_gbps, 4321.5);
  EXPECT_DOUBLE_EQ(back.fma_gflops, 61234.5);
  EXPECT_DOUBLE_EQ(back.pinned_duplex_gbps, 0);
  EXPECT_EQ(back.tensor_source, ceilings.tensor_source);
}

TEST(CeilingMetadata, TextThatIsNotANumberReadsAsNotMeasured) {
  Ceilings back = ceilings_from_metadata({{"ceiling_copy_gbps", "fast"}, {"ceiling_fma_gflops", "12x"}});
  EXPECT_EQ(back.copy_gbps, 0);
  EXPECT_EQ(back.fma_gflops, 0);
}

}  // namespace
}  // namespace kernlathe
