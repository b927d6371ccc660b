#!/usr/bin/env bash
# Everything that needs the GPU, in one go: GPU tests, the planted-fault space, tuning both starter kernels,
# the evaluation rate with a cold and a warm cubin cache, and the compile-pool scaling benchmark.
# Usage (on a GPU host, from the repository root): scripts/gpu-check.sh BIN_DIR LOG_DIR
# Prints a short summary table last, then one line naming every failed step; exits 1 when a step failed (a missing
# GPU included), 2 on bad usage. ONLY_CHECKS=1 skips the tuning runs.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin gpu-check
(($# <= 2)) || bench_usage "at most two arguments, BIN_DIR and LOG_DIR"
bin="${1:-build}"
logs="${2:-gpu-check-logs}"
[[ -x "$bin/tune" ]] || bench_usage "no $bin/tune (build it, or name its folder)"
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export TUNE_BINARY="$PWD/$bin/tune"   # the GPU tests start evaluation workers from this binary
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
summary="$logs/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

note "date $(date -u +%FT%TZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
bench_step "nvidia-smi" nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv 2>&1 | tee -a "$summary"

if [[ -x "$bin/test_gpu_device" ]]; then
  bench_step "gpu tests" "$bin/test_gpu_device" >"$logs/gpu_tests.log" 2>&1
  note "gpu tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$logs/gpu_tests.log" | tr '\n' ' '))"
else
  bench_failed "gpu tests: no $bin/test_gpu_device"
fi

# Planted faults: every configuration must be recorded with the status its FAULT value plants.
rm -rf "$logs/faults"
bench_step "faults run" "$bin/tune" run tests/data/faults/faults.yaml --strategy exhaustive --timeout 3 \
  --out "$logs/faults" --best-dir "$logs/best-faults" --json >"$logs/faults.json" 2>"$logs/faults.err"
note "faults run: exit $? statuses $(python3 -c "import json;print(json.load(open('$logs/faults.json'))['statuses'])" 2>/dev/null)"

# One line of a tuning run's JSON: evaluations, rate, best time and bandwidth.
run_summary() {
  python3 -c "
import json; r=json.load(open('$1'))
b=r['best'][0]
print(f\"{r['evaluated']} evaluations in {r['seconds']:.1f} s = {r['evaluations_per_second']:.1f}/s; best {b['median_ms']:.4f} ms {b['gbps']:.0f} GB/s ({100*b['fraction_of_copy_bandwidth']:.1f}% of copy), {b['speedup_over_default']:.2f}x over default\")" 2>/dev/null
}

if [[ "${ONLY_CHECKS:-0}" != 1 ]]; then
  # Evaluation rate over the whole saxpy space: cold cubin cache, then warm.
  export XDG_CACHE_HOME="$(mktemp -d)"
  for pass in cold warm; do
    rm -rf "$logs/saxpy-$pass"
    bench_step "saxpy $pass cubin cache" "$bin/tune" run kernels/saxpy.yaml --strategy exhaustive \
      --out "$logs/saxpy-$pass" --json >"$logs/saxpy-$pass.json" 2>"$logs/saxpy-$pass.err"
    note "saxpy $pass cubin cache: exit $? $(run_summary "$logs/saxpy-$pass.json")"
  done

  # The 3x3 convolution, tuned exhaustively; results go to the project's results/ tree.
  bench_step "conv3x3" "$bin/tune" run kernels/conv3x3.yaml --strategy exhaustive --json \
    >"$logs/conv3x3.json" 2>"$logs/conv3x3.err"
  note "conv3x3: exit $? $(run_summary "$logs/conv3x3.json")"
  bench_step "saxpy into results/" "$bin/tune" run kernels/saxpy.yaml --strategy exhaustive --json \
    >"$logs/saxpy-results.json" 2>"$logs/saxpy-results.err"
  note "saxpy into results/: exit $?"
fi

if [[ -x "$bin/bench_compile" ]]; then
  bench_step "compile pool" "$bin/bench_compile" --worker "$bin/tune" --jobs "$(nproc)" --count 128 --arch sm_90 \
    >"$logs/bench_compile.log" 2>&1
  note "compile pool: exit $? $(tail -n 3 "$logs/bench_compile.log" | tr '\n' ' ')"
fi
echo "---- summary"
cat "$summary"
bench_finish 2>&1 | tee -a "$summary"
exit "${PIPESTATUS[0]}"
