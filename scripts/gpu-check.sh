#!/usr/bin/env bash
# Everything that needs the GPU, in one go: GPU tests, the planted-fault space, tuning both starter kernels,
# the evaluation rate with a cold and a warm cubin cache, and the compile-pool scaling benchmark.
# Usage (on a GPU host, from the repository root): scripts/gpu-check.sh BIN_DIR LOG_DIR
# Prints a short summary table last.
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}"
logs="${2:-gpu-check-logs}"
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export TUNE_BINARY="$PWD/$bin/tune"   # the GPU tests start evaluation workers from this binary
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
summary="$logs/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

note "date $(date -u +%FT%TZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$summary"

if [[ -x "$bin/test_gpu_device" ]]; then
  "$bin/test_gpu_device" >"$logs/gpu_tests.log" 2>&1
  note "gpu tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$logs/gpu_tests.log" | tr '\n' ' '))"
fi

# Planted faults: every configuration must be recorded with the status its FAULT value plants.
rm -rf "$logs/faults"
"$bin/tune" run tests/data/faults/faults.yaml --strategy exhaustive --timeout 3 --out "$logs/faults" \
  --best-dir "$logs/best-faults" --json >"$logs/faults.json" 2>"$logs/faults.err"
note "faults run: exit $? statuses $(python3 -c "import json;print(json.load(open('$logs/faults.json'))['statuses'])" 2>/dev/null)"

if [[ "${ONLY_CHECKS:-0}" == 1 ]]; then skip_tuning=1; else skip_tuning=0; fi
# Evaluation rate over the whole saxpy space: cold cubin cache, then warm.
export XDG_CACHE_HOME="$(mktemp -d)"
for pass in cold warm; do
  [[ $skip_tuning == 1 ]] && break
  rm -rf "$logs/saxpy-$pass"
  "$bin/tune" run kernels/saxpy.yaml --strategy exhaustive --out "$logs/saxpy-$pass" --json \
    >"$logs/saxpy-$pass.json" 2>"$logs/saxpy-$pass.err"
  note "saxpy $pass cubin cache: exit $? $(python3 -c "
import json; r=json.load(open('$logs/saxpy-$pass.json'))
b=r['best'][0]
print(f\"{r['evaluated']} evaluations in {r['seconds']:.1f} s = {r['evaluations_per_second']:.1f}/s; best {b['median_ms']:.4f} ms {b['gbps']:.0f} GB/s ({100*b['fraction_of_copy_bandwidth']:.1f}% of copy), {b['speedup_over_default']:.2f}x over default\")" 2>/dev/null)"
done

# The 3x3 convolution, tuned exhaustively; results go to the project's results/ tree.
[[ $skip_tuning == 0 ]] && "$bin/tune" run kernels/conv3x3.yaml --strategy exhaustive --json >"$logs/conv3x3.json" 2>"$logs/conv3x3.err"
[[ $skip_tuning == 0 ]] && note "conv3x3: exit $? $(python3 -c "
import json; r=json.load(open('$logs/conv3x3.json'))
b=r['best'][0]
print(f\"{r['evaluated']} evaluations in {r['seconds']:.1f} s = {r['evaluations_per_second']:.1f}/s; best {b['median_ms']:.4f} ms {b['gbps']:.0f} GB/s ({100*b['fraction_of_copy_bandwidth']:.1f}% of copy), {b['speedup_over_default']:.2f}x over default\")" 2>/dev/null)"
if [[ $skip_tuning == 0 ]]; then
  "$bin/tune" run kernels/saxpy.yaml --strategy exhaustive --json >"$logs/saxpy-results.json" 2>"$logs/saxpy-results.err"
  note "saxpy into results/: exit $?"
fi

if [[ -x "$bin/bench_compile" ]]; then
  "$bin/bench_compile" --worker "$bin/tune" --jobs "$(nproc)" --count 128 --arch sm_90 >"$logs/bench_compile.log" 2>&1
  note "compile pool: exit $? $(tail -n 3 "$logs/bench_compile.log" | tr '\n' ' ')"
fi
echo "---- summary"
cat "$summary"
