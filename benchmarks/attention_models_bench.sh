#!/usr/bin/env bash
# Attention as Llama-3-8B runs it (issue 33; ../shared/workloads/llama3-8b.yaml): 32 query heads over 8 key/value
# heads of dimension 128, causal, bf16, [batch][seq][heads][dim] tensors (LAYOUT=1, BSHD), sequences 1000, 4096 and
# 8192 (batch = 16384 / sequence, at least 1). For each it tunes kernels/attention_bf16.yaml over the wgmma path (every
# configuration verified against the fp32 reference path; one reference configuration kept in the candidate space)
# and times PyTorch's scaled_dot_product_attention with the cuDNN backend forced, same shape, layout (transposed views
# of [B, S, H, D] tensors) and grouped heads (enable_gqa, or K and V expanded outside the timed call where cuDNN refuses
# it: the report says which), in the same run (benchmarks/torch_reference.py attention_models).
# TFLOP/s counted as 4 x batch x heads x seq x seq x dim, halved for causal, for both.
# Floor: ours >= 1.05x cuDNN at every sequence. Exit 0 when every floor is met, 1 otherwise (or on a failed run).
# Usage (on a GPU host): benchmarks/attention_models_bench.sh [BIN_DIR] [LOG_DIR]
#   ATTENTION_BUDGET (evaluations per shape, default 40), ATTENTION_SEQUENCES ("1000 4096 8192"), KERNLATHE_COMMIT
#   (the commit to report where the tree has no .git).
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}"
logs="${2:-attention-models-logs}"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
budget="${ATTENTION_BUDGET:-40}"
heads=32
kv_heads=8
head_dim=128

space="$logs/attention_candidates.yaml"
cp spaces/attention.yaml "$space"
cat >>"$space" <<'EOF2'
  # benchmarks/attention_models_bench.sh: the verification reference is the only reference-path configuration timed
  - PATH != "reference" or (REF_WARPS == 8 and REF_ROWS == 16)
EOF2
sed -e "s|^template: .*|template: $PWD/templates/attention.cu|" -e "s|^space: .*|space: $space|" \
  kernels/attention_bf16.yaml >"$logs/attention_bf16.yaml"

: >"$logs/cases.tsv"
for sequence in ${ATTENTION_SEQUENCES:-1000 4096 8192}; do
  batch=$((16384 / sequence))
  ((batch < 1)) && batch=1
  tag="s${sequence}"
  problem="BATCH=$batch,HEADS=$heads,KV_HEADS=$kv_heads,SEQ=$sequence,HEAD_DIM=$head_dim,CAUSAL=1,LAYOUT=1"
  echo "== $tag ($problem)" >&2
  rm -rf "$logs/$tag"
  timeout 300 "$bin/tune" run "$logs/attention_bf16.yaml" --problem "$problem" --budget "$budget" --timeout 10 \
    --out "$logs/$tag" --best-dir "$logs/best" --json >"$logs/$tag.json" 2>"$logs/$tag.err" ||
    echo "$tag: tune run failed (exit $?), see $logs/$tag.err" >&2
  python3 benchmarks/torch_reference.py attention_models "$batch" "$heads" "$kv_heads" "$sequence" "$head_dim" 1 bf16 \
    bshd >"$logs/$tag.torch.json" 2>"$logs/$tag.torch.err" || echo "$tag: PyTorch failed, see $logs/$tag.torch.err" >&2
  printf '%s\t%s\t%s\n' "$tag" "$batch" "$sequence" >>"$logs/cases.tsv"
done

python3 - "$logs" <<'PY'
import json, os, subprocess, sys, datetime

logs = sys.argv[1]
commit = os.environ.get("KERNLATHE_COMMIT") or subprocess.run(
    ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
print(f"Llama-3-8B attention: bf16, 32 query / 8 key-value heads, head dim 128, causal, BSHD; "
      f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit}")
print("TFLOP/s = 4 x batch x heads x seq x seq x dim / 2 (causal) over the median time")
print()
print("| sequence | batch | ours | cuDNN | ours / cuDNN | floor 1.05 | cuDNN GQA | flash | evaluated (ok) | best configuration |")
print("|---|---|---|---|---|---|---|---|---|---|")
missed = 0
device = torch_version = ""
for line in open(os.path.join(logs, "cases.tsv")):
    tag, batch, sequence = line.split()
    try:
        run = json.load(open(os.path.join(logs, tag + ".json")))
        reference = json.load(open(os.path.join(logs, tag + ".torch.json")))
    except (OSError, ValueError):
        print(f"| {sequence} | {batch} | failed, see {tag}.err / {tag}.torch.err |")
        missed += 1
        continue
    device, torch_version = run.get("device", ""), reference.get("torch", "")
    best = run["best"][0] if run.get("best") else None
    ours = best["gflops"] / 1000 if best and best["configuration"]["PATH"] == "wgmma" else float("nan")
    cudnn = reference["cudnn"].get("tflops")
    flash = reference["flash"].get("tflops")
    ratio = ours / cudnn if cudnn else float("nan")
    met = ratio >= 1.05
    missed += 0 if met else 1
    configuration = " ".join(f"{k}={v}" for k, v in best["configuration"].items() if k.startswith("AT_")) if best else ""
    shown = lambda value: f"{value:.0f}" if value else "-"
    print(f"| {sequence} | {batch} | {ours:.0f} | {shown(cudnn)} | {ratio:.3f} | {'met' if met else 'MISSED'} | "
          f"{reference['cudnn'].get('gqa', reference['cudnn'].get('error', '-'))} | {shown(flash)} | "
          f"{run['evaluated']} ({run['statuses'].get('ok', 0)}) | {configuration} |")
print()
print(f"PyTorch {torch_version}; tune on {device}.")
sys.exit(1 if missed else 0)
PY
