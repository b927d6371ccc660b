#!/usr/bin/env bash
# The row kernels at the shapes applications run (issue 30): RMSNorm (fp32, bf16) and softmax (fp32, bf16) at
# ROWS in {1000, 4096, 16384} x COLS in {4096, 4000, 14336} (Llama-3-8B's hidden size, a width that is no power of
# two, its MLP width; 1000 rows divide no tile). Each spec and shape is tuned with a modest budget (`tune run`,
# default strategy), which also measures the device-to-device copy ceiling in the same run; then one Python process
# times PyTorch's eager op and its torch.compile kernel at every shape (benchmarks/torch_reference.py rows).
# Timing mode: at ROWS 16384 the matrices are several times the L2 cache and both sides are timed warm (tune's
# back-to-back launches; PyTorch's calls rotate over copies of the input); at the smaller shapes, whose data would
# sit in the L2 between back-to-back launches, both sides are timed cold (`tune run --cold`, and PyTorch one call
# per sample after the same L2 flush).
# Floors, exit code 1 when one is missed: ours >= 90% of the copy ceiling at ROWS 16384, and ours at least as
# fast as torch.compile at every shape. A shape where torch.compile cannot run fails its floor, with the error.
# Usage (on a GPU host with PyTorch, from anywhere): benchmarks/rows_bench.sh [BIN_DIR] [LOG_DIR]
# ROWS_BENCH_TIME (default 4s) and ROWS_BENCH_BUDGET (default 60 evaluations) bound each tune run, whichever
# comes first: 36 runs and the PyTorch pass take about 6 minutes on an H200. ROWS_BENCH_SPECS and
# ROWS_BENCH_SHAPES (space-separated, e.g. "rmsnorm_bf16" and "16384x4096") narrow the grid.
# Records and best configurations go under LOG_DIR (runs/, best/), not results/.
# A failed step (a tune run, the PyTorch pass) exits 1 too, after the rest was measured; bad usage exits 2.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin rows_bench
(($# <= 2)) || bench_usage "at most two arguments"
bin="${1:-build}"
logs="${2:-rows-bench-logs}"
time_budget="${ROWS_BENCH_TIME:-4s}"
budget="${ROWS_BENCH_BUDGET:-60}"
specs=(${ROWS_BENCH_SPECS:-rmsnorm_bf16 rmsnorm softmax softmax_bf16})
shapes=(${ROWS_BENCH_SHAPES:-1000x4096 1000x4000 1000x14336 4096x4096 4096x4000 4096x14336 16384x4096 16384x4000 16384x14336})
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
cases="$logs/torch_cases.txt"
: >"$cases"
: >"$logs/tune_status.txt"

for spec in "${specs[@]}"; do
  for shape in "${shapes[@]}"; do
    rows_count="${shape%x*}"
    cols_count="${shape#*x}"
    problem="ROWS=$rows_count,COLS=$cols_count"
    mode=cold
    [[ $rows_count -ge 16384 ]] && mode=warm
    tag="${spec}_${rows_count}x${cols_count}"
    out="$logs/runs/$spec/$tag"
    rm -rf "$out"
    echo "== $spec $problem ($mode)" >&2
    bench_step "$tag: tune run, see $logs/$tag.err" timeout "${CASE_TIMEOUT:-90}" "$bin/tune" run "kernels/$spec.yaml" \
      --problem "$problem" --budget "$budget" --time "$time_budget" "--$mode" --out "$out" --best-dir "$logs/best" \
      --json >"$logs/$tag.json" 2>"$logs/$tag.err"
    echo "$? $spec $rows_count $cols_count $mode" >>"$logs/tune_status.txt"
    op="${spec%_bf16}"
    dtype=f32
    [[ $spec == *_bf16 ]] && dtype=bf16
    echo "$op $dtype $rows_count $cols_count $mode" >>"$cases"
  done
done

echo "== PyTorch eager and torch.compile, $(wc -l <"$cases") cases in one process" >&2
bench_step "the PyTorch pass, see $logs/torch.err" python3 benchmarks/torch_reference.py rows "$cases" \
  >"$logs/torch.jsonl" 2>"$logs/torch.err"
torch_status=$?

bench_step "report" python3 - "$logs" "$torch_status" <<'PY'
import json, os, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome

logs, torch_status = sys.argv[1], int(sys.argv[2])
torch_cases = {}
for line in open(os.path.join(logs, "torch.jsonl")):
    if line.strip():
        case = json.loads(line)
        op = case["op"] + ("_bf16" if case["dtype"] == "bf16" else "")
        torch_cases[(op, case["rows"], case["cols"])] = case
statuses = [line.split() for line in open(os.path.join(logs, "tune_status.txt"))]
# A fresh status file per run: the last entry of each case counts.
latest = {(spec, int(rows), int(cols)): (int(status), mode) for status, spec, rows, cols, mode in statuses}

header = ["spec", "shape", "timing", "ours ms", "ours GB/s", "of copy", "copy GB/s", "eager GB/s",
          "compile GB/s", "compile / ours", "floors", "best configuration"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
failures = []
for (spec, rows, cols), (status, mode) in latest.items():
    shape = f"{rows}x{cols}"
    torch_case = torch_cases.get((spec, rows, cols), {})
    try:
        run = json.load(open(os.path.join(logs, f"{spec}_{shape}.json")))
        best = run["best"][0]
    except Exception as error:  # a failed run is a row too, never a silent gap (its step is counted as failed)
        failures.append(f"{spec} {shape}: no tuned result (exit {status}): {error}")
        print(f"| {spec} | {shape} | {mode} | run failed (exit {status}) |" + " |" * (len(header) - 4))
        continue
    ours_ms = best["median_ms"]
    # The spec's minimal bytes (metrics.bytes), recovered from tune's own GB/s, put PyTorch on the same scale.
    moved_bytes = best["gbps"] * 1e9 * ours_ms * 1e-3

    def rate(name):
        timing = torch_case.get(name)
        if timing is None:
            return "not run", None
        if "error" in timing:
            return f"failed: {timing['error']}", None
        return f"{moved_bytes / (timing['median_ms'] * 1e-3) / 1e9:.0f}", timing["median_ms"]

    eager_text, _ = rate("eager")
    compile_text, compile_ms = rate("compiled")
    verdicts = []
    fraction = best["fraction_of_copy_bandwidth"]
    if rows >= 16384:
        if fraction >= 0.90:
            verdicts.append("copy >= 90%: meets")
        else:
            verdicts.append("copy >= 90%: BELOW")
            failures.append(f"{spec} {shape}: {100 * fraction:.1f}% of the copy ceiling, floor 90%")
    if compile_ms is None:
        verdicts.append("vs compile: NO torch.compile TIME")
        failures.append(f"{spec} {shape}: no torch.compile time ({compile_text}); the floor counts as missed")
        ratio_text = "-"
    else:
        ratio = compile_ms / ours_ms
        ratio_text = f"{ratio:.2f}x"
        if ratio >= 1.0:
            verdicts.append("vs compile: meets")
        else:
            verdicts.append("vs compile: BELOW")
            failures.append(f"{spec} {shape}: torch.compile {compile_ms:.4f} ms, ours {ours_ms:.4f} ms ({ratio:.2f}x)")
    configuration = " ".join(f"{k}={v}" for k, v in best["configuration"].items())
    print(f"| {spec} | {shape} | {mode} | {ours_ms:.4f} | {best['gbps']:.0f} | {100 * fraction:.1f}% | "
          f"{run['copy_bandwidth_gbps']:.0f} | {eager_text} | {compile_text} | {ratio_text} | {'; '.join(verdicts)} | "
          f"{configuration} |")

versions = {(case.get("torch"), case.get("device")) for case in torch_cases.values()}
print(f"\nPyTorch / device: {', '.join(f'{t} on {d}' for t, d in versions) or 'no PyTorch result'}; "
      "compile / ours > 1 means ours is faster.")
if torch_status != 0:
    error_lines = [line.strip() for line in open(os.path.join(logs, "torch.err")) if line.strip()]
    print(f"\nThe PyTorch pass exited with {torch_status}: {error_lines[-1] if error_lines else ''} "
          f"(all of it in {os.path.join(logs, 'torch.err')})")
if failures:
    print("\nFloors missed:\n" + "\n".join(f"  - {failure}" for failure in failures))
else:
    print("\nEvery floor met.")
outcome = Outcome("rows_bench report")
for failure in failures:
    outcome.missed(failure)
outcome.finish()
PY
bench_finish
