#!/usr/bin/env bash
# The memory-bound kernel family against the copy ceiling (issue 4). For each spec and size, `tune run` tunes with
# a budget and the default strategy (no --strategy, the path users take: on softmax 4096x32768 random search found
# 70.9% of copy where the default reached 93.3% in as many evaluations, issue 18), measuring the device-to-device
# copy bandwidth in the same run; the table reports the tuned configuration's bandwidth and its fraction of that copy
# ceiling, the spec's default configuration's time and the worst configuration that passed verification (the
# slowest `ok` row of the run's evaluations.csv).
# Large sizes move >= 1 GiB (the floors apply there); small ones are launch-bound.
# The fused residual add + layernorm (add_layernorm, issue 19) is also compared with PyTorch's unfused sequence,
# x + r then layer_norm, timed in the same run on the same shape and type (benchmarks/torch_reference.py): its time,
# its fraction of the copy ceiling counting the fused operation's minimal bytes, and PyTorch's time over ours.
# Usage (on a GPU host, from anywhere): benchmarks/memory_bound_bench.sh [BIN_DIR] [LOG_DIR] [BUDGET]
# Records go to $RESULTS_DIR/runs/<kernel>/<arch>/<problem>/, best configurations to $RESULTS_DIR/best/
# (RESULTS_DIR defaults to results/). MEMORY_BOUND_CASES (newline-separated "kernel problem floor [budget]" lines)
# replaces the built-in list of cases, e.g. to re-run only the kernels a change touched.
# Exits 1 when a case is BELOW its floor or a step failed (the other cases are still measured), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin memory_bound_bench
(($# <= 3)) || bench_usage "at most three arguments"
bin="${1:-build}"
logs="${2:-memory-bound-logs}"
budget="${3:-150}"
[[ $budget =~ ^[0-9]+$ ]] || bench_usage "BUDGET must be a whole number, not '$budget'"
results="${RESULTS_DIR:-results}"
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
rows="$logs/rows.tsv"
: >"$rows"

# kernel, problem, floor (fraction of copy; '-' for launch-bound sizes), optional budget
cases=(
  "vector_add N=268435456 0.90"        # 3 GiB
  "vector_add N=65536 -"
  "saxpy N=268435456 0.90"
  "saxpy N=65536 -"
  "reduce_sum N=1073741824 0.90"       # 2^30 floats, 4 GiB read
  "reduce_sum N=65536 -"
  "softmax ROWS=8192,COLS=8192 0.90"   # 512 MiB
  "softmax ROWS=4096,COLS=32768 0.90"  # 1 GiB
  "softmax ROWS=256,COLS=1024 -"
  "layernorm ROWS=8192,COLS=8192 0.90 500"   # a large space (50,382 valid configurations): more evaluations
  "layernorm ROWS=4096,COLS=32768 0.90 500"
  "layernorm ROWS=256,COLS=1024 -"
  "transpose ROWS=8192,COLS=8192 0.85"
  "transpose ROWS=16384,COLS=16384 0.85"   # 2 GiB
  "transpose ROWS=512,COLS=512 -"
  "conv3x3 W=8192,H=8192 0.85"
  "conv3x3 W=16384,H=16384 0.85"
  "conv3x3 W=512,H=512 -"
  "softmax_bf16 ROWS=8192,COLS=8192 0.90"
  "softmax_bf16 ROWS=4096,COLS=65536 0.90"  # 1 GiB
  "reduce_sum_bf16 N=1073741824 0.90"       # 2^30 bf16 values, 2 GiB read
  "layernorm_bf16 ROWS=8192,COLS=8192 0.90"
  "layernorm_bf16 ROWS=4096,COLS=65536 0.90"
  "add_layernorm ROWS=8192,COLS=8192 0.90 500"   # 1 GiB: x, r read, sum, output written
  "add_layernorm ROWS=4096,COLS=32768 0.90 500"
  "add_layernorm ROWS=256,COLS=1024 -"
  "add_layernorm_bf16 ROWS=8192,COLS=8192 -"
)
if [[ -n "${MEMORY_BOUND_CASES:-}" ]]; then
  mapfile -t cases < <(grep -v '^[[:space:]]*$' <<<"$MEMORY_BOUND_CASES")
fi
for case in "${cases[@]}"; do
  read -r kernel problem floor case_budget <<<"$case"
  tag="${kernel}_${problem//[=,]/_}"
  # saxpy and conv3x3 keep their exhaustive records in results/: this benchmark's go under LOG_DIR for them.
  case "$kernel" in
    saxpy|conv3x3) out="$logs/runs/$kernel/${problem//,/_}"; best_dir="$logs/best" ;;
    *) out="$results/runs/$kernel/sm_90/${problem//,/_}"; best_dir="$results/best" ;;
  esac
  rm -rf "$out"
  echo "== $kernel $problem" >&2
  mkdir -p "$best_dir"
  bench_step "$tag: tune run, see $logs/$tag.err" timeout "${CASE_TIMEOUT:-120}" "$bin/tune" run "kernels/$kernel.yaml" \
    --problem "$problem" --budget "${case_budget:-$budget}" --out "$out" --best-dir "$best_dir" --json \
    >"$logs/$tag.json" 2>"$logs/$tag.err"
  status=$?
  : >"$logs/$tag.torch.json"
  if [[ $kernel == add_layernorm* ]]; then
    read -r rows_count cols_count <<<"$(sed 's/ROWS=\([0-9]*\),COLS=\([0-9]*\)/\1 \2/' <<<"$problem")"
    dtype=f32; [[ $kernel == *_bf16 ]] && dtype=bf16
    bench_step "$tag: PyTorch, see $logs/$tag.torch.err" python3 benchmarks/torch_reference.py add_layernorm \
      "$rows_count" "$cols_count" "$dtype" >"$logs/$tag.torch.json" 2>"$logs/$tag.torch.err"
  fi
  bench_step "$tag: row" python3 - "$logs/$tag.json" "$out/evaluations.csv" "$kernel" "$problem" "$floor" "$status" \
    "$logs/$tag.torch.json" >>"$rows" <<'PY'
