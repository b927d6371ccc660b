#include "tuner/spec/model.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kernlathe {
namespace {

Value property(const DeviceProperties& device, const std::string& name) {
  for (const auto& [key, value] : device_property_values(device)) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no device property " << name;
  return Value{};
}

TEST(DeviceProfiles, Sm90IsAnH100Sxm) {
  DeviceProperties device = device_profile("sm_90");
  EXPECT_EQ(device.arch_name(), "sm_90");
  EXPECT_EQ(device.sm_count, 132);
  EXPECT_EQ(device.max_threads_per_block, 1024);
  EXPECT_EQ(device.max_shared_memory_per_block, 232448);
  EXPECT_EQ(device.max_shared_memory_per_sm, 233472);
  EXPECT_EQ(device.max_threads_per_sm, 2048);
  EXPECT_EQ(device.max_registers_per_sm, 65536);
  EXPECT_EQ(device.max_registers_per_block, 65536);
  EXPECT_EQ(device.max_blocks_per_sm, 32);
  EXPECT_EQ(device.l2_cache_bytes, 50 * 1024 * 1024);
  EXPECT_FALSE(device.from_hardware);
}

TEST(DeviceProfiles, OtherArchitectures) {
  DeviceProperties a100 = device_profile("sm_80");
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_EQ(a100.max_shared_memory_per_block, 166912);
  EXPECT_EQ(a100.max_shared_memory_per_sm, 167936);
  DeviceProperties a6000 = device_profile("sm_86");
  EXPECT_EQ(a6000.arch_name(), "sm_86");
  EXPECT_EQ(a6000.sm_count, 84);
  EXPECT_EQ(a6000.max_shared_memory_per_block, 101376);
  EXPECT_EQ(a6000.max_threads_per_sm, 1536);
  DeviceProperties l40s = device_profile("sm_89");
  EXPECT_EQ(l40s.sm_count, 142);
  EXPECT_EQ(l40s.max_blocks_per_sm, 24);
}

TEST(DeviceProfiles, ArchSpecificSuffixNamesTheSameHardware) {
  EXPECT_EQ(device_profile("sm_90a").sm_count, 132);
}

TEST(DeviceProfiles, UnknownArchListsTheKnownOnes) {
  try {
    device_profile("sm_75");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown --arch 'sm_75': known profiles are sm_80, sm_86, sm_89, sm_90"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(known_device_profiles(), (std::vector<std::string>{"sm_80", "sm_86", "sm_89", "sm_90"}));
}

TEST(NamedDeviceProfiles, BoardsDifferFromTheirArchsProfileInSmCountAndL2) {
  DeviceProperties pcie = named_device_profile("NVIDIA H100 PCIe");
  EXPECT_EQ(pcie.name, "NVIDIA H100 PCIe");
  EXPECT_EQ(pcie.arch_name(), "sm_90");
  EXPECT_EQ(pcie.sm_count, 114);
  EXPECT_EQ(pcie.max_shared_memory_per_block, 232448);  // the rest is the sm_90 profile's
  EXPECT_EQ(named_device_profile("NVIDIA H100 80GB HBM3").sm_count, 132);
  DeviceProperties h200 = named_device_profile("NVIDIA H200");
  EXPECT_EQ(h200.sm_count, 132);
  EXPECT_EQ(h200.l2_cache_bytes, 60 * 1024 * 1024);
  EXPECT_EQ(named_device_profile("NVIDIA A10").arch_name(), "sm_86");
  EXPECT_EQ(named_device_profile("NVIDIA A10").sm_count, 72);
  EXPECT_EQ(known_device_names().size(), 9u);
}

TEST(NamedDeviceProfiles, UnknownNameListsTheKnownOnes) {
  try {
    named_device_profile("NVIDIA H100 PCIE");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("unknown --device 'NVIDIA H100 PCIE': known devices are NVIDIA A100-SXM4-80GB, "), std::string::npos)
        << message;
    EXPECT_NE(message.find("(did you mean NVIDIA H100 PCIe?)"), std::string::npos) << message;
  }
}

TEST(NamedDeviceProfiles, RuntimeIdentityCarriesTheNameArchAndProperties) {
  DeviceIdentity identity = runtime_identity(named_device_profile("NVIDIA H100 PCIe"));
  EXPECT_EQ(identity.name, "NVIDIA H100 PCIe");
  EXPECT_EQ(identity.arch(), "sm_90");
  ASSERT_EQ(identity.properties.size(), 12u);
  auto sm_count = std::find_if(identity.properties.begin(), identity.properties.end(),
                               [](const auto& property) { return property.first == "sm_count"; });
  ASSERT_NE(sm_count, identity.properties.end());
  EXPECT_EQ(sm_count->second, Value(std::int64_t{114}));
  EXPECT_EQ(identity.properties.back(), (std::pair<std::string, Value>{"arch", std::int64_t{90}}));
}

TEST(DeviceProperties, ValuesAreExposedUnderTheirExpressionNames) {
  DeviceProperties device = device_profile("sm_86");
  EXPECT_EQ(property(device, "arch"), Value(std::int64_t{86}));
  EXPECT_EQ(property(device, "arch_major"), Value(std::int64_t{8}));
  EXPECT_EQ(property(device, "arch_minor"), Value(std::int64_t{6}));
  EXPECT_EQ(property(device, "sm_count"), Value(std::int64_t{84}));
  EXPECT_EQ(property(device, "warp_size"), Value(std::int64_t{32}));
  EXPECT_EQ(property(device, "max_shared_memory_per_block"), Value(std::int64_t{101376}));
  std::vector<std::string> names = device_property_names();
  ASSERT_EQ(names.size(), 12u);
  EXPECT_EQ(names.front(), "max_threads_per_block");
  EXPECT_EQ(names.back(), "arch");
}

TEST(Dtypes, SizesNamesAndSpellings) {
  EXPECT_EQ(dtype_size(Dtype::f16), 2u);
  EXPECT_EQ(dtype_size(Dtype::bf16), 2u);
  EXPECT_EQ(dtype_size(Dtype::f64), 8u);
  EXPECT_EQ(dtype_size(Dtype::u8), 1u);
  EXPECT_EQ(dtype_size(Dtype::i64), 8u);
  EXPECT_EQ(dtype_name(Dtype::bf16), "bf16");
  EXPECT_EQ(dtype_cpp_name(Dtype::bf16), "__nv_bfloat16");
  EXPECT_EQ(dtype_cpp_name(Dtype::f16), "__half");
  EXPECT_EQ(dtype_cpp_name(Dtype::u32), "unsigned int");
  for (Dtype dtype : {Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::f64, Dtype::i8, Dtype::u8, Dtype::i32, Dtype::u32,
                      Dtype::i64}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
  EXPECT_FALSE(parse_dtype("float").has_value());
}

TEST(Verification, DefaultTolerancesFollowPrecision) {
  Verification verification;
  EXPECT_EQ(verification.tolerance_for(Dtype::f32).relative, 1e-5);
  EXPECT_EQ(verification.tolerance_for(Dtype::f32).absolute, 1e-6);
  EXPECT_EQ(verification.tolerance_for(Dtype::f64).relative, 1e-12);
  EXPECT_EQ(verification.tolerance_for(Dtype::f16).relative, 1e-2);
  EXPECT_EQ(verification.tolerance_for(Dtype::bf16).relative, 2e-2);
  EXPECT_EQ(verification.tolerance_for(Dtype::i32).relative, 0.0);
  EXPECT_EQ(verification.tolerance_for(Dtype::i32).absolute, 0.0);
  verification.tolerance[Dtype::f32] = {0.5, 0.25};
  EXPECT_EQ(verification.tolerance_for(Dtype::f32).relative, 0.5);
  EXPECT_EQ(verification.tolerance_for(Dtype::f64).relative, 1e-12);
}

}  // namespace
}  // namespace kernlathe
