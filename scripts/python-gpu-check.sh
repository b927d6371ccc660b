#!/usr/bin/env bash
# The Python package on a GPU host: builds and installs it into that host's Python (torch, nanobind and
# scikit-build-core already there, no network: --no-build-isolation --no-deps), exports the layer's kernels with
# cubins for the GPU's arch when a `tune` binary is at hand (.device/bin/tune from scripts/package-for-device.sh, or
# build/tune), runs the GPU tests (pytest -m gpu) and the Llama-3-8B layer benchmark. Logs and the benchmark's JSON go
# to LOG_DIR (seven files; the export to KERNLATHE_EXPORT_DIR or a temporary folder); a summary is printed last.
# Exit 0 only when every step passed.
# fmt and nlohmann-json headers: from the system, else from .device/include (scripts/package-for-device.sh copies them).
# STEPS (default "build export gpu-tests cpu-tests bench") picks steps, so that a session's calls of at most 10 minutes
# can split the work: build once, then the tests in one call and the benchmark in another (the package and the cubin
# cache stay on a machine that is still held; set KERNLATHE_EXPORT_DIR to keep the export between calls).
# Usage (GPU host, repository root): [STEPS="..."] scripts/python-gpu-check.sh LOG_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${1:-python-gpu-check-logs}"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
python="${PYTHON:-python3}"
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH" PYTHONUNBUFFERED=1
summary="$logs/summary.txt"
: >"$summary"
status=0
steps=" ${STEPS:-build export gpu-tests cpu-tests bench} "
wanted() { [[ "$steps" == *" $1 "* ]]; }
note() { echo "$*" | tee -a "$summary"; }
step() {  # step NAME LOG COMMAND...: runs it, notes its exit status
  local name="$1" log="$2"
  shift 2
  local start=$SECONDS
  "$@" >"$log" 2>&1
  local code=$?
  note "$name: exit $code in $((SECONDS - start)) s (log $(basename "$log"))"
  ((code == 0)) || status=1
  return $code
}

note "date $(date -u +%FT%TZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$summary"
"$python" -c 'import sys, torch; print(f"python {sys.version.split()[0]}, torch {torch.__version__}, cuda {torch.cuda.is_available()}")' 2>&1 | tee -a "$summary"

config=()
# The CUDA toolkit named, so CMake does not take a pip package's partial copy of it (no cuda.h) from the Python
# environment's paths.
config+=("--config-settings=cmake.define.CUDAToolkit_ROOT=${CUDA_HOME:-/usr/local/cuda}")
[[ -d .device/include ]] && config+=("--config-settings=cmake.define.KERNLATHE_THIRD_PARTY_INCLUDE=$PWD/.device/include")
if wanted build; then
  rm -rf python/build
  step "build and install" "$logs/build.log" "$python" -m pip install --no-build-isolation --no-deps --force-reinstall \
    "${config[@]}" ./python || { cat "$summary"; exit 1; }
fi

tune=""
for candidate in .device/bin/tune build/tune; do
  [[ -x "$candidate" ]] && { tune="$candidate"; break; }
done
arch="sm_$("$python" -c 'import torch; major, minor = torch.cuda.get_device_capability(); print(f"{major}{minor}")' 2>/dev/null)"
# The export goes outside LOG_DIR, which then holds seven files (summary, four logs, the benchmark's log and JSON).
export_dir="${KERNLATHE_EXPORT_DIR:-$(mktemp -d)/export}"
if ! wanted export; then
  [[ -d "$export_dir/database" ]] && export KERNLATHE_EXPORT="$export_dir"
elif [[ -n "$tune" ]]; then
  rm -rf "$export_dir"
  if step "tune export ($arch cubins)" "$logs/export.log" "$tune" export gemm_bf16 gemm_bf16_bias_gelu \
       gemm_bf16_bias_residual gemm_bf16_silu_gated gemm_decode_bf16 attention_bf16 rmsnorm_bf16 layernorm_bf16 softmax_bf16 silu_mul_bf16 rmsnorm layernorm softmax saxpy \
       --arch "$arch" -o "$export_dir"; then
    export KERNLATHE_EXPORT="$export_dir"
  fi
else
  note "tune export: skipped, no tune binary (.device/bin/tune or build/tune): kernels from the package's databases"
fi

# GPU tests from the repository root, against the installed package (python/kernlathe itself holds no extension).
if wanted gpu-tests; then
  step "pytest -m gpu" "$logs/pytest_gpu.log" "$python" -m pytest python/tests -m gpu -v -p no:cacheprovider
  note "  $(tail -n 1 "$logs/pytest_gpu.log")"
fi
if wanted cpu-tests; then
  step "pytest (CPU tests on this host)" "$logs/pytest_cpu.log" "$python" -m pytest python/tests -m "not gpu" -q \
    -p no:cacheprovider
  note "  $(tail -n 1 "$logs/pytest_cpu.log")"
fi
if wanted bench; then
  step "llama layer benchmark" "$logs/llama_layer_bench.log" "$python" benchmarks/llama_layer_bench.py \
    --json "$logs/llama_layer_bench.json"
  grep -E "^(tokens|  kernlathe|  relative|per call|first call|FLOOR|all floors|note)" "$logs/llama_layer_bench.log" |
    tee -a "$summary"
fi

echo "---- summary"
cat "$summary"
exit $status
