// libFuzzer target: any bytes given to the spec and space parsers end in a value or an InputError; anything else
// (another exception, a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tuner/spec/spec_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // An absolute spec path inside the corpus folder: relative template and space paths resolve the same way from
  // any working directory, so a run reaches the same code wherever it starts.
  static const std::string file = std::string(KERNLATHE_SOURCE_DIR) + "/fuzz/corpus/spec_loader/fuzz.yaml";
  try {
    kernlathe::parse_space(text, file);
  } catch (const kernlathe::InputError&) {
  }
  try {
    kernlathe::parse_kernel_spec(text, file);
  } catch (const kernlathe::InputError&) {
  }
  return 0;
}
