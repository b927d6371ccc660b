#!/usr/bin/env bash
# The benchmark scripts and scripts/gpu-check.sh on a machine without a GPU (issue 31): given a `tune` that fails
# (a stub in a BIN_DIR, the folder every script takes), each goes on with its other steps, names what failed on its
# last line and exits 1; bad usage exits 2; a stub `tune` whose results meet the floors gives exit 0 and one whose
# results miss them exit 1 naming the floor. No GPU, driver or PyTorch is used (CUDA_VISIBLE_DEVICES is empty and
# the stubs stand in for tune, nvidia-smi and test_gpu_device).
# Usage: tests/benchmarks_failure_paths_check.sh [SOURCE_DIR]
set -uo pipefail
source_dir="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
cd "$source_dir" || exit 1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CUDA_VISIBLE_DEVICES="" TMPDIR="$work"
export STUB_LOG="$work/tune-calls.log"
problems=0
problem() { echo "FAIL: $*" >&2; problems=$((problems + 1)); }

# Stubs: tune (STUB_TUNE=fail: exit 1; memory: a run result of fraction STUB_FRACTION of the copy ceiling; faults:
# the planted-fault run's statuses), nvidia-smi and test_gpu_device (STUB_GPU=ok or fail).
mkdir -p "$work/bin" "$work/path" "$work/empty"
cat >"$work/bin/tune" <<'STUB'
#!/usr/bin/env bash
echo "tune $*" >>"$STUB_LOG"
[[ ${1:-} == --version ]] && { echo "tune stub"; exit 0; }
out=""
previous=""
for argument in "$@"; do
  [[ $previous == --out ]] && out="$argument"
  previous="$argument"
done
case "${STUB_TUNE:-fail}" in
  memory)
    mkdir -p "$out"
    printf 'BLOCK,status,time_median_ms,registers,occupancy\n256,ok,1.0,32,1.0\n' >"$out/evaluations.csv"
    echo "{\"best\": [{\"median_ms\": 1.0, \"gbps\": 900, \"fraction_of_copy_bandwidth\": ${STUB_FRACTION},
           \"configuration\": {\"BLOCK\": 256}}], \"copy_bandwidth_gbps\": 1000, \"evaluated\": 1,
           \"default_time_ms\": 1.5}" ;;
  faults) echo '{"statuses": {"ok": 1, "compile_error": 1}}' ;;
  *) echo "tune stub: no GPU here" >&2; exit 1 ;;
esac
STUB
printf '#!/usr/bin/env bash\n[[ ${STUB_GPU:-fail} == ok ]] && { echo "name, driver"; exit 0; }\necho "no driver" >&2; exit 9\n' \
  >"$work/path/nvidia-smi"
printf '#!/usr/bin/env bash\n[[ ${STUB_GPU:-fail} == ok ]] && { echo "[  PASSED  ] 1 test."; exit 0; }\nexit 1\n' \
  >"$work/bin/test_gpu_device"
printf '#!/usr/bin/env bash\nexit 1\n' >"$work/path/failing-python"
chmod +x "$work/bin/tune" "$work/bin/test_gpu_device" "$work/path/nvidia-smi" "$work/path/failing-python"
export PATH="$work/path:$PATH"

# expect NAME EXIT_CODE TEXT_OF_LAST_LINE TUNE_CALLS COMMAND...: runs COMMAND with a fresh log of tune calls and checks
# its exit code, that its last line of output contains TEXT (unless empty) and that tune was called TUNE_CALLS times
# (unless "-"): a script that stops at its first failed step calls it fewer times.
expect() {
  local name="$1" code="$2" text="$3" calls="$4"
  shift 4
  : >"$STUB_LOG"
  local output actual
  output="$("$@" 2>"$work/$name.stderr")"
  actual=$?
  printf '%s\n' "$output" >"$work/$name.stdout"
  [[ $actual == "$code" ]] || problem "$name: exit $actual, expected $code; output ends: $(tail -n 3 <<<"$output") $(tail -n 3 "$work/$name.stderr")"
  if [[ -n $text ]] && ! grep -qF -- "$text" <<<"$(printf '%s\n' "$output" | tail -n 2; tail -n 2 "$work/$name.stderr")"; then
    problem "$name: the last lines do not say '$text': $(tail -n 1 "$work/$name.stdout") / $(tail -n 1 "$work/$name.stderr")"
  fi
  local made
  made=$(grep -c '^tune run' "$STUB_LOG")
  [[ $calls == - || $made == "$calls" ]] || problem "$name: tune run called $made times, expected $calls"
  echo "checked $name (exit $actual, $made tune runs)"
}

bin="$work/bin"
logs="$work/logs"

# scripts/gpu-check.sh: every step runs after the first failure; the last line names the failed steps.
expect gpu-check-failing 1 "faults run (exit 1)" 5 scripts/gpu-check.sh "$bin" "$logs/gpu-check"
tail -n 1 "$work/gpu-check-failing.stdout" | grep -q "gpu tests (exit 1)" ||
  problem "gpu-check: the last line does not name the failed GPU tests"
tail -n 1 "$work/gpu-check-failing.stdout" | grep -q "nvidia-smi (exit 9)" ||
  problem "gpu-check: the last line does not name the failed nvidia-smi"
STUB_TUNE=faults STUB_GPU=ok ONLY_CHECKS=1 \
  expect gpu-check-passing 0 "every step ran and every floor held" 1 scripts/gpu-check.sh "$bin" "$logs/gpu-check-ok"
