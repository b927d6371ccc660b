#!/usr/bin/env bash
# Reproducibility of a run's answer (issue 16): two fresh runs of the same space per kernel, different seeds, empty
# best caches, each ending with the final round. Prints per kernel: both winners and whether they agree (the same
# configuration, or final-round intervals that overlap), the best times' difference, the baseline ratios'
# difference, and the default configuration's energy per launch in both runs.
# Usage (GPU host, repository root): benchmarks/reproducibility_bench.sh BIN_DIR LOG_DIR [BUDGET]
# Exits 1 when a run failed or two winners DIFFER (neither the same configuration nor overlapping intervals), 2 on
# bad usage. REPRODUCIBILITY_CASES ("SPEC|PROBLEM" lines) replaces the built-in list.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin reproducibility_bench
(($# <= 3)) || bench_usage "at most three arguments"
bin="${1:-build}"
logs="${2:-reproducibility-logs}"
budget="${3:-100}"
[[ $budget =~ ^[0-9]+$ ]] || bench_usage "BUDGET must be a whole number, not '$budget'"
mkdir -p "$logs"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

# kernel spec | problem
cases=(
  "kernels/saxpy.yaml|"
  "kernels/softmax.yaml|ROWS=8192,COLS=8192"
  "kernels/conv3x3.yaml|W=8192,H=8192"
  "kernels/gemm_bf16.yaml|M=4096,N=4096,K=4096"
)
if [[ -n "${REPRODUCIBILITY_CASES:-}" ]]; then
  mapfile -t cases < <(grep -v '^[[:space:]]*$' <<<"$REPRODUCIBILITY_CASES")
fi
for entry in "${cases[@]}"; do
  spec="${entry%%|*}"
  problem="${entry#*|}"
  name="$(basename "$spec" .yaml)"
  for run in 1 2; do
    out="$logs/$name/run$run"
    rm -rf "$out" "$logs/$name/best$run"
    problem_option=()
    [[ -n "$problem" ]] && problem_option=(--problem "$problem")
    bench_step "$name run $run, see $logs/$name.run$run.err" "$bin/tune" run "$spec" "${problem_option[@]}" \
      --budget "$budget" --seed "$run" --out "$out" --best-dir "$logs/$name/best$run" --json \
      >"$logs/$name.run$run.json" 2>"$logs/$name.run$run.err"
    echo "$name run $run: exit $?" >&2
  done
done

bench_step "report" python3 - "$logs" "${cases[@]}" <<'PY'
import json, os, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome
logs = sys.argv[1]
outcome = Outcome("reproducibility_bench report")
print(f"{'kernel':<10} {'winners':<9} {'best ms run1':>22} {'best ms run2':>22} {'diff':>7} {'of base 1':>9} "
      f"{'of base 2':>9} {'diff':>7} {'energy mJ 1':>12} {'energy mJ 2':>12} {'diff':>7}")
for entry in sys.argv[2:]:
    name = os.path.basename(entry.split("|")[0])[:-5]
    try:
        runs = [json.load(open(f"{logs}/{name}.run{r}.json")) for r in (1, 2)]
    except (OSError, ValueError) as error:
        print(f"{name:<10} no result ({error})")
        outcome.missed(f"{name}: no result from both runs to compare")
        continue
    best = [r["best"][0] for r in runs]
    final = [b.get("final_round", {}) for b in best]
    same = best[0]["configuration"] == best[1]["configuration"]
    overlap = final[0] and final[1] and final[0]["low_ms"] <= final[1]["high_ms"] and final[1]["low_ms"] <= final[0]["high_ms"]
    verdict = "same" if same else ("overlap" if overlap else "DIFFER")
    if verdict == "DIFFER":
        outcome.missed(f"{name}: the two runs' winners differ and their final-round intervals do not overlap")
    times = [f.get("mean_ms", b["median_ms"]) for f, b in zip(final, best)]
    text = [f"{f.get('mean_ms', 0):.5g} [{f.get('low_ms', 0):.5g}, {f.get('high_ms', 0):.5g}]" for f in final]
    ratio = [b.get("fraction_of_baseline", 0) for b in best]
    energy = [r.get("default_final_round", {}).get("energy_mj", 0) for r in runs]
    def diff(a, b):
        return f"{100 * (b - a) / a:+.2f}%" if a and b else "-"
    print(f"{name:<10} {verdict:<9} {text[0]:>22} {text[1]:>22} {diff(*times):>7} "
          f"{ratio[0]:>9.4f} {ratio[1]:>9.4f} {diff(*ratio) if ratio[0] else '-':>7} "
          f"{energy[0]:>12.5g} {energy[1]:>12.5g} {diff(*energy):>7}")
    for r, run in zip(runs, (1, 2)):
        b = r["best"][0]
        print(f"    run {run}: {' '.join(f'{k}={v}' for k, v in b['configuration'].items())}")
outcome.finish()
PY
bench_finish
