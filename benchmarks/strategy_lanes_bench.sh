#!/usr/bin/env bash
# What the lanes wait for the default strategy, without a GPU (issue 35): `tune run --replay` of the bf16 GEMM 2048^3
# record (2,100 rows) over 1 and 4 replayed devices, each measurement paced as a GPU's (--replay-pace), with the
# strategy on the loop's thread (--strategy-thread off: the loop before issue 35) and on its own (on). Prints, per
# case, the strategy's own time per evaluation (propose + update), its model updates, and the lane-seconds the lanes
# waited for it, from the run's profile (--json).
#
# The record predates the split-K parameter (commit a23157e), so the spec and space of the commit before it are
# taken from git into a temporary folder.
#
# Usage: benchmarks/strategy_lanes_bench.sh [TUNE] [BUDGET] [PACE_MS]   (defaults: build/tune 800 10)
set -euo pipefail
cd "$(dirname "$0")/.."
tune="${1:-build/tune}"
budget="${2:-800}"
pace="${3:-10}"
record=results/runs/gemm_bf16/sm_90/M=2048_N=2048_K=2048_INPUT_KIND=3_ELEMENT_BYTES=2/evaluations.csv
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/kernels" "$work/spaces"
git show a23157e~1:kernels/gemm_bf16.yaml >"$work/kernels/gemm_bf16.yaml"
git show a23157e~1:spaces/gemm.yaml >"$work/spaces/gemm.yaml"
ln -s "$PWD/templates" "$work/templates"

printf '%-8s %-8s %10s %14s %9s %10s %16s %12s\n' devices thread "loop s" "strategy ms/ev" asks "model upd" "model upd s" "lanes waited s"
for devices in 0 0,1,2,3; do
  for thread in off on; do
    "$tune" run "$work/kernels/gemm_bf16.yaml" --problem M=2048,N=2048,K=2048 --replay "$record" --devices "$devices" \
      --replay-pace "$pace" --budget "$budget" --strategy-thread "$thread" --json 2>/dev/null |
      python3 -c '
import json, sys
report = json.load(sys.stdin)
report = report[0] if isinstance(report, list) else report
profile = report["profile"]
strategy, lanes = profile["strategy"], profile["lanes"]
evaluations = max(profile["evaluations"], 1)
own = strategy["tell_seconds"] + strategy["ask_seconds"]
print("%-8s %-8s %10.2f %14.3f %9d %10d %16.2f %12.2f" % (sys.argv[1], sys.argv[2], report["seconds"],
      own / evaluations * 1e3, strategy["asks"], strategy["model_updates"], strategy["model_update_seconds"],
      lanes["idle_seconds_by_loop_activity"]["strategy"]))
' "$devices" "$thread"
  done
done
