#!/usr/bin/env bash
# Do `tune` and the shipped example agree on cuBLAS's time and on ours (issue 31)? bf16 GEMM at 4096^3 and at
# 8192 x 28672 x 4096 (B stored K x N). For each shape:
#   1. the runtime's choice there, from `tune best --select` on this GPU with the stored best configurations;
#   2. the example (examples/gemm.cpp, kernlathe::time_launches, three interleaved rounds) on an export of them;
#   3. `tune run --config` of the same configuration: its final round against cuBLAS in the same rounds.
# Floors: ours and cuBLAS within 2% between the two harnesses. Exit 1 on a failed step or a missed floor.
# Usage (GPU host, repository root): benchmarks/harness_agreement_bench.sh BIN_DIR LOG_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin harness_agreement
(($# == 2)) || bench_usage "expected BIN_DIR and LOG_DIR"
bin="$(cd "$1" && pwd)"
logs="$2"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
export KERNLATHE_SOURCE_DIR="$PWD" TUNE_BINARY="$bin/tune" LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
example="$bin/kernlathe_gemm_example"
[[ -x "$example" ]] || example="$bin/examples/kernlathe_gemm_example"
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
echo "date $(date -u +%FT%TZ) commit ${KERNLATHE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} gpu $gpu"

# Stale entries included: both harnesses time whatever the runtime takes, so its age does not matter here.
bench_step "export" "$bin/tune" export gemm_bf16 --include-stale -o "$logs/export" >"$logs/export.log" 2>&1
for shape in "4096 4096 4096" "8192 28672 4096"; do
  read -r m n k <<<"$shape"
  tag="M${m}_N${n}_K${k}"
  problem="M=$m,N=$n,K=$k,B_LAYOUT=0"
  bench_step "select $tag" "$bin/tune" best gemm_bf16 --select --device "$gpu" --problem "$problem" --json \
    >"$logs/select_$tag.json" 2>"$logs/select_$tag.err" || continue
  config="$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['configuration']; print(','.join(f'{k}={str(v).lower() if isinstance(v,bool) else v}' for k,v in c.items()))" "$logs/select_$tag.json")"
  bench_step "example $tag" "$example" "$logs/export" "$m" "$n" "$k" kn >"$logs/example_$tag.txt" 2>&1
  bench_step "tune $tag" "$bin/tune" run kernels/gemm_bf16.yaml --problem "$problem" --config "$config" \
    --out "$logs/run_$tag" --best-dir "$logs/best" --no-prior --final-rounds 5 --json \
    >"$logs/tune_$tag.json" 2>"$logs/tune_$tag.err"
  python3 - "$logs" "$tag" <<'PY'
import json, re, sys, os
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
from bench_outcome import Outcome
outcome = Outcome("harness_agreement")
logs, tag = sys.argv[1], sys.argv[2]
try:
    text = open(f"{logs}/example_{tag}.txt").read()
    found = re.search(r"kernlathe ([0-9.]+) ms .*cuBLAS ([0-9.]+) ms", text)
    ours_example, cublas_example = float(found.group(1)), float(found.group(2))
    run = json.load(open(f"{logs}/tune_{tag}.json"))
    ours_tune, cublas_tune = run["best"][0]["median_ms"], run["baseline_ms"]
except Exception as error:  # a step above failed: already recorded
    print(f"{tag}: no figures ({error})")
    sys.exit(0)
print(f"{tag}: ours example {ours_example:.4f} ms, tune {ours_tune:.4f} ms ({100 * (ours_tune / ours_example - 1):+.2f}%); "
      f"cuBLAS example {cublas_example:.4f} ms, tune {cublas_tune:.4f} ms ({100 * (cublas_tune / cublas_example - 1):+.2f}%); "
      f"final round stopped: {run.get('final_round_stop')} after {run.get('final_rounds')} rounds")
for who, a, b in (("ours", ours_example, ours_tune), ("cuBLAS", cublas_example, cublas_tune)):
    if abs(b / a - 1) > 0.02:
        outcome.missed(f"{tag}: {who} differs by {100 * (b / a - 1):+.2f}% between the example and tune (floor 2%)")
PY
done
bench_finish
