#!/usr/bin/env bash
# GEMMs with a fused epilogue against the plain GEMM and against PyTorch, in one run (issue 19). For one problem
# (8192^3 by default, bf16) it tunes, one after the other, gemm_bf16 (plain), gemm_bf16_bias_gelu and
# gemm_bf16_bias_residual over the same candidate set of wgmma configurations, then times PyTorch's sequences on the
# same shape (benchmarks/torch_reference.py: mm, gelu(addmm(bias, a, b)), addmm(bias, a, b) + r), then the plain
# GEMM again to see how far the GPU drifted during the run.
#
# The candidate set is the wgmma configurations that won the full-space runs (results/runs/gemm_bf16/.../wgmma-only):
# 128 x 256 tiles split between two consumer warpgroups (3 or 4 stages) and 128 x 128 ping-pong tiles (4 to 6
# stages), persistent, with and without 2-block clusters; plus 256 x 128 cooperative tiles (3 or 4 stages), the
# shape of the cuBLASLt kernel PyTorch's addmm runs at 8192^3; plus the one simt configuration the fused specs verify
# against. Every run evaluates all of them (exhaustive strategy), and cuBLAS's plain GEMM is timed in the same
# rounds as the candidates of every run, so each kernel's time is also reported over cuBLAS's in its own run
# (cuBLAS moved by up to 10% between runs on the H200 before the burst timing: docs/measurement.md).
#
# Last, benchmarks/fused_gemm_versus_torch.py launches the best configurations of the three runs itself, beside
# PyTorch's sequences, in one process with one timing method (tune and PyTorch time differently: the same cuBLAS
# GEMM measured 1.42 ms in tune's rounds and 1.62 ms in PyTorch's back-to-back batches on the H200), and checks
# each output against PyTorch's.
#
# Floors: the fused kernel within 3% of the plain GEMM (best against best: fused / plain <= 1.03), and at least as
# fast as PyTorch's gelu(addmm(bias, a, b)) (ours / PyTorch <= 1).
# Usage (on a GPU host, from anywhere): benchmarks/fused_gemm_bench.sh [BIN_DIR] [LOG_DIR] [PROBLEM [VARIANT...]]
#   PROBLEM defaults to M=8192,N=8192,K=8192. Each VARIANT is passed on to fused_gemm_versus_torch.py (see its usage:
#   EPILOGUE:NAME=VALUE,..., a variant of the plain GEMM's best configuration timed in the same process).
# Exits 1 when a floor is missed or a step failed (the other steps still run), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin fused_gemm_bench
bin="${1:-build}"
logs="${2:-fused-gemm-logs}"
problem="${3:-M=8192,N=8192,K=8192}"
variants=("${@:4}")
[[ $problem =~ ^M=[0-9]+,N=[0-9]+,K=[0-9]+$ ]] || bench_usage "PROBLEM must read M=..,N=..,K=.., not '$problem'"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"  # nvcc, for benchmarks/fused_gemm_versus_torch.py

# The candidate set: a copy of the GEMM space with constraints that keep the candidates and the simt reference.
space="$logs/gemm_candidates.yaml"
cp spaces/gemm.yaml "$space"
cat >>"$space" <<'EOF'
  # benchmarks/fused_gemm_bench.sh: the simt reference (the space's default) and the winning wgmma shapes only
  - PATH != "mma_sync"
  - PATH != "simt" or (BM == 128 and BN == 128 and BK == 16 and WM == 64 and WN == 32 and TM == 8 and TN == 8 and STAGES == 2 and SIMT_FMA_ORDER == "serpentine" and SIMT_COPY == "registers" and SMEM_PAD and GROUP_M == 8 and BLOCKS_PER_SM == 2)
  - PATH != "wgmma" or (WG_BK == 64 and WG_CONSUMERS == 2 and WG_GROUP_M == 8 and WG_PERSISTENT)
  - PATH != "wgmma" or (WG_BM == 128 and WG_BN == 256 and not WG_PINGPONG and WG_STAGES in [3, 4]) or (WG_BM == 256 and WG_BN == 128 and not WG_PINGPONG and WG_STAGES in [3, 4]) or (WG_BM == 128 and WG_BN == 128 and WG_PINGPONG and WG_STAGES in [4, 5, 6])