expect gpu-check-usage 2 "" 0 scripts/gpu-check.sh "$bin" "$logs/x" extra
expect gpu-check-no-tune 2 "no $work/empty/tune" 0 scripts/gpu-check.sh "$work/empty" "$logs/x"

# The benchmarks with a failing tune: each goes through all its cases.
ATTENTION_SHAPES=$'64 4096 0\n128 8192 1' \
  expect attention 1 "d128_s8192_c1: tune run" 2 benchmarks/attention_bench.sh "$bin" "$logs/attention"
expect attention-usage 2 "no kernels/no_such_spec.yaml" 0 benchmarks/attention_bench.sh "$bin" "$logs/x" no_such_spec
expect fused-gemm 1 "bias_residual: tune run" 4 benchmarks/fused_gemm_bench.sh "$bin" "$logs/fused" M=256,N=256,K=256
expect fused-gemm-usage 2 "PROBLEM must read" 0 benchmarks/fused_gemm_bench.sh "$bin" "$logs/x" 256x256
MEMORY_BOUND_CASES=$'saxpy N=65536 -\nsoftmax ROWS=8192,COLS=8192 0.90' RESULTS_DIR="$work/results" \
  expect memory-bound 1 "softmax_ROWS_8192_COLS_8192: tune run" 2 benchmarks/memory_bound_bench.sh "$bin" "$logs/memory" 5
ROWS_BENCH_SPECS="softmax rmsnorm" ROWS_BENCH_SHAPES=1000x4096 \
  expect rows 1 "rmsnorm_1000x4096: tune run" 2 benchmarks/rows_bench.sh "$bin" "$logs/rows"
WARMUP_CASES="saxpy N=1024 2" expect warmup 1 "saxpy-N_1024 A2: tune run" 3 benchmarks/warmup_bench.sh "$bin" "$logs/warmup"
REPRODUCIBILITY_CASES="kernels/saxpy.yaml|" \
  expect reproducibility 1 "saxpy run 2" 2 benchmarks/reproducibility_bench.sh "$bin" "$logs/reproducibility" 5
STARTUP_SPECS=saxpy STARTUP_COLD_SPECS=saxpy STARTUP_RUNS=1 \
  expect startup 1 "saxpy-cold: tune run" 3 benchmarks/startup_bench.sh "$bin" "$logs/startup"
RUNTIME_KERNELS=saxpy STREAM_KERNELS="" \
  expect runtime 1 "runtime GPU tests" 2 benchmarks/runtime_bench.sh "$bin" "$logs/runtime" 1
printf 'tokens: [4096, 16]\ngemm:\n  - {name: qkv, N: 6144, K: 4096}\n' >"$work/workload.yaml"
if python3 -c 'import yaml' 2>/dev/null; then  # the script reads the workload with PyYAML
  # Two tune runs of gemm_bf16 (M=4096 and M=16) and one of the decode path (M=16 <= 64).
  expect linear-workload 1 "runtime M=16 N=6144 K=4096" 3 \
    benchmarks/linear_workload_bench.sh "$bin" "$logs/linear" 1 "$work/workload.yaml"
else
  expect linear-workload 1 "no shapes read from $work/workload.yaml" 0 \
    benchmarks/linear_workload_bench.sh "$bin" "$logs/linear" 1 "$work/workload.yaml"
fi
expect loader-usage 2 "no $work/empty/tune" 0 benchmarks/loader_bench.sh "$work/empty" "$logs/x"
expect multi-gpu-usage 2 "2 or more" 0 benchmarks/multi_gpu_bench.sh "$bin/tune" "$logs/x" 1
expect harness-agreement-usage 2 "expected BIN_DIR and LOG_DIR" 0 benchmarks/harness_agreement_bench.sh "$bin"
PYTHON="$work/path/failing-python" KT_WHEELS="$work/empty" KT_VENV="$work/venv" \
  expect kernel-tuner 1 "could not create $work/venv" 0 benchmarks/kernel_tuner_bench.sh "$bin/tune" "$logs/kt"

# Floors, with a tune that succeeds: met gives 0, missed gives 1 and names the case.
cases=$'saxpy N=65536 -\nsoftmax ROWS=8192,COLS=8192 0.90'
STUB_TUNE=memory STUB_FRACTION=0.95 MEMORY_BOUND_CASES="$cases" RESULTS_DIR="$work/results" \
  expect memory-bound-met 0 "every step ran and every floor held" 2 \
  benchmarks/memory_bound_bench.sh "$bin" "$logs/memory-met" 5
STUB_TUNE=memory STUB_FRACTION=0.5 MEMORY_BOUND_CASES="$cases" RESULTS_DIR="$work/results" \
  expect memory-bound-below 1 "0 failed step(s), 1 missed floor(s): softmax ROWS=8192,COLS=8192: 50.0% of copy, floor 90%" 2 \
  benchmarks/memory_bound_bench.sh "$bin" "$logs/memory-below" 5

# bench_outcome.py on its own: a record exits 1 and lands in the ledger; none exits 0.
BENCH_LEDGER="$work/ledger" python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
from bench_outcome import Outcome
outcome = Outcome('check'); outcome.missed('a floor'); outcome.finish()" >"$work/outcome.out" 2>/dev/null
[[ $? == 1 ]] || problem "bench_outcome: a missed floor did not exit 1"
grep -qx $'missed\ta floor' "$work/ledger" || problem "bench_outcome: the ledger lacks the missed floor"
python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
from bench_outcome import Outcome
Outcome('check').finish()" >/dev/null || problem "bench_outcome: nothing recorded did not exit 0"

if ((problems)); then
  echo "$problems problem(s)" >&2
  exit 1
fi
echo "every benchmark script exits as it should"
