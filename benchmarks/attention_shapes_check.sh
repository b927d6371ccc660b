#!/usr/bin/env bash
# Attention at the shapes models give it (issue 33), verified on the GPU: for each problem below, `tune run` measures
# every configuration of a small candidate space (the default; one, two or three consumers, in turn or overlapped,
# ping-pong, persistent, either block order, 64- and 128-key tiles, two and three stages; three of those kinds also in
# clusters of query heads sharing K / V tiles, AT_KV_SHARE 2, 4 and 8 where they divide the group) and verifies each
# against the fp32 reference path.
# Sequences 1, 63, 200, 1000, 4096 and 4096 + 77; grouped-query ratios 1, 4 and 8; both layouts; causal and not;
# prefills of 63 and 1000 queries against 1000 and 3000 cached keys; head dimension 256; the log-sum-exp output.
# Exit 1 when a configuration fails verification or faults (statuses other than ok), or a run fails.
# Usage (on a GPU host): benchmarks/attention_shapes_check.sh [BIN_DIR] [LOG_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}"
logs="${2:-attention-shapes-logs}"
mkdir -p "$logs"
logs="$(cd "$logs" && pwd)"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
space="$logs/space.yaml"
cp spaces/attention.yaml "$space"
cat >>"$space" <<'EOF2'
  # benchmarks/attention_shapes_check.sh: one configuration of each kind, and the verification reference
  - >-
    (PATH == "reference" and REF_WARPS == 8 and REF_ROWS == 16) or (PATH == "wgmma" and (
    (AT_CONSUMERS == 2 and AT_BN == 128 and AT_STAGES == 2 and AT_OVERLAP and not AT_PINGPONG and not AT_PERSISTENT and AT_ORDER == "heads") or
    (AT_CONSUMERS == 1 and AT_BN == 128 and AT_STAGES == 2 and not AT_OVERLAP and not AT_PERSISTENT and AT_ORDER == "heads") or
    (AT_CONSUMERS == 2 and AT_BN == 128 and AT_STAGES == 3 and AT_PINGPONG and not AT_PERSISTENT and AT_ORDER == "tiles") or
    (AT_CONSUMERS == 3 and AT_BN == 64 and AT_STAGES == 2 and AT_OVERLAP and not AT_PINGPONG and AT_PERSISTENT and AT_ORDER == "tiles") or
    (AT_CONSUMERS == 3 and AT_BN == 64 and AT_STAGES == 3 and AT_PINGPONG and AT_PERSISTENT and AT_ORDER == "heads") or
    (AT_CONSUMERS == 2 and AT_BN == 64 and AT_STAGES == 2 and AT_OVERLAP and not AT_PINGPONG and AT_PERSISTENT and AT_ORDER == "heads") or
    (AT_CONSUMERS == 3 and AT_BN == 128 and AT_STAGES == 2 and AT_PINGPONG and not AT_PERSISTENT and AT_ORDER == "tiles")) and
    (AT_KV_SHARE == 1 or (AT_CONSUMERS == 2 and AT_BN == 128 and AT_STAGES == 2 and not AT_PINGPONG) or
     (AT_PINGPONG and AT_STAGES == 3)))
EOF2
for spec in attention_bf16 attention_f16 attention_bf16_lse; do
  sed -e "s|^template: .*|template: $PWD/templates/attention.cu|" -e "s|^space: .*|space: $space|" \
    "kernels/$spec.yaml" >"$logs/$spec.yaml"
done
# spec BATCH HEADS KV_HEADS SEQ CACHED HEAD_DIM CAUSAL LAYOUT
problems="${ATTENTION_PROBLEMS:-attention_bf16 2 8 8 1 0 128 0 0
attention_bf16 2 8 1 1 0 128 1 1
attention_bf16 2 8 2 63 0 64 1 0
attention_f16 2 8 8 63 0 128 0 1
attention_bf16 2 32 8 1000 0 128 1 1
attention_f16 2 8 1 1000 0 64 0 0
attention_bf16 1 8 2 4173 0 128 0 1
attention_bf16 2 8 8 4173 0 64 1 0
attention_bf16 2 32 8 63 1000 128 1 1
attention_f16 2 8 2 1000 3000 128 1 1
attention_bf16 2 8 8 4096 0 128 1 0
attention_bf16 3 16 4 200 0 64 0 1
attention_bf16 1 8 2 1000 0 256 1 1
attention_f16 2 8 8 77 100 256 0 0
attention_bf16_lse 2 8 2 1000 0 128 1 1
attention_bf16_lse 2 8 1 63 500 64 0 0}"
failed=0
while read -r spec batch heads kv_heads sequence cached head_dim causal layout; do
  [[ -z $spec ]] && continue
  problem="BATCH=$batch,HEADS=$heads,KV_HEADS=$kv_heads,SEQ=$sequence,CACHED=$cached,HEAD_DIM=$head_dim,CAUSAL=$causal,LAYOUT=$layout"
  tag="${spec}_$(echo "$problem" | tr ',=' '_-')"
  timeout 120 "$bin/tune" run "$logs/$spec.yaml" --problem "$problem" --strategy exhaustive --final 0 \
    --min-samples 3 --max-time 0.05 --timeout 10 --out "$logs/$tag" --best-dir "$logs/best" --json \
    >"$logs/$tag.json" 2>"$logs/$tag.err"
  status=$?
  summary=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["evaluated"], json.dumps(r["statuses"], sort_keys=True))' "$logs/$tag.json" 2>/dev/null)
  echo "$spec $problem: exit $status, evaluated and statuses: ${summary:-none}"
  if [[ $status -ne 0 || -z $summary || $summary != *'"ok"'* || $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["statuses"]; print(sum(v for k,v in s.items() if k!="ok"))' "$logs/$tag.json") != 0 ]]; then
    failed=1
    grep -h -i "wrong_result\|error\|timeout\|crash" "$logs/$tag.err" | head -5
  fi
done <<<"$problems"
exit $failed
