#!/usr/bin/env bash
# Installs the build dependencies from Debian's packages and builds the tuner into build/.
# Usage: scripts/setup.sh            install + build
#        scripts/setup.sh --no-install   build only
# Needs the CUDA toolkit (NVRTC) under /usr/local/cuda or $CUDA_HOME; an NVIDIA driver is NOT needed to build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ clang libclang-rt-14-dev libyaml-cpp-dev libcsv-dev libcli11-dev libfmt-dev
          nlohmann-json3-dev libgtest-dev libeigen3-dev zlib1g-dev libopenmpi-dev openmpi-bin
          python3-venv python3-dev chromium)  # tune report: matplotlib in a venv; its test opens pages in Chromium;
                                                   # python3-dev: the Python package's extension (python/)

if [[ "${1:-}" != "--no-install" ]]; then
  missing=()
  for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# matplotlib and numpy for `tune report`, pinned, from PyPI into .venv, then the Python package with PyTorch.
[[ "${1:-}" != "--no-install" ]] && scripts/setup-python.sh

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [[ ! -f "$cuda_home/include/nvrtc.h" ]]; then
  echo "setup: the CUDA toolkit (NVRTC) was not found under $cuda_home; install it or set CUDA_HOME" >&2
  exit 1
fi
export PATH="$cuda_home/bin:$PATH"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda_home" >/dev/null
cmake --build build -j "$(nproc)"
echo "setup: built build/tune" >&2
