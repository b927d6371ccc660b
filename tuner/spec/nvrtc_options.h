#pragma once
// The NVRTC options a spec may pass in compile_options. Some NVRTC options write files (timing tables and traces:
// -time, --fdevice-time-trace; precompiled headers: --pch, --create-pch, --pch-dir; -dlto outputs) or change what
// the tool gets back (-rdc, --gpu-architecture, which the tool sets itself), and -I would widen what a template may
// include. So a spec may pass only options that change how the code is compiled, each in its one-argument form:
//
//   -std=c++11|c++14|c++17|c++20           --std=...
//   -D<name>  -D<name>=<text>               --define-macro=<name>[=<text>]
//   -U<name>                                --undefine-macro=<name>
//   -use_fast_math                          --use_fast_math
//   -lineinfo                               --generate-line-info
//   -maxrregcount=<1..255>                  --maxrregcount=<1..255>
//   -ftz= -prec-div= -prec-sqrt= -fmad=     --ftz= --prec-div= --prec-sqrt= --fmad=   (true or false)
//   -extra-device-vectorization             --extra-device-vectorization
//   -default-device                         --device-as-default-execution-space
//
// The list is documented in the README ("What a spec can and cannot do").

#include <optional>
#include <string>
#include <string_view>

namespace kernlathe {

// Why `option` may not be passed, or nullopt when it may.
std::optional<std::string> compile_option_problem(std::string_view option);

// The allowed options in one line, for messages.
std::string allowed_compile_options_summary();

}  // namespace kernlathe
