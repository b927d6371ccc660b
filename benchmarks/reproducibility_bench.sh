#!/usr/bin/env bash
# Reproducibility of a run's answer (issue 16): two fresh runs of the same space per kernel, different seeds, empty
# best caches, each ending with the final round. Prints per kernel: both winners and whether they agree (the same
# configuration, or final-round intervals that overlap), the best times' difference, the baseline ratios'
# difference, and the default configuration's energy per launch in both runs.
# Usage (GPU host, repository root): benchmarks/reproducibility_bench.sh BIN_DIR LOG_DIR [BUDGET]
# Then the selection regret: the winners and runner-ups of both runs measured again together in 40 interleaved rounds
# (`tune run --config ... --final-rounds 40`); each run's winner against the fastest of them.
# Floors (issue 31): the baseline's figure within 2% between the runs, the best within 1%, the ratio to the
# baseline within 1%, the winners the same or inside each other's final-round intervals, regret <= 1.005.
# Exits 1 when a run failed or a floor is missed, 2 on bad usage. REPRODUCIBILITY_CASES ("SPEC|PROBLEM" lines)
# replaces the built-in list; REGRET_ROUNDS (default 40) sets the regret's rounds.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
# A case's name in the logs: the spec's name, and its problem where one is given (gemm_bf16_M4096_N4096_K4096).
case_name() {
  local name
  name="$(basename "$1" .yaml)"
  [[ -n "$2" ]] && name+="_$(tr -d '=' <<<"${2//,/_}")"
  echo "$name"
}
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
  "kernels/gemm_bf16.yaml|M=8192,N=28672,K=4096"
)
if [[ -n "${REPRODUCIBILITY_CASES:-}" ]]; then
  mapfile -t cases < <(grep -v '^[[:space:]]*$' <<<"$REPRODUCIBILITY_CASES")
fi
for entry in "${cases[@]}"; do
  spec="${entry%%|*}"
  problem="${entry#*|}"
  name="$(case_name "$spec" "$problem")"
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

# The selection regret: both runs' winners and runner-ups measured again together (the run ranks its five fastest,
# the default joining the rounds too).
rounds="${REGRET_ROUNDS:-40}"
for entry in "${cases[@]}"; do
  spec="${entry%%|*}"
  problem="${entry#*|}"
  name="$(case_name "$spec" "$problem")"
  mapfile -t configs < <(python3 - "$logs/$name.run1.json" "$logs/$name.run2.json" <<'PY'
import json, sys
seen = []
for path in sys.argv[1:]:
    try:
        best = json.load(open(path))["best"][:2]
    except (OSError, ValueError, KeyError):
        continue
    for b in best:
        text = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in b["configuration"].items())
        if text not in seen:
            seen.append(text)
print("\n".join(seen))
PY
)
  ((${#configs[@]} >= 2)) || { echo "$name regret: fewer than two configurations to compare" >&2; continue; }
  config_options=()
  for config in "${configs[@]}"; do config_options+=(--config "$config"); done
  problem_option=()
  [[ -n "$problem" ]] && problem_option=(--problem "$problem")
  rm -rf "$logs/$name/regret" "$logs/$name/best-regret"
  bench_step "$name regret, see $logs/$name.regret.err" "$bin/tune" run "$spec" "${problem_option[@]}" \
    "${config_options[@]}" --final "${#configs[@]}" --final-rounds "$rounds" --final-max-rounds "$rounds" --no-prior \
    --out "$logs/$name/regret" --best-dir "$logs/$name/best-regret" --json \
    >"$logs/$name.regret.json" 2>"$logs/$name.regret.err"
done

bench_step "report" python3 - "$logs" "${cases[@]}" <<'PY'
import json, os, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome
logs = sys.argv[1]
outcome = Outcome("reproducibility_bench report")

def case_name(entry):
    spec, _, problem = entry.partition("|")
    name = os.path.basename(spec)[:-5]
    return name + ("_" + problem.replace(",", "_").replace("=", "") if problem else "")

def configuration_text(configuration):
    return ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in configuration.items())

def change(a, b):
    return (b - a) / a if a and b else float("nan")

print(f"{'case':<30} {'winners':<9} {'best ms run1':>22} {'best ms run2':>22} {'diff':>7} {'cuBLAS/base diff':>16} "
      f"{'of base 1':>9} {'of base 2':>9} {'diff':>7} {'regret 1':>9} {'regret 2':>9}")
for entry in sys.argv[2:]:
    name = case_name(entry)
    try:
        runs = [json.load(open(f"{logs}/{name}.run{r}.json")) for r in (1, 2)]
    except (OSError, ValueError) as error:
        print(f"{name:<30} no result ({error})")
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
    baseline = [r.get("baseline_ms", 0) for r in runs]
    floors = [("best", times, 0.01), ("ratio to the baseline", ratio, 0.01), ("baseline", baseline, 0.02)]
    for what, pair, floor in floors:
        if pair[0] and pair[1] and abs(change(*pair)) > floor:
            outcome.missed(f"{name}: the {what} differs by {100 * change(*pair):+.2f}% between the runs (floor {100 * floor:.0f}%)")
    regret = ["-", "-"]
    try:
        regret_run = json.load(open(f"{logs}/{name}.regret.json"))
        again = regret_run["best"]
        figures = {configuration_text(b["configuration"]): b.get("final_round", {}).get("mean_ms", 0) for b in again}
        fastest = min(v for v in figures.values() if v > 0)
        for index, b in enumerate(best):
            mine = figures.get(configuration_text(b["configuration"]), 0)
            if mine == 0:
                outcome.missed(f"{name}: run {index + 1}'s winner is not among the regret run's five fastest")
            else:
                regret[index] = f"{mine / fastest:.4f}"
                if mine / fastest > 1.005:
                    outcome.missed(f"{name}: run {index + 1}'s winner is {100 * (mine / fastest - 1):.2f}% slower than the fastest "
                                   f"of the top configurations in {regret_run.get('final_rounds', '?')} rounds (floor 0.5%)")
    except (OSError, ValueError, KeyError) as error:
        outcome.missed(f"{name}: no regret figures ({error})")
    def diff(a, b):
        return f"{100 * change(a, b):+.2f}%" if a and b else "-"
    print(f"{name:<30} {verdict:<9} {text[0]:>22} {text[1]:>22} {diff(*times):>7} {diff(*baseline):>16} "
          f"{ratio[0]:>9.4f} {ratio[1]:>9.4f} {diff(*ratio) if ratio[0] else '-':>7} {regret[0]:>9} {regret[1]:>9}")
    for r, run in zip(runs, (1, 2)):
        b = r["best"][0]
        print(f"    run {run}: {' '.join(f'{k}={v}' for k, v in b['configuration'].items())}")
outcome.finish()
PY
bench_finish
