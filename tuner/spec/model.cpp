#include "tuner/spec/model.h"

#include <fmt/format.h>

#include <string_view>

namespace kernlathe {

std::string DeviceProperties::arch_name() const { return fmt::format("sm_{}{}", arch_major, arch_minor); }

namespace {

constexpr std::int64_t kibibyte = 1024;
constexpr std::int64_t mebibyte = 1024 * 1024;

// Values from the CUDA C++ Programming Guide, table "Technical Specifications per Compute Capability", and the
// vendors' data sheets for the SM counts and L2 sizes. A profile stands for one representative board of its
// architecture, so --arch gives the numbers of a real device rather than a union of the family.
DeviceProperties make_profile(int major, int minor, const char* board, std::int64_t sm_count,
                              std::int64_t shared_per_sm, std::int64_t shared_per_block_opt_in,
                              std::int64_t threads_per_sm, std::int64_t blocks_per_sm, std::int64_t l2_bytes) {
  DeviceProperties device;
  device.name = fmt::format("profile sm_{}{} ({})", major, minor, board);
  device.arch_major = major;
  device.arch_minor = minor;
  device.max_threads_per_block = 1024;
  device.max_shared_memory_per_block = shared_per_block_opt_in;
  device.max_shared_memory_per_sm = shared_per_sm;
  device.max_registers_per_block = 64 * kibibyte;
  device.max_registers_per_sm = 64 * kibibyte;
  device.max_threads_per_sm = threads_per_sm;
  device.max_blocks_per_sm = blocks_per_sm;
  device.sm_count = sm_count;
  device.warp_size = 32;
  device.l2_cache_bytes = l2_bytes;
  device.from_hardware = false;
  return device;
}

struct Profile {
  const char* arch;
  DeviceProperties (*make)();
};

const Profile profiles[] = {
    // A100 SXM: 164 KiB shared memory per SM, of which a block may opt in to 163 KiB; 40 MiB L2.
    {"sm_80", [] { return make_profile(8, 0, "A100", 108, 164 * kibibyte, 163 * kibibyte, 2048, 32, 40 * mebibyte); }},
    // RTX A6000: 100 KiB per SM, 99 KiB per block, 1536 threads and 16 blocks per SM; 6 MiB L2.
    {"sm_86", [] { return make_profile(8, 6, "RTX A6000", 84, 100 * kibibyte, 99 * kibibyte, 1536, 16, 6 * mebibyte); }},
    // L40S: 100 KiB per SM, 99 KiB per block, 1536 threads and 24 blocks per SM; 96 MiB L2.
    {"sm_89", [] { return make_profile(8, 9, "L40S", 142, 100 * kibibyte, 99 * kibibyte, 1536, 24, 96 * mebibyte); }},
    // H100 SXM: 228 KiB per SM, 227 KiB per block; 50 MiB L2 (the H200 has 60 MiB; the smaller keeps
    // L2-sized working sets honest on both).
    {"sm_90", [] { return make_profile(9, 0, "H100 SXM", 132, 228 * kibibyte, 227 * kibibyte, 2048, 32, 50 * mebibyte); }},
};

// Boards of the profiles' archs that differ from the arch's representative in what expressions or the ladder see:
// the name (the exact rung), the SM count and the L2 size (data sheets; names as cuDeviceGetName reports them).
struct NamedBoard {
  const char* name;
  const char* arch;
  std::int64_t sm_count;
  std::int64_t l2_bytes;
};

const NamedBoard boards[] = {
    {"NVIDIA A100-SXM4-80GB", "sm_80", 108, 40 * mebibyte},
    {"NVIDIA A100-PCIE-40GB", "sm_80", 108, 40 * mebibyte},
    {"NVIDIA A10", "sm_86", 72, 6 * mebibyte},
    {"NVIDIA RTX A6000", "sm_86", 84, 6 * mebibyte},
    {"NVIDIA L4", "sm_89", 58, 48 * mebibyte},
    {"NVIDIA L40S", "sm_89", 142, 96 * mebibyte},
    {"NVIDIA H100 PCIe", "sm_90", 114, 50 * mebibyte},
    {"NVIDIA H100 80GB HBM3", "sm_90", 132, 50 * mebibyte},
    {"NVIDIA H200", "sm_90", 132, 60 * mebibyte},
};

}  // namespace

DeviceProperties named_device_profile(const std::string& name) {
  for (const NamedBoard& board : boards) {
    if (name != board.name) continue;
    DeviceProperties device = device_profile(board.arch);
    device.name = board.name;
    device.sm_count = board.sm_count;
    device.l2_cache_bytes = board.l2_bytes;
    return device;
  }
  std::string suggestion = expr::closest_match(name, known_device_names());
  throw InputError(fmt::format("unknown --device '{}': known devices are {}{}", name, fmt::join(known_device_names(), ", "),
                               suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", suggestion)));
}

std::vector<std::string> known_device_names() {
  std::vector<std::string> names;
  for (const NamedBoard& board : boards) names.emplace_back(board.name);
  return names;
}

DeviceIdentity runtime_identity(const DeviceProperties& device) {
  DeviceIdentity identity{device.name, device.arch_major, device.arch_minor, {}};
  for (auto& [property, value] : device_property_values(device)) identity.properties.emplace_back(property, value);
  return identity;
}

DeviceProperties device_profile(const std::string& arch) {
  // sm_90a names the same hardware as sm_90; the suffix only changes which instructions may be compiled.
  std::string_view base = arch;
  if (base.size() > 5 && base.back() == 'a') base.remove_suffix(1);
  for (const Profile& profile : profiles) {
    if (base == profile.arch) return profile.make();
  }
  std::string known = fmt::format("{}", fmt::join(known_device_profiles(), ", "));
  std::string suggestion = expr::closest_match(arch, known_device_profiles());
  throw InputError(fmt::format("unknown --arch '{}': known profiles are {}{}", arch, known,
                               suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", suggestion)));
}

std::vector<std::string> known_device_profiles() {
  std::vector<std::string> names;
  for (const Profile& profile : profiles) names.emplace_back(profile.arch);
  return names;
}

std::vector<std::pair<std::string, Value>> device_property_values(const DeviceProperties& device) {
  return {
      {"max_threads_per_block", device.max_threads_per_block},
      {"max_shared_memory_per_block", device.max_shared_memory_per_block},
      {"max_shared_memory_per_sm", device.max_shared_memory_per_sm},
      {"max_registers_per_block", device.max_registers_per_block},
      {"max_registers_per_sm", device.max_registers_per_sm},
      {"max_threads_per_sm", device.max_threads_per_sm},
      {"max_blocks_per_sm", device.max_blocks_per_sm},
      {"sm_count", device.sm_count},
      {"warp_size", device.warp_size},
      {"arch_major", std::int64_t{device.arch_major}},
      {"arch_minor", std::int64_t{device.arch_minor}},
      {"arch", std::int64_t{10 * device.arch_major + device.arch_minor}},
  };
}

std::vector<std::string> device_property_names() {
  std::vector<std::string> names;
  for (auto& [name, value] : device_property_values(DeviceProperties{})) names.push_back(name);
  return names;
}

// ---------------------------------------------------------------- dtypes

namespace {

struct DtypeInfo {
  Dtype dtype;
  const char* name;
  const char* cpp_name;  // built-in spellings where possible: NVRTC sources need no <cstdint>
  std::size_t size;
  Tolerance tolerance;
};

// Default tolerances follow each type's precision: a few units in the last place of float, about one of
// half (2^-10) and bfloat16 (2^-7) after a short accumulation; integers must match exactly.
const DtypeInfo dtype_table[] = {
    {Dtype::f16, "f16", "__half", 2, {1e-2, 1e-3}},
    {Dtype::bf16, "bf16", "__nv_bfloat16", 2, {2e-2, 1e-2}},
    {Dtype::f32, "f32", "float", 4, {1e-5, 1e-6}},
    {Dtype::f64, "f64", "double", 8, {1e-12, 1e-12}},
    {Dtype::i8, "i8", "signed char", 1, {0, 0}},
    {Dtype::u8, "u8", "unsigned char", 1, {0, 0}},
    {Dtype::i32, "i32", "int", 4, {0, 0}},
    {Dtype::u32, "u32", "unsigned int", 4, {0, 0}},
    {Dtype::i64, "i64", "long long", 8, {0, 0}},
};

const DtypeInfo& info(Dtype dtype) {
  for (const DtypeInfo& entry : dtype_table) {
    if (entry.dtype == dtype) return entry;
  }
  throw TunerError("unknown dtype value");  // only reachable through a cast of a bad integer
}

}  // namespace

std::size_t dtype_size(Dtype dtype) { return info(dtype).size; }
std::string dtype_name(Dtype dtype) { return info(dtype).name; }
std::string dtype_cpp_name(Dtype dtype) { return info(dtype).cpp_name; }

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const DtypeInfo& entry : dtype_table) {
    if (name == entry.name) return entry.dtype;
  }
  return std::nullopt;
}

Tolerance Verification::tolerance_for(Dtype dtype) const {
  auto found = tolerance.find(dtype);
  return found != tolerance.end() ? found->second : info(dtype).tolerance;
}

}  // namespace kernlathe
