#!/usr/bin/env bash
# Attention forward against PyTorch's scaled_dot_product_attention backends, in one run (issue 19). For each shape
# (head dimension 64 and 128, causal and not, sequences 4k, 8k and 16k; 16 heads; batch x sequence = 32k tokens)
# it tunes kernels/SPEC.yaml with the default strategy over the whole space of the wgmma path, then times PyTorch's
# cuDNN, flash and memory-efficient backends on the same shape and dtype (benchmarks/torch_reference.py), and prints
# our tuned TFLOP/s over the fastest backend and over the flash backend.
#
# Every configuration tune measures is verified against the space's reference path (fp32 on CUDA cores). Only one
# reference configuration is kept in the candidate space: the others would be timed too, at 0.1-0.4 s a launch.
# Floors: >= 0.75 of the fastest PyTorch backend and >= 1.3x the flash backend on every shape.
#
# tune and PyTorch time differently (tune: launches timed one by one after a warm-up; PyTorch here: batches of ten
# back-to-back calls between two events), which moves a GEMM of a few milliseconds by a few percent on the H200
# (benchmarks/fused_gemm_versus_torch.py); the kernels here run 1-8 ms.
# Usage (on a GPU host, from anywhere): benchmarks/attention_bench.sh [BIN_DIR] [LOG_DIR] [SPEC]
#   SPEC: attention_bf16 (default) or attention_f16. ATTENTION_SHAPES ("HEAD_DIM SEQ CAUSAL" lines) replaces the
#   built-in list.
# Exits 1 when a floor is missed or a step failed (the other shapes are still measured), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin attention_bench
(($# <= 3)) || bench_usage "at most three arguments"
bin="${1:-build}"
logs="${2:-attention-logs}"
spec="${3:-attention_bf16}"
[[ -f "kernels/$spec.yaml" ]] || bench_usage "no kernels/$spec.yaml"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
dtype=$([[ $spec == *f16* && $spec != *bf16* ]] && echo f16 || echo bf16)
tokens=32768
heads=16

space="$logs/attention_candidates.yaml"
cp spaces/attention.yaml "$space"
cat >>"$space" <<'EOF2'
  # benchmarks/attention_bench.sh: the verification reference is the only reference-path configuration timed
  - PATH != "reference" or (REF_WARPS == 8 and REF_ROWS == 16)
EOF2
sed -e "s|^template: .*|template: $PWD/templates/attention.cu|" -e "s|^space: .*|space: $space|" \
  "kernels/$spec.yaml" >"$logs/$spec.yaml"

shapes="${ATTENTION_SHAPES:-128 4096 0
128 8192 0
128 16384 0
128 4096 1
128 8192 1
128 16384 1
64 4096 0
64 8192 0
64 16384 0
64 4096 1
64 8192 1
64 16384 1}"
: >"$logs/cases.tsv"
while read -r head_dim sequence causal; do
  [[ -z $head_dim ]] && continue
  batch=$((tokens / sequence))
  tag="d${head_dim}_s${sequence}_c${causal}"
  problem="BATCH=$batch,HEADS=$heads,SEQ=$sequence,HEAD_DIM=$head_dim,CAUSAL=$causal"
  echo "== $tag ($problem)" >&2
  rm -rf "$logs/$tag"
  bench_step "$tag: tune run, see $logs/$tag.err" timeout 400 "$bin/tune" run "$logs/$spec.yaml" \
    --problem "$problem" --budget 200 --out "$logs/$tag" --best-dir "$logs/best" --json \
    >"$logs/$tag.json" 2>"$logs/$tag.err"
  bench_step "$tag: PyTorch, see $logs/$tag.torch.err" python3 benchmarks/torch_reference.py attention "$batch" \
    "$heads" "$sequence" "$head_dim" "$causal" "$dtype" >"$logs/$tag.torch.json" 2>"$logs/$tag.torch.err"
  printf '%s\t%s\t%s\t%s\n' "$tag" "$head_dim" "$sequence" "$causal" >>"$logs/cases.tsv"
done <<<"$shapes"

bench_step "report" python3 - "$logs" "$spec" <<'PY'
import csv, json, math, os, statistics, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome

logs, spec = sys.argv[1:]
outcome = Outcome("attention_bench report")
run = torch_report = None
print(f"Attention forward, {spec}, 16 heads, batch x sequence = 32768 tokens; TFLOP/s (4 B H S^2 D, half causal)")
print()
print("| head dim | sequence | causal | ours | cuDNN | flash | efficient | ours / fastest | ours / flash | floors | "
      "evaluated (ok) | rate /s | compile s (median) | best configuration |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for line in open(os.path.join(logs, "cases.tsv")):
    tag, head_dim, sequence, causal = line.split()
    try:
        run = json.load(open(os.path.join(logs, tag + ".json")))
        torch_report = json.load(open(os.path.join(logs, tag + ".torch.json")))
    except (OSError, ValueError):
        print(f"| {head_dim} | {sequence} | {causal} | failed, see {tag}.err / {tag}.torch.err |")
        outcome.missed(f"{tag}: no tuned or no PyTorch result, floors not met")
        continue
    best = run["best"][0] if run.get("best") else None
    ours = best["gflops"] / 1000 if best and best["configuration"]["PATH"] == "wgmma" else float("nan")
    backends = {name: torch_report[name].get("tflops") for name in ("cudnn", "flash", "efficient")}
    fastest = max(value for value in backends.values() if value) if any(backends.values()) else float("nan")
    flash = backends["flash"] or float("nan")
    floors = "met" if ours >= 0.75 * fastest and ours >= 1.3 * flash else "MISSED"
    if floors != "met":  # a NaN (no wgmma winner, no backend time) compares false: missed
        outcome.missed(f"{tag}: ours {ours:.0f} TFLOP/s, fastest PyTorch {fastest:.0f}, flash {flash:.0f} "
                       "(floors 0.75x fastest, 1.3x flash)")
    records = run["records"]
    if os.path.isdir(records):
        records = os.path.join(records, "evaluations.csv")
    compile_seconds = [float(row["compile_ms"]) / 1000 for row in csv.DictReader(open(records))
                       if row["compile_ms"] and row["cubin_cached"] in ("false", "0")]
    compile_text = f"{statistics.median(compile_seconds):.2f}" if compile_seconds else "cached"
    shown = lambda value: f"{value:.0f}" if value else "-"
    configuration = " ".join(f"{k}={v}" for k, v in best["configuration"].items() if k.startswith("AT_")) if best else ""
    print(f"| {head_dim} | {sequence} | {causal} | {ours:.0f} | {shown(backends['cudnn'])} | {shown(backends['flash'])} | "
          f"{shown(backends['efficient'])} | {ours / fastest:.3f} | {ours / flash:.2f} | {floors} | "
          f"{run['evaluated']} ({run['statuses'].get('ok', 0)}) | {run['evaluations_per_second']:.1f} | {compile_text} | "
          f"{configuration} |")
print()
if run and torch_report:
    print(f"PyTorch {torch_report['torch']} on {torch_report['device']}; tune on {run['device']}.")
outcome.finish()
PY
bench_finish
