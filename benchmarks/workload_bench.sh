#!/usr/bin/env bash
# A workload tuned as one (issue 32): the 20 nn.Linear GEMMs of a Llama-3-8B layer (workloads/llama3-8b-gemm.yaml)
# tuned by `tune sweep`, which hands each problem the records of the problems finished before it as priors, against
# the same 20 problems each tuned from scratch (`tune run --no-prior`), on one GPU, the same time per problem, no
# final round. Each side runs in an empty working folder of its own (no results database: neither side learns from
# this project's records) with its own empty best cache and cubin cache, so both compile everything they measure and
# neither measures first what the other stored. Both start from the space's declared problem defaults.
#
# Time to the same quality, per problem: the from-scratch run's best verified median q; each side's time, from its
# first result, until a row within TOLERANCE of q (default 1%). A problem where the sweep never gets there counts its
# whole search time and is named. Printed per problem and summed; then `tune cover` over the sweep's records: a
# covering set of at most 6 configurations, each problem's fraction of its best when it was held out of the choice.
#
# Floors (issue 32): the sweep's summed time to quality <= 1/3 of the from-scratch runs'; the covering set's held-out
# fractions: geometric mean >= 0.97, worst >= 0.90.
# Exits 1 when a run failed or a floor was missed, 2 on bad usage.
# Usage (GPU host, repository root): benchmarks/workload_bench.sh [TUNE_BINARY] [OUT_DIR] [SECONDS_PER_PROBLEM]
# Env: WORKLOAD (default workloads/llama3-8b-gemm.yaml, one kernel), DEVICE (default 0), TOLERANCE (default 0.01),
# ARCH (the GPU's, for `tune cover`; default sm_90).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source benchmarks/common.sh
bench_begin workload_bench
(($# <= 3)) || bench_usage "at most three arguments"
tune="${1:-build/tune}"
out="${2:-workload-logs}"
seconds="${3:-8}"
[[ -x "$tune" ]] || bench_usage "no $tune (build it, or name it)"
[[ $seconds =~ ^[0-9]+$ ]] && ((seconds >= 1)) || bench_usage "SECONDS_PER_PROBLEM must be a whole number, not '$seconds'"
workload="$(realpath "${WORKLOAD:-workloads/llama3-8b-gemm.yaml}")"
device="${DEVICE:-0}"
tune="$(realpath "$tune")"
mkdir -p "$out"
out="$(realpath "$out")"
export KERNLATHE_SOURCE_DIR="${KERNLATHE_SOURCE_DIR:-$PWD}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
repository="$PWD"
rm -rf "$out/sweep" "$out/scratch" "$out/work-sweep" "$out/work-scratch" "$out/cache-sweep" "$out/cache-scratch" \
  "$out/cover-records"
mkdir -p "$out/work-sweep" "$out/work-scratch" "$out/scratch"
echo "workload: $(basename "$workload"), ${seconds} s per problem, device $device ($("$tune" --version 2>/dev/null)); \
$(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader -i "$device" 2>/dev/null)"

# 1. The sweep: each problem's records go under sweep/<label>/, the earlier problems' records its priors.
start=$SECONDS
(cd "$out/work-sweep" && XDG_CACHE_HOME="$out/cache-sweep" bench_step "tune sweep" \
  "$tune" sweep "$workload" --device "$device" --time "${seconds}s" --final 0 --out "$out/sweep" \
  --best-dir "$out/work-sweep/best" --json \
  > "$out/sweep.json" 2> "$out/sweep.log")
echo "sweep: exit $? in $((SECONDS - start)) s (log sweep.log)"

# 2. Each problem from scratch, in the same order, its records under scratch/<label>/.
start=$SECONDS
mapfile -t problems < <(python3 - "$out/sweep/state.json" <<'PYTHON'
import json, sys
state = json.load(open(sys.argv[1]))
for label, entry in state["problems"].items():
    print(f"{label}\t{entry['spec']}\t{entry['problem']}")
PYTHON
)
((${#problems[@]} > 0)) || bench_failed "the sweep left no problem in its state.json"
for line in "${problems[@]}"; do
  IFS=$'\t' read -r label spec problem <<<"$line"
  (cd "$out/work-scratch" && XDG_CACHE_HOME="$out/cache-scratch" bench_step "from scratch: $label" \
    "$tune" run "$spec" --problem "$problem" --no-prior --device "$device" --time "${seconds}s" --final 0 \
    --out "$out/scratch/$label" --best-dir "$out/work-scratch/best" --json > "$out/scratch/$label.json" \
    2> "$out/scratch/$label.log")
done
echo "from scratch: ${#problems[@]} problems in $((SECONDS - start)) s"
rm -rf "$out/cache-sweep" "$out/cache-scratch"

# 3. Time to the same quality.
bench_step "time to quality" python3 "$repository/benchmarks/workload_time_to_quality.py" "$out/sweep" "$out/scratch" \
  --tolerance "${TOLERANCE:-0.01}"

# 4. The covering set over the sweep's records (`tune cover` reads <root>/<kernel>/<arch>/<problem>/).
arch="${ARCH:-sm_90}"
kernel=""
mkdir -p "$out/cover-records"
for line in "${problems[@]}"; do
  IFS=$'\t' read -r label spec problem <<<"$line"
  kernel="$(basename "$spec" .yaml)"
  mkdir -p "$out/cover-records/$kernel/$arch"
  cp -r "$out/sweep/$label" "$out/cover-records/$kernel/$arch/$label"  # copies: the iterator follows no links
done
# (from the repository root: `tune cover` finds the spec under kernels/)
(bench_step "tune cover" "$tune" cover "$kernel" --arch "$arch" --records "$out/cover-records" \
  --max-configs 6 > "$out/cover.txt" 2> "$out/cover.log" && "$tune" cover "$kernel" --arch "$arch" \
  --records "$out/cover-records" --max-configs 6 --json > "$out/cover.json" 2>> "$out/cover.log") || true
cat "$out/cover.txt"
bench_step "covering set" python3 - "$out/cover.json" <<'PYTHON'
import json, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome
outcome = Outcome("workload_bench covering set")
report = json.load(open(sys.argv[1]))
held = report["held_out"]
print(f"covering set of at most 6, each problem held out of the choice: geometric mean {held['geometric_mean']:.3f} "
      f"(floor 0.97), worst {held['worst']:.3f} (floor 0.90), uncovered {held['uncovered']}")
if held["geometric_mean"] < 0.97 or held["uncovered"]:
    outcome.missed(f"covering set held out: geometric mean {held['geometric_mean']:.3f} < 0.97 "
                   f"or {held['uncovered']} problems uncovered")
if held["worst"] < 0.90:
    outcome.missed(f"covering set held out: worst {held['worst']:.3f} < 0.90")
outcome.finish()
PYTHON
bench_finish