EOF

run_spec() {  # run_spec SPEC TAG: tunes kernels/SPEC.yaml over the candidates into LOG_DIR/TAG
  local spec=$1 tag=$2
  sed -e "s|^template: .*|template: $PWD/templates/gemm.cu|" -e "s|^space: .*|space: $space|" \
    "kernels/$spec.yaml" >"$logs/$tag.yaml"
  rm -rf "$logs/$tag"
  echo "== $tag" >&2
  bench_step "$tag: tune run, see $logs/$tag.err" "$bin/tune" run "$logs/$tag.yaml" --problem "$problem" \
    --strategy exhaustive --final 5 --final-rounds 15 --out "$logs/$tag" --best-dir "$logs/best" --json \
    >"$logs/$tag.json" 2>"$logs/$tag.err"
}

read -r m n k <<<"$(sed 's/M=\([0-9]*\),N=\([0-9]*\),K=\([0-9]*\)/\1 \2 \3/' <<<"$problem")"
torch_reference() {  # torch_reference TAG
  bench_step "PyTorch reference $1, see $logs/$1.err" python3 benchmarks/torch_reference.py gemm "$m" "$n" "$k" \
    >"$logs/$1.json" 2>"$logs/$1.err"
}
echo "tune $("$bin/tune" --version 2>&1)" >&2
torch_reference torch  # first, which also brings the GPU to its working clocks
run_spec gemm_bf16 plain
run_spec gemm_bf16_bias_gelu bias_gelu
run_spec gemm_bf16_bias_residual bias_residual
run_spec gemm_bf16 plain_again
torch_reference torch_again
bench_step "the in-process comparison, see $logs/versus.txt" python3 benchmarks/fused_gemm_versus_torch.py \
  "$logs" "$problem" "${variants[@]}" >"$logs/versus.json" 2>"$logs/versus.txt"

bench_step "report" python3 - "$logs" "$problem" <<'PY'
import csv, json, os, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome

logs, problem = sys.argv[1:]
outcome = Outcome("fused_gemm_bench report")

def load(tag):
    try:
        run = json.load(open(os.path.join(logs, tag + ".json")))
    except (OSError, ValueError) as error:
        return None, {}
    rows = {}
    records = run["records"]
    if os.path.isdir(records):
        records = os.path.join(records, "evaluations.csv")
    for row in csv.DictReader(open(records)):
        if row["status"] != "ok" or row["PATH"] != "wgmma":
            continue
        key = " ".join(f"{name}={row[name]}" for name in ("WG_BM", "WG_BN", "WG_STAGES", "WG_PINGPONG", "WG_CLUSTER"))
        rows[key] = float(row["time_median_ms"])
    return run, rows

runs = {tag: load(tag) for tag in ("plain", "bias_gelu", "bias_residual", "plain_again")}
def load_torch(tag):
    try:
        return json.load(open(os.path.join(logs, tag + ".json")))
    except (OSError, ValueError):
        return None
torch_report, torch_again = load_torch("torch"), load_torch("torch_again")

def best(tag):
    run = runs[tag][0]
    if run is None or not run.get("best"):
        return None
    return run["best"][0]

