#!/usr/bin/env bash
# Installs the project from a build directory into a temporary prefix and builds examples/ out of tree against it
# with find_package(kernlathe CONFIG), as an application would. Usage: scripts/check_install.sh BUILD_DIR
set -euo pipefail
build="$1"
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/kernlathe/runtime.h"
test -f "$work/prefix/include/kernlathe/version.h"
test -f "$work/prefix/lib/cmake/kernlathe/kernlatheConfigVersion.cmake" || test -f "$work/prefix/lib64/cmake/kernlathe/kernlatheConfigVersion.cmake"
cmake -S "$source_dir/examples" -B "$work/examples" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" >/dev/null
test -x "$work/examples/kernlathe_gemm_example"
test -x "$work/examples/kernlathe_softmax_example"
test -x "$work/examples/kernlathe_stream_conv3x3_example"
# The runtime links no CUDA library of its own: the driver and NVRTC are opened at run time (the examples link the
# CUDA runtime and cuBLAS for their own allocations and checks, which need neither).
for example in "$work"/examples/kernlathe_*_example; do
  if readelf -d "$example" | grep -E 'NEEDED.*(libcuda\.so|libnvrtc)'; then
    echo "check_install: $(basename "$example") needs libcuda or libnvrtc at load time" >&2
    exit 1
  fi
done
# A version the package does not satisfy is refused.
mkdir -p "$work/too_new"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(x LANGUAGES CXX)\nfind_package(kernlathe 9.0 CONFIG REQUIRED)\n' > "$work/too_new/CMakeLists.txt"
if cmake -S "$work/too_new" -B "$work/too_new/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null 2>&1; then
  echo "check_install: find_package(kernlathe 9.0) was satisfied by an older package" >&2
  exit 1
fi
echo "check_install: installed package found, examples built out of tree"
