#!/usr/bin/env bash
# Copies the binaries a GPU check needs into .device/bin (ignored by git), stripped, so they travel to a GPU
# host without rebuilding there: tune, the GPU tests, the benchmarks (benchmarks/), the examples and, when the build
# has them (-DKERNLATHE_BUILD_PROBES=ON), the diagnostic probes into .device/bin/probes.
# Usage: scripts/package-for-device.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rm -rf .device/bin && mkdir -p .device/bin
for binary in tune test_gpu_device bench_compile bench_runtime examples/kernlathe_gemm_example \
              examples/kernlathe_softmax_example examples/kernlathe_stream_conv3x3_example; do
  if [[ -x "$build/$binary" ]]; then
    strip -o ".device/bin/$(basename "$binary")" "$build/$binary"
  fi
done
for probe in "$build"/probes/*_probe*; do
  if [[ -f "$probe" && -x "$probe" ]]; then
    mkdir -p .device/bin/probes
    strip -o ".device/bin/probes/$(basename "$probe")" "$probe"
  fi
done
du -sh .device/bin
