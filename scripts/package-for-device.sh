#!/usr/bin/env bash
# Copies the binaries a GPU check needs into .device/bin (ignored by git), stripped, so they travel to a GPU
# host without rebuilding there: tune, the GPU tests, the benchmarks (benchmarks/), the examples and, when the build
# has them (-DKERNLATHE_BUILD_PROBES=ON), the diagnostic probes into .device/bin/probes. The fmt and nlohmann-json
# headers go to .device/include, for building the Python package there (scripts/python-gpu-check.sh).
# The Open MPI plugin (libkernlathe_mpi.so) goes beside tune when the build has it. With --with-openmpi, Debian's
# Open MPI run time (mpirun, orted, the libraries and components, about 14 MB) is copied into .device/openmpi for a
# GPU host that lacks it; use it there with
#   export OPAL_PREFIX=$PWD/.device/openmpi/usr PATH=$PWD/.device/openmpi/usr/bin:$PATH \
#          LD_LIBRARY_PATH=$PWD/.device/openmpi/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
# Usage: scripts/package-for-device.sh [--with-openmpi] [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
with_openmpi=false
if [[ "${1:-}" == "--with-openmpi" ]]; then
  with_openmpi=true
  shift
fi
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
# fmt and nlohmann-json headers for building the Python package there (scripts/python-gpu-check.sh), where the
# Debian packages are missing.
rm -rf .device/include && mkdir -p .device/include
for header_dir in /usr/include/fmt /usr/include/nlohmann; do
  [[ -d "$header_dir" ]] && cp -r "$header_dir" .device/include/
done
[[ -f "$build/libkernlathe_mpi.so" ]] && strip -o .device/bin/libkernlathe_mpi.so "$build/libkernlathe_mpi.so"
if $with_openmpi; then
  rm -rf .device/openmpi && mkdir -p .device/openmpi
  dpkg -L libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 |
    while read -r file; do [[ -f "$file" || -L "$file" ]] && echo "$file"; done |
    tar -cf - -T - 2>/dev/null | tar -xf - -C .device/openmpi
  du -sh .device/openmpi
fi
du -sh .device/bin
