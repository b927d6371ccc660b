#!/usr/bin/env bash
# The GEMMs of one layer of a model (workloads/llama3-8b.yaml) in the nn.Linear layout: X[M, K] W[N, K]^T, the
# weight stored N x K (gemm_bf16 with B_LAYOUT=1), at every token count of the workload (issue 30). In one run:
#   1. each shape tuned on its own: `tune run --problem M=..,N=..,K=..,B_LAYOUT=1 --time SECONDS` over the wgmma
#      configurations, cuBLAS timed in the same rounds as the candidates (tune's baseline_ms, the same cublasGemmEx
#      call with the weight transposed). Floors: geometric mean of cuBLAS / ours >= 1.00, worst shape >= 0.90.
#   2. the runtime with only the 4096-token shapes tuned: `tune export` of those entries alone, then the shipped
#      example (examples/gemm.cpp) at every shape: the runtime's ladder picks a configuration for shapes nobody
#      tuned, C is checked element by element against cuBLAS's, and both are timed in five interleaved rounds of
#      burst timings (kernlathe::time_launches, as tune's final round: docs/measurement.md). Floors: no shape with a
#      wrong element or an error, none below 0.5 of cuBLAS.
# At M <= 64 part 1 also tunes kernels/gemm_decode_bf16.yaml (the decode path, templates/gemm_decode.cu) for the
# same SECONDS, and "ours" is the faster of the two runs, each against the cuBLAS figure of its own rounds; the table
# names the kernel. LINEAR_TOKENS ("16 128", say) narrows part 1 to those token counts (part 2 then has only what
# they cover).
# Prints one table per part and exits 1 when a floor is missed or a step failed (the other steps still run), 2 on
# bad usage.
# LINEAR_PARTS=2 runs part 2 alone: only the 4096-token shapes are tuned (what part 2 exports), and part 1's
# table and floors are left out.
# Usage (on a GPU host, from anywhere): benchmarks/linear_workload_bench.sh [BIN_DIR] [LOG_DIR] [SECONDS] [WORKLOAD]
#   BIN_DIR holds tune and kernlathe_gemm_example (scripts/package-for-device.sh puts both in .device/bin);
#   SECONDS of tuning per shape (default 20); WORKLOAD defaults to workloads/llama3-8b.yaml.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin linear_workload_bench
(($# <= 4)) || bench_usage "at most four arguments"
bin="$(cd "${1:-build}" 2>/dev/null && pwd)" || bench_usage "no folder ${1:-build}"
logs="${2:-linear-workload-logs}"
seconds="${3:-20}"
workload="${4:-workloads/llama3-8b.yaml}"
[[ -f "$workload" ]] || bench_usage "no workload file $workload"
[[ $seconds =~ ^[0-9]+$ ]] || bench_usage "SECONDS must be a whole number, not '$seconds'"
parts="${LINEAR_PARTS:-1,2}"
[[ $parts == "1,2" || $parts == "2" ]] || bench_usage "LINEAR_PARTS is 1,2 (the default) or 2, not '$parts'"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
example="$bin/kernlathe_gemm_example"
[[ -x "$example" ]] || example="$bin/examples/kernlathe_gemm_example"

# The candidates: the wgmma configurations of the GEMM space (the other paths take B stored K x N only).
space="$logs/gemm_wgmma.yaml"
python3 - spaces/gemm.yaml "$space" <<'PY' || bench_usage "cannot write $space"
import sys, yaml
space = yaml.safe_load(open(sys.argv[1]))
space["constraints"].append('PATH == "wgmma"')  # the nn.Linear layout is a wgmma path
yaml.safe_dump(space, open(sys.argv[2], "w"), sort_keys=False, width=1000)
PY
spec="$logs/gemm_bf16_linear.yaml"
sed -e "s|^template: .*|template: $PWD/templates/gemm.cu|" -e "s|^space: .*|space: $space|" kernels/gemm_bf16.yaml >"$spec"
decode_spec="$PWD/kernels/gemm_decode_bf16.yaml"

# "M N K" lines: every token count of the workload times every GEMM of its layer; 4096 tokens first.
mapfile -t shapes < <(python3 - "$workload" <<'PY'
import sys, yaml
workload = yaml.safe_load(open(sys.argv[1]))
import os
only = os.environ.get("LINEAR_TOKENS", "").split()
tokens = sorted((m for m in workload["tokens"] if not only or str(m) in only), key=lambda m: (m != 4096, m))
for m in tokens:
    for gemm in workload["gemm"]:
        print(m, gemm["N"], gemm["K"], gemm["name"])
PY
)
((${#shapes[@]})) || { bench_failed "no shapes read from $workload"; bench_finish; }
echo "tune $("$bin/tune" --version 2>&1 | head -n 1); ${#shapes[@]} shapes from $workload; $seconds s of tuning each" >&2
bench_step "nvidia-smi" nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
  >"$logs/gpu.csv" 2>&1

for shape in "${shapes[@]}"; do
  read -r m n k name <<<"$shape"
  tag="M${m}_N${n}_K${k}"
  # Entries of the 4096-token shapes go to their own best directory: part 2 exports those alone.
  best="$logs/best-others"
  [[ $m == 4096 ]] && best="$logs/best-4096"
  [[ $parts == "2" && $m != 4096 ]] && continue  # part 2 alone: only what it exports is tuned
  echo "== tune $name $tag" >&2
  rm -rf "${logs:?}/$tag"
  bench_step "$tag: tune run, see $logs/$tag.err" "$bin/tune" run "$spec" --problem "M=$m,N=$n,K=$k,B_LAYOUT=1" \
    --time "${seconds}s" --out "$logs/$tag" --best-dir "$best" --json >"$logs/$tag.json" 2>"$logs/$tag.err"
  if ((m <= 64)); then
    echo "== tune $name $tag (decode path)" >&2
    rm -rf "${logs:?}/$tag.decode"
    bench_step "$tag: tune run of the decode path, see $logs/$tag.decode.err" "$bin/tune" run "$decode_spec" \
      --problem "M=$m,N=$n,K=$k" --time "${seconds}s" --out "$logs/$tag.decode" --best-dir "$logs/best-decode" --json \
      >"$logs/$tag.decode.json" 2>"$logs/$tag.decode.err"
  fi
done

# Part 2 exports the 4096-token entries; LINEAR_TOKENS without 4096 leaves it out.
has_4096=false
for shape in "${shapes[@]}"; do [[ ${shape%% *} == 4096 ]] && has_4096=true; done
$has_4096 || parts="${parts/,2/}"
[[ $parts == *2* ]] && {
rm -rf "$logs/export"
bench_step "tune export, see $logs/export.log" "$bin/tune" export gemm_bf16 --dir "$logs/best-4096" -o "$logs/export" \
  >"$logs/export.log" 2>&1
for shape in "${shapes[@]}"; do
  read -r m n k name <<<"$shape"
  "$example" "$logs/export" "$m" "$n" "$k" nk >"$logs/runtime_M${m}_N${n}_K${k}.txt" 2>&1
  echo "exit $?" >>"$logs/runtime_M${m}_N${n}_K${k}.txt"
done
}

bench_step "report" python3 - "$logs" "$parts" "${shapes[@]}" <<'PY'
import json, math, os, re, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome

logs, parts, shapes = sys.argv[1], sys.argv[2].split(","), [line.split() for line in sys.argv[3:]]
missed = []
with open(os.path.join(logs, "gpu.csv")) as gpu:
    print("GPU:", (gpu.read().strip().splitlines() or ["unknown"])[-1])
print()
print("1. Each shape tuned (tune's rounds; cuBLAS in the same rounds, B transposed: CUBLAS_OP_T)"
      + ("" if "1" in parts else ": left out (LINEAR_PARTS=2), the 4096-token shapes only"))
print()
print("| GEMM | M | N | K | ours ms | cuBLAS ms | cuBLAS / ours | TFLOP/s | evaluated | configuration |")
print("|---|---|---|---|---|---|---|---|---|---|")
ratios = []
for m, n, k, name in shapes:
    if "1" not in parts and m != "4096":
        continue
    tag = f"M{m}_N{n}_K{k}"
    # The tiled GEMM's run and, at few rows, the decode path's: the faster, each against its own rounds' cuBLAS.
    candidates = []
    for suffix, kernel, prefix in ((".json", "gemm_bf16", "WG_"), (".decode.json", "gemm_decode_bf16", "DC_")):
        try:
            run = json.load(open(os.path.join(logs, tag + suffix)))
            best = run["best"][0]
            candidates.append((run["baseline_ms"] / best["median_ms"], kernel, prefix, run, best))
        except (OSError, ValueError, KeyError, IndexError, ZeroDivisionError, TypeError):
            if suffix == ".json" or int(m) <= 64:
                print(f"| {name} | {m} | {n} | {k} | failed | | | | | {kernel}: see {tag}{suffix[:-5]}.err |")
                missed.append(f"{tag}: no tuned result of {kernel}")
    if not candidates:
        continue
    ratio, kernel, prefix, run, best = max(candidates, key=lambda candidate: candidate[0])
    ratios.append(ratio)
    configuration = " ".join(f"{key}={value}" for key, value in best["configuration"].items()
                             if key.startswith(prefix) or key == "BLOCKS_PER_SM" and prefix == "DC_")
    others = "; ".join(f"{other[1]} {other[0]:.3f}" for other in candidates if other[1] != kernel)
    print(f"| {name} | {m} | {n} | {k} | {best['median_ms']:.4f} | {run['baseline_ms']:.4f} | {ratio:.3f} | "
          f"{best['gflops'] / 1000:.0f} | {run['evaluated']} | {kernel}: {configuration}"
          f"{' (' + others + ')' if others else ''} |")
if ratios and "1" in parts:
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeometric mean {geomean:.3f} (floor 1.00), worst {min(ratios):.3f} (floor 0.90) over {len(ratios)} shapes")
    if geomean < 1.0:
        missed.append(f"tuned geometric mean {geomean:.3f} < 1.00")
    if min(ratios) < 0.9:
        missed.append(f"tuned worst {min(ratios):.3f} < 0.90")

print()
if "2" not in parts:
    print("2. Through the runtime: left out (LINEAR_TOKENS has no 4096-token shapes to export)")
    shapes = []
else:
    print("2. Through the runtime, only the 4096-token shapes tuned (examples/gemm.cpp: five rounds of burst timings, "
          "kernlathe::time_launches)")
    print()
    print("| GEMM | M | N | K | rung | wrong elements | of cuBLAS | exit |")
    print("|---|---|---|---|---|---|---|---|")
for m, n, k, name in shapes:
    path = os.path.join(logs, f"runtime_M{m}_N{n}_K{k}.txt")
    text = open(path).read() if os.path.exists(path) else ""
    rung = re.search(r"^gemm_bf16 \S+ \w+: (.*)$", text, re.M)
    wrong = re.search(r"(\d+) of (\d+) elements outside", text)
    percent = re.search(r"([\d.]+)% of cuBLAS", text)
    status = re.search(r"^exit (\d+)$", text, re.M)
    error = re.search(r"^kernlathe: (.*)$", text, re.M)
    print(f"| {name} | {m} | {n} | {k} | {rung.group(1) if rung else (error.group(1)[:80] if error else '?')} | "
          f"{wrong.group(1) if wrong else '-'} | {percent.group(1) + '%' if percent else '-'} | "
          f"{status.group(1) if status else '?'} |")
    if not wrong or int(wrong.group(1)) != 0 or not status or status.group(1) != "0":
        missed.append(f"runtime M={m} N={n} K={k}: wrong elements or an error")
    elif not percent or float(percent.group(1)) < 50:
        missed.append(f"runtime M={m} N={n} K={k}: below 0.5 of cuBLAS")
print()
outcome = Outcome("linear_workload_bench report")
for what in missed:
    outcome.missed(what)
outcome.finish()
PY
bench_finish
