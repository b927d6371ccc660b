#!/usr/bin/env bash
# Does the short warm-up on a busy GPU change what is measured? tuner/measure/measurement.h warms up for 20 ms after
# the GPU idled and for 2 ms (two launches at least) while the previous configuration kept it busy. For each case
# the same configurations (random search, one seed) are timed three times, one run after the other:
#   A: --busy-warmup 20 (the full warm-up before every configuration, the rule before the short one)
#   B: the default rule
#   A2: A again, so that the A-B differences can be read against the differences between two identical runs.
# Per case it prints, over the configurations that passed in all three runs, the median and the 5th/95th
# percentiles of B/A and of A2/A, the share within 2%, the best time of each run, and each run's evaluation rate.
# Usage (on a GPU host, from anywhere): benchmarks/warmup_bench.sh [BIN_DIR] [LOG_DIR]
# A diagnostic without floors: exits 1 when a run or a case's comparison failed (the other cases still run), 2 on
# bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin warmup_bench
(($# <= 2)) || bench_usage "at most two arguments"
bin="${1:-build}"
logs="${2:-warmup-logs}"
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

# kernel, problem, evaluations
cases=(
  "saxpy N=67108864 200"
  "softmax ROWS=8192,COLS=8192 150"
  "transpose ROWS=8192,COLS=8192 45"
  "gemm_bf16 M=4096,N=4096,K=4096 80"
)
if [[ -n "${WARMUP_CASES:-}" ]]; then mapfile -t cases < <(grep -v '^[[:space:]]*$' <<<"$WARMUP_CASES"); fi

for case in "${cases[@]}"; do
  read -r kernel problem budget <<<"$case"
  name="$kernel-${problem//[,=]/_}"
  for run in A B A2; do
    extra=()
    [[ $run != B ]] && extra=(--busy-warmup 20)
    out="$logs/$name/$run"
    rm -rf "$out"
    mkdir -p "$logs/$name"
    bench_step "$name $run: tune run, see $out.err" "$bin/tune" run "$kernel" --problem "$problem" --strategy random \
      --seed 7 --budget "$budget" --final 0 --best-dir "$logs/best-unused" --out "$out" --json "${extra[@]}" \
      >"$out.json" 2>"$out.err"
  done
  bench_step "$name: comparison" python3 - "$logs/$name" <<'EOF'
import csv, json, os, statistics, sys

folder = sys.argv[1]
runs = {}
rates = {}
for run in ("A", "B", "A2"):
    rows = list(csv.DictReader(open(os.path.join(folder, run, "evaluations.csv"))))
    first_result = rows[0].keys()
    parameters = [key for key in first_result if key not in ("hash",)]
    parameters = parameters[: parameters.index("status")]
    runs[run] = {tuple(row[p] for p in parameters): float(row["time_median_ms"]) for row in rows if row["status"] == "ok"}
    report = json.load(open(os.path.join(folder, run + ".json")))
    rates[run] = report["evaluations_per_second"]
common = set(runs["A"]) & set(runs["B"]) & set(runs["A2"])
if not common:
    sys.exit(f"{folder}: no configuration passed in all three runs")

def describe(ratios):
    ratios = sorted(ratios)
    pick = lambda q: ratios[min(len(ratios) - 1, int(q * len(ratios)))]
    within = sum(1 for r in ratios if abs(r - 1) <= 0.02) / len(ratios)
    return f"median {statistics.median(ratios):.4f}  p5 {pick(0.05):.4f}  p95 {pick(0.95):.4f}  within 2% {within:.0%}"

short = [runs["B"][c] / runs["A"][c] for c in common]
again = [runs["A2"][c] / runs["A"][c] for c in common]
best = {run: min(runs[run][c] for c in common) for run in runs}
print(f"{os.path.basename(folder)}: {len(common)} configurations")
print(f"  short warm-up B/A     {describe(short)}")
print(f"  same rule again A2/A  {describe(again)}")
print(f"  best ms  A {best['A']:.5g}  B {best['B']:.5g}  A2 {best['A2']:.5g}")
print(f"  evaluations/s  A {rates['A']:.1f}  B {rates['B']:.1f}  A2 {rates['A2']:.1f}  (B/A {rates['B'] / rates['A']:.2f}x)")
EOF
done
bench_finish