import csv, json, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome
json_path, csv_path, kernel, problem, floor, status, torch_path = sys.argv[1:]
outcome = Outcome(f"memory_bound_bench {kernel} {problem}")
try:
    run = json.load(open(json_path))
    best = run["best"][0]
    ok = [r for r in csv.DictReader(open(csv_path)) if r["status"] == "ok"]
    worst = max(ok, key=lambda r: float(r["time_median_ms"]))
    fastest = min(ok, key=lambda r: float(r["time_median_ms"]))
    default_ms = run.get("default_time_ms")
    fraction = best["fraction_of_copy_bandwidth"]
    verdict = "-" if floor == "-" else ("meets" if fraction >= float(floor) else "BELOW")
    if verdict == "BELOW":
        outcome.missed(f"{kernel} {problem}: {100 * fraction:.1f}% of copy, floor {100 * float(floor):.0f}%")
    torch_columns = ["-", "-", "-"]
    torch_text = open(torch_path).read().strip()
    if torch_text:  # PyTorch's unfused sequence, on the tune run's copy-ceiling scale
        reference = json.loads(torch_text)
        torch_ms = reference["add_then_layer_norm"]["median_ms"]
        torch_fraction = reference["bytes"] / (torch_ms * 1e-3) / 1e9 / run["copy_bandwidth_gbps"]
        torch_columns = [f"{torch_ms:.4f}", f"{100 * torch_fraction:.1f}%", f"{torch_ms / best['median_ms']:.2f}x"]
    print("\t".join([kernel, problem, f"{best['median_ms']:.4f}", f"{best['gbps']:.0f}", f"{100 * fraction:.1f}%",
                     f"{run['copy_bandwidth_gbps']:.0f}", "-" if default_ms is None else f"{default_ms:.4f}",
                     f"{float(worst['time_median_ms']):.4f}", f"{len(ok)}/{run['evaluated']}",
                     floor if floor == "-" else f"{100 * float(floor):.0f}%", verdict, *torch_columns,
                     " ".join(f"{k}={v}" for k, v in best["configuration"].items()),
                     f"{fastest['registers']} regs, occupancy {float(fastest['occupancy']):.2f}"]))
except Exception as error:  # a failed run is a row too, never a silent gap
    print("\t".join([kernel, problem, f"run failed (exit {status}): {error}"] + [""] * 13))
    if floor != "-":
        outcome.missed(f"{kernel} {problem}: no result, floor {100 * float(floor):.0f}% not met")
# The table goes to stdout (the rows file): the final line to stderr.
if outcome.records:
    outcome.finish(sys.stderr)
PY
  tail -n 1 "$rows" >&2
done

echo "| kernel | problem | best ms | best GB/s | of copy | copy GB/s | default ms | worst ok ms | ok/evaluated | floor | verdict | PyTorch ms | PyTorch of copy | PyTorch / ours | best configuration | best's registers |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
while IFS=$'\t' read -r -a field; do
  (IFS='|'; echo "| ${field[*]} |" | sed 's/|/ | /g; s/^ | /| /; s/ | $/ |/')
done <"$rows"
bench_finish