plain = best("plain")
print(f"Fused-epilogue GEMMs, bf16, {problem}, on {runs['plain'][0]['device'] if runs['plain'][0] else '?'}")
print()
print("| kernel | best ms | TFLOPS | cuBLAS plain ms (same run) | best / cuBLAS | over the plain GEMM (raw) | over the plain GEMM (each / its cuBLAS) | best configuration |")
print("|---|---|---|---|---|---|---|---|")
for tag in ("plain", "bias_gelu", "bias_residual", "plain_again"):
    run, _ = runs[tag]
    result = best(tag)
    if result is None:
        print(f"| {tag} | run failed | | | | | | |")
        if tag in ("bias_gelu", "bias_residual"):
            outcome.missed(f"{tag}: no tuned result, floors not met")
        continue
    configuration = " ".join(f"{k}={v}" for k, v in result["configuration"].items() if k.startswith("WG_") or k == "PATH")
    cublas = run.get("baseline_ms", 0.0)
    raw = result["median_ms"] / plain["median_ms"] if plain else float("nan")
    normalised = (result["median_ms"] / cublas) / (plain["median_ms"] / runs["plain"][0]["baseline_ms"]) if plain and cublas else float("nan")
    # Floor: the fused kernel within 3% of the plain GEMM, best against best.
    if tag in ("bias_gelu", "bias_residual") and not raw <= 1.03:
        outcome.missed(f"{tag}: {result['median_ms']:.4f} ms, {100 * (raw - 1):+.2f}% over the plain GEMM (floor +3%)")
    print(f"| {tag} | {result['median_ms']:.4f} | {result['gflops'] / 1000:.1f} | {cublas:.4f} | "
          f"{result['median_ms'] / cublas:.3f} | {100 * (raw - 1):+.2f}% | {100 * (normalised - 1):+.2f}% | {configuration} |")
print()
print("Same configuration, fused over plain (each configuration's time in the fused run over its time in the plain run):")
for tag in ("bias_gelu", "bias_residual"):
    for key, fused_ms in sorted(runs[tag][1].items()):
        plain_ms = runs["plain"][1].get(key)
        if plain_ms:
            print(f"  {tag:14s} {key}: {fused_ms:.4f} / {plain_ms:.4f} ms = {100 * (fused_ms / plain_ms - 1):+.2f}%")
cublas = {tag: runs[tag][0]["baseline_ms"] for tag in runs if runs[tag][0] and runs[tag][0].get("baseline_ms")}
if not torch_report:
    outcome.missed("no PyTorch reference: the floor against gelu(addmm) cannot be checked")
for label, report in (("before the tune runs", torch_report), ("after them", torch_again)):
    if not report:
        continue
    print()
    print(f"PyTorch {report['torch']} on the same shape, {label} (CUDA events; median per call):")
    for name in ("mm", "addmm", "gelu_addmm", "addmm_residual"):
        timing = report[name]
        print(f"  {name:15s} {timing['median_ms']:.4f} ms  {timing['tflops']:.1f} TFLOPS  spread {100 * timing['spread']:.1f}%")
    print(f"  PyTorch gelu(addmm) over its mm: {100 * (report['gelu_addmm']['median_ms'] / report['mm']['median_ms'] - 1):+.2f}%")
    for tag, name in (("bias_gelu", "gelu_addmm"), ("bias_residual", "addmm_residual")):
        result = best(tag)
        if result:
            ratio = result["median_ms"] / report[name]["median_ms"]
            # Both over the same plain cuBLAS GEMM (PyTorch's mm is cuBLAS's): the drift between the runs cancels.
            normalised = (result["median_ms"] / cublas[tag]) / (report[name]["median_ms"] / report["mm"]["median_ms"])
            slower = max(ratio, normalised) > 1
            print(f"  ours {tag} / PyTorch {name}: {ratio:.3f} raw, {normalised:.3f} each over its plain cuBLAS GEMM "
                  f"({'SLOWER' if slower else 'at least as fast'})")
            if slower and tag == "bias_gelu" and report is torch_report:  # the floor: at least as fast as gelu(addmm)
                outcome.missed(f"bias_gelu over PyTorch gelu(addmm): {ratio:.3f} raw, {normalised:.3f} normalised "
                               "(floor <= 1)")
outcome.finish()
PY
echo
echo "In one process, one timing method (benchmarks/fused_gemm_versus_torch.py):"
cat "$logs/versus.txt"
bench_finish
