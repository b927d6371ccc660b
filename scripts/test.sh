#!/usr/bin/env bash
# The test command: installs dependencies, builds, builds the diagnostic probes with nvcc, runs every CPU test (ctest,
# then the Python package's pytest), compile-checks every shipped kernel spec with NVRTC (no GPU needed) and gives
# each fuzz target a short bounded run.
# GPU tests carry the ctest label `gpu`; on a machine with a GPU run them with: ctest --test-dir build -L gpu
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh "$@"

# What the build takes on disk and what is left, for a CI machine whose disk is small.
disk_use() { echo "disk: $(du -shc build build-fuzz .venv python/build 2>/dev/null | tail -n 1 | cut -f1) in build, build-fuzz, .venv and python/build; $(df -h . | awk 'NR == 2 {print $4}') free" >&2; }
disk_use

# The diagnostic probes (probes/), three of which include the shipped templates: built, not run, wherever nvcc
# exists, so a template change that breaks one fails here. The option stays on in build's cache. 8-13 s on 2 cores.
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [[ -x "$cuda_home/bin/nvcc" ]]; then
  probes_start=$SECONDS
  cmake -S . -B build -DKERNLATHE_BUILD_PROBES=ON >/dev/null
  cmake --build build --target kernlathe_probes -j "$(nproc)"
  echo "probes: built in $((SECONDS - probes_start)) s" >&2
else
  echo "probes: NOT built: no nvcc under $cuda_home (set CUDA_HOME to the CUDA toolkit)" >&2
fi

ctest_log="$(mktemp)"
ctest --test-dir build -L cpu --output-on-failure -j "$(nproc)" | tee "$ctest_log"
total="$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$ctest_log" | tail -n 1)"
rm -f "$ctest_log"

# The Python package (python/tests, pytest): built and installed into .venv by scripts/setup-python.sh. GPU tests
# carry the marker `gpu` and skip where torch sees no GPU; on a GPU host run scripts/python-gpu-check.sh.
if .venv/bin/python -c 'import kernlathe.torch' 2>/dev/null; then
  .venv/bin/python -m pytest python/tests -q -p no:cacheprovider
elif [[ "${1:-}" == "--no-install" ]]; then
  echo "python: NOT tested: .venv has no kernlathe package (run scripts/setup-python.sh)" >&2
else
  echo "python: .venv does not import kernlathe.torch although set-up ran" >&2
  exit 1
fi

for spec in kernels/*.yaml; do
  build/tune compile-check "$spec" --arch sm_90 --sample 8
  # A GEMM spec whose problem is the nn.Linear layout (gemm_bf16_silu_gated) has only the wgmma path there, which
  # sm_80 lacks: on sm_80 its K x N layout is checked, where the other paths compile the same epilogue.
  sm80_problem=()
  if grep -q '^space: ../spaces/gemm.yaml' "$spec" && grep -q '^  B_LAYOUT: 1 ' "$spec"; then
    sm80_problem=(--problem B_LAYOUT=0)
  fi
  build/tune compile-check "$spec" --arch sm_80 --sample 4 "${sm80_problem[@]}"
done

scripts/fuzz.sh 30

disk_use

# ctest has already failed the script on any failing test; the closing line counts them for the record.
echo "ctest: ${total:-0} passed, 0 failed"
