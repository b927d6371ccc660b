#!/usr/bin/env bash
# Records the spaces that `tune analyze` compares across GPUs, on the GPU of this machine, under
# results/runs/<kernel>/<arch>/<LABEL>/<problem>/ (LABEL names the GPU: several GPUs of one arch keep apart):
#   saxpy, softmax, transpose, conv3x3: exhaustive (840, 246, 45 and 1698 configurations at the default problems),
#   layernorm: the surrogate strategy, 500 evaluations (the space has 50,382 valid configurations),
#   gemm_bf16 at 4096^3: the wgmma sub-space (PATH == "wgmma", 564 configurations), exhaustive,
# the same sets (and, for the exhaustive ones, the same configurations) the H200's records hold, so each GPU's best
# can be looked up among the other's measurements. Best configurations go to the best cache as usual (not the
# sub-space's).
# Usage (on a GPU host): scripts/record_portability.sh BIN_DIR LABEL [KERNEL ...]   (default: all of the above)
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:?usage: scripts/record_portability.sh BIN_DIR LABEL [KERNEL ...]}"
label="${2:?usage: scripts/record_portability.sh BIN_DIR LABEL [KERNEL ...]}"
shift 2
kernels=("$@")
((${#kernels[@]})) || kernels=(saxpy softmax transpose conv3x3 layernorm gemm_bf16)
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

for kernel in "${kernels[@]}"; do
  case "$kernel" in
    saxpy | softmax | transpose | conv3x3) spec="$kernel" problem="" settings=(--strategy exhaustive --time 240s) ;;
    layernorm) spec="$kernel" problem="" settings=(--strategy surrogate --budget 500 --time 240s) ;;
    gemm_bf16)
      # The wgmma sub-space: the space with one more constraint, the spec pointing at it (README, GEMM section).
      scratch="$(mktemp -d)"
      sed 's|^constraints:|constraints:\n  - PATH == "wgmma"|' spaces/gemm.yaml >"$scratch/gemm_wgmma.yaml"
      sed -e "s|space: ../spaces/gemm.yaml|space: $scratch/gemm_wgmma.yaml|" -e "s|template: ../templates|template: $PWD/templates|" \
        kernels/gemm_bf16.yaml >"$scratch/gemm_bf16.yaml"
      # Its best goes to a scratch cache: stored in results/best it would replace the full space's description (and
      # make every entry measured against it stale).
      spec="$scratch/gemm_bf16.yaml" problem="M=4096,N=4096,K=4096"
      settings=(--strategy exhaustive --time 300s --best-dir "$scratch/best")
      label_dir="$label-wgmma-only"
      ;;
    *) echo "record_portability: no recording set for '$kernel'" >&2; continue ;;
  esac
  # Recorded into a scratch folder, then moved to the path the run's own report names (arch and problem).
  scratch_out="results/runs/$kernel/.recording-$label"
  rm -rf "$scratch_out"
  start=$(date +%s)
  "$bin/tune" run "$spec" ${problem:+--problem "$problem"} "${settings[@]}" --out "$scratch_out" --json \
    >"$scratch_out.json" 2>"$scratch_out.err"
  status=$?
  where="$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["arch"] + "/" + sys.argv[2] + "/" + r["problem"].replace(",", "_"))' \
             "$scratch_out.json" "${label_dir:-$label}" 2>/dev/null)"
  unset label_dir
  if [[ -z "$where" ]]; then
    echo "$kernel: exit $status, no report ($(tail -n 2 "$scratch_out.err" | tr '\n' ' '))"
    rm -rf "$scratch_out" "$scratch_out.json" "$scratch_out.err"
    continue
  fi
  out="results/runs/$kernel/$where"
  rm -rf "$out" && mkdir -p "$(dirname "$out")" && mv "$scratch_out" "$out"
  rows=$(($(wc -l <"$out/evaluations.csv") - 1))
  echo "$kernel: exit $status, $rows evaluations in $(($(date +%s) - start)) s -> $out ($(python3 -c '
import json,sys; r=json.load(open(sys.argv[1])); b=r["best"][0] if r["best"] else {}
print(r["device"], "best %.4f ms" % b.get("median_ms", 0), r["stop_reason"])' "$scratch_out.json"))"
  rm -f "$scratch_out.json" "$scratch_out.err"
done
