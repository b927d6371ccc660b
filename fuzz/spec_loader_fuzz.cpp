// libFuzzer target: any bytes given to the spec and space parsers end in a value or an InputError; anything else
// (another exception, a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tuner/spec/spec_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kernlathe::parse_space(text, "fuzz.yaml");
  } catch (const kernlathe::InputError&) {
  }
  try {
    kernlathe::parse_kernel_spec(text, "fuzz.yaml");
  } catch (const kernlathe::InputError&) {
  }
  return 0;
}
