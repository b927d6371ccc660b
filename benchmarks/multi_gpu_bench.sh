#!/usr/bin/env bash
# Several GPUs of one host (issue 20): each spec is tuned with one GPU and then with N, same strategy, same budget,
# each run with an empty cubin cache (compilation included, as a user's first run has it); prints the evaluation
# rate of the search loop (evaluations / (run seconds - start-up)) for both and the ratio to linear scaling,
# rate(N) / (N x rate(1)), measured in this run. The final round is off: it runs on one GPU by design.
#
# Then the worker check: a run over the N GPUs during which one evaluation worker is killed (SIGKILL) must record
# every configuration once, the one being measured again on another GPU.
#
# Usage (on a host with 2 or more GPUs): benchmarks/multi_gpu_bench.sh [TUNE_BINARY] [OUT_DIR] [N]
# Env: SPECS (default "saxpy conv3x3 gemm_bf16"), STRATEGIES (default "default random"), BUDGET_<spec> to change
# a budget.
# Floors (issue 35), the default strategy's rate after the first result: >= 0.97 of linear on 2 GPUs, >= 0.95 on 4.
# Exits 1 when a run failed, a floor was missed or the worker check failed (the other runs still go on), 2 on bad
# usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source benchmarks/common.sh
bench_begin multi_gpu_bench
(($# <= 3)) || bench_usage "at most three arguments"
tune="${1:-build/tune}"
out="${2:-multi-gpu-logs}"
gpus="${3:-2}"
[[ $gpus =~ ^[0-9]+$ ]] && ((gpus >= 2)) || bench_usage "N must be a number of GPUs, 2 or more, not '$gpus'"
[[ -x "$tune" ]] || bench_usage "no $tune (build it, or name it)"
mkdir -p "$out"
export KERNLATHE_SOURCE_DIR="${KERNLATHE_SOURCE_DIR:-$PWD}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
all_devices=$(seq -s, 0 $((gpus - 1)))
declare -A budget=([saxpy]=600 [conv3x3]=400 [gemm_bf16]=400)
problem_gemm_bf16="--problem M=4096,N=4096,K=4096"

run_one() {  # spec strategy devices label -> prints the JSON path
  local spec=$1 strategy=$2 devices=$3 label=$4
  local b="${budget[$spec]}"
  local override="BUDGET_$spec"
  [[ -n "${!override:-}" ]] && b="${!override}"
  local problem_var="problem_$spec"
  local strategy_args=()
  [[ "$strategy" != default ]] && strategy_args=(--strategy "$strategy")
  local dir="$out/$spec-$strategy-$label"
  rm -rf "$dir" && mkdir -p "$dir/cache"
  # shellcheck disable=SC2086
  XDG_CACHE_HOME="$dir/cache" bench_step "$spec $strategy on devices $devices, see $dir/run.log" \
    "$tune" run "$spec" ${!problem_var:-} --devices "$devices" --budget "$b" --final 0 \
    "${strategy_args[@]}" --out "$dir/records" --best-dir "$dir/best" --ceiling-cache "$out/ceilings" --json \
    > "$dir/run.json" 2> "$dir/run.log"
  echo "$dir/run.json"
}

rates() {  # one.json many.json gpus -> one table row
  python3 - "$@" <<'PYTHON'
import json, os, sys
def figures(path):
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return None
    p = r["profile"]
    loop = r["seconds"] - p["startup_seconds"]
    steady = (r["evaluated"] - 1) / (r["seconds"] - p["first_result_seconds"])
    return {"loop": r["evaluated"] / loop, "steady": steady, "n": r["evaluated"], "first": p["first_result_seconds"],
            "compile": p["compile_wait_seconds"], "strategy": p["strategy_seconds"]}
one, many, gpus, strategy = figures(sys.argv[1]), figures(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if not one or not many:
    print("failed: see run.log beside", sys.argv[1] if not one else sys.argv[2]); sys.exit()
# Issue 35's floors, on the default strategy's rate after the first result: 0.97 of linear on 2 GPUs, 0.95 on 4+.
floor = 0.97 if gpus < 4 else 0.95
ratio = many["steady"] / (gpus * one["steady"])
if strategy == "default" and ratio < floor:
    with open(os.environ["BENCH_LEDGER"], "a") as ledger:
        ledger.write(f"missed\t{sys.argv[1].split('/')[-2].rsplit('-', 2)[0]} on {gpus} GPUs: {ratio:.3f} of linear "
                     f"after the first result (floor {floor})\n")
line = ""
for key in ("loop", "steady"):
    line += f"{one[key]:9.1f} {many[key]:9.1f} {many[key] / (gpus * one[key]):7.3f}   "
line += "({n}, {first:.2f}, {compile:.2f}, {strategy:.2f}".format(**one) + " | {n}, {first:.2f}, {compile:.2f}, {strategy:.2f})".format(**many)
print(line)
PYTHON
}

echo "multi-GPU scaling: $gpus GPUs ($("$tune" --version 2>/dev/null || echo tune)); $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ' | paste -sd, -)"
echo "whole loop: evaluations / (run seconds - start-up); after the first result: (evaluations - 1) / (run seconds -"
echo "time of the first result), which leaves out the first compilations, the same for any number of GPUs."
echo "linear: rate with $gpus GPUs / ($gpus x rate with one)."
printf "%-10s %-8s %9s %9s %7s   %9s %9s %7s   %s\n" spec strategy "1 GPU/s" "$gpus GPUs/s" linear "1 GPU/s" \
  "$gpus GPUs/s" linear "(evaluated, first result s, compile wait s, strategy s: 1 GPU | $gpus GPUs)"
printf "%-19s %-29s %s\n" "" "--- whole loop ---" "--- after the first result ---"
for spec in ${SPECS:-saxpy conv3x3 gemm_bf16}; do
  for strategy in ${STRATEGIES:-default random}; do
    one=$(run_one "$spec" "$strategy" 0 one) || true
    many=$(run_one "$spec" "$strategy" "$all_devices" many) || true
    printf "%-10s %-8s %s\n" "$spec" "$strategy" "$(rates "$one" "$many" "$gpus" "$strategy")"
  done
done

# The worker check: kill one evaluation worker while the run goes on.
echo
echo "worker check: one evaluation worker killed during a $gpus-GPU run of conv3x3"
dir="$out/kill-check"
rm -rf "$dir" && mkdir -p "$dir/cache"
XDG_CACHE_HOME="$dir/cache" "$tune" run conv3x3 --devices "$all_devices" --budget 300 --final 0 --strategy random \
  --out "$dir/records" --best-dir "$dir/best" --ceiling-cache "$out/ceilings" --json > "$dir/run.json" 2> "$dir/run.log" &
run_pid=$!
for _ in $(seq 1 100); do  # wait until the run is measuring
  [[ -s "$dir/records/evaluations.csv" ]] && [[ $(wc -l < "$dir/records/evaluations.csv") -gt 20 ]] && break
  sleep 0.2
done
victim=$(pgrep -f -- "__evaluation-worker" | head -n 1)
if [[ -n "$victim" ]]; then
  kill -9 "$victim" && echo "killed evaluation worker $victim"
else
  echo "no evaluation worker found to kill"
fi
wait "$run_pid"
run_status=$?
echo "exit status of the run: $run_status"
((run_status == 0)) || bench_failed "worker check: the run exited with $run_status, see $dir/run.log"
bench_step "worker check report" python3 - "$dir" <<'PYTHON'
import csv, json, os, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome
outcome = Outcome("multi_gpu_bench worker check")
d = sys.argv[1]
report = json.load(open(os.path.join(d, "run.json")))
rows = list(csv.DictReader(open(os.path.join(d, "records", "evaluations.csv"))))
parameters = [c for c in rows[0].keys() if c not in ("hash",) and c[0].isupper()]
keys = [tuple(r[p] for p in parameters) for r in rows]
again = [r for r in rows if "measured again" in r["message"]]
print(f"rows {len(rows)}, evaluated {report['evaluated']}, distinct {len(set(keys))}, per device "
      f"{report['evaluations_per_device']}, crashed {sum(r['status'] == 'crashed' for r in rows)}")
for r in again:
    print(f"  measured again: status {r['status']} on device {r['device']}: {r['message'][:160]}")
ok = len(rows) == report["evaluated"] and len(keys) == len(set(keys))
print("worker check:", "PASS" if ok and again else "FAIL")
if not (ok and again):
    outcome.missed(f"worker check: {len(rows)} rows for {report['evaluated']} evaluated, {len(set(keys))} distinct, "
                   f"{len(again)} measured again (every configuration once, one measured again)")
outcome.finish()
PYTHON
bench_finish
