#!/usr/bin/env bash
# Tunes, on this host's GPU, the kernels the Python package and the Llama-3-8B layer launch, at the problems the layer
# runs, and stores the winners in results/best (with their records under results/runs). Run it after a template or
# spec change has made the stored entries stale (`tune best KERNEL` says STALE; the runtime passes such entries over
# or, when the template itself changed, refuses the database).
# The fused GEMMs start from the plain GEMM's stored winner at 4096^3 in the nn.Linear layout (measured with --config:
# verified, timed, stored), then a timed search goes on from it (a run measures the stored configuration first).
# Logs go to LOG_DIR, one per run; exit 0 only when every run passed.
# Usage (GPU host, repository root): scripts/tune-shipped-kernels.sh LOG_DIR [KERNEL...]
#   TUNE_BINARY   the tune to run (default .device/bin/tune, else build/tune)
#   SEARCH_TIME   seconds of search per run of a memory-bound kernel (default 25); attention and GEMM take 4x
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${1:?usage: scripts/tune-shipped-kernels.sh LOG_DIR [KERNEL...]}"
shift
mkdir -p "$logs"
tune="${TUNE_BINARY:-}"
for candidate in .device/bin/tune build/tune; do
  [[ -z "$tune" && -x "$candidate" ]] && tune="$candidate"
done
[[ -n "$tune" ]] || { echo "tune-shipped-kernels: no tune binary (.device/bin/tune or build/tune)" >&2; exit 2; }
short="${SEARCH_TIME:-25}"
long=$((4 * short))
wanted=" ${*:-silu_mul_bf16 rmsnorm_bf16 layernorm_bf16 softmax_bf16 layernorm softmax attention_bf16 attention_f16 gemm_f16 gemm_bf16 gemm_bf16_bias_residual gemm_bf16_bias_gelu gemm_bf16_silu_gated} "
# The plain GEMM's stored H200 winner at 4096^3, B_LAYOUT=1 (results/best/gemm_bf16.json).
gemm_start="BK=16,BLOCKS_PER_SM=1,BM=128,BN=128,GROUP_M=8,PATH=wgmma,SIMT_COPY=registers,SIMT_FMA_ORDER=serpentine"
gemm_start+=",SMEM_PAD=true,STAGES=2,TM=8,TN=8,WG_BK=64,WG_BM=128,WG_BN=128,WG_CLUSTER=2,WG_CONSUMERS=2,WG_GROUP_M=8"
gemm_start+=",WG_PERSISTENT=true,WG_PINGPONG=true,WG_SPLIT_K=0,WG_SPREAD=false,WG_STAGES=6,WM=64,WN=32"
# The plain GEMM's stored H200 winner at the MLP's gate/up shape, 4096 x 28672 x 4096 (no cluster, 5 stages).
gate_up_start="${gemm_start/WG_CLUSTER=2/WG_CLUSTER=1}"
gate_up_start="${gate_up_start/WG_STAGES=6/WG_STAGES=5}"
status=0
run() {  # run LOG_NAME ARGUMENTS...: one tune run, its exit status noted
  local name="$1"
  shift
  local start=$SECONDS
  "$tune" run "$@" >"$logs/$name.log" 2>&1
  local code=$?
  echo "$name: exit $code in $((SECONDS - start)) s: tune run $*"
  ((code == 0)) || status=1
}
picked() { [[ "$wanted" == *" $1 "* ]]; }

for kernel in silu_mul_bf16 rmsnorm_bf16 layernorm_bf16 softmax_bf16 layernorm softmax; do
  picked "$kernel" && run "$kernel" "$kernel" --time "${short}s"
done
if picked attention_bf16; then
  # Llama-3-8B's causal GQA attention straight from the QKV projection (BSHD), one sequence of 4096: packed, and as
  # kernlathe.torch launches it in the layer, on views into the fused QKV output (rows of 48 x 128 elements).
  run attention_bf16 attention_bf16 --problem BATCH=1,HEADS=32,KV_HEADS=8,SEQ=4096,HEAD_DIM=128,CAUSAL=1,LAYOUT=1 \
    --time "${long}s"
  run attention_bf16_views attention_bf16 \
    --problem BATCH=1,HEADS=32,KV_HEADS=8,SEQ=4096,HEAD_DIM=128,CAUSAL=1,LAYOUT=1,Q_ROW_STRIDE=6144,KV_ROW_STRIDE=6144 \
    --time "${long}s"
fi
if picked attention_f16; then
  run attention_f16 attention_f16 --problem BATCH=1,HEADS=32,KV_HEADS=8,SEQ=4096,HEAD_DIM=128,CAUSAL=1,LAYOUT=1 \
    --time "${long}s"
fi
if picked gemm_f16; then  # kernlathe.torch.linear in fp16 (no epilogue), the nn.Linear layout
  run gemm_f16 gemm_f16 --problem M=4096,N=4096,K=4096,B_LAYOUT=1 --time "${long}s"
fi
if picked gemm_bf16; then
  # The layer's plain projections in the nn.Linear layout at 4096 tokens: QKV and gate/up (the O projection's shape,
  # 4096^3, is stored already); the database's records of other shapes seed the search.
  for shape in M=4096,N=6144,K=4096 M=4096,N=28672,K=4096; do
    run "gemm_bf16_${shape//[=,]/_}" gemm_bf16 --problem "$shape,B_LAYOUT=1" --time "${long}s"
  done
fi
if picked gemm_bf16_bias_residual; then
  for shape in M=4096,N=4096,K=4096 M=4096,N=4096,K=14336; do  # the O projection and the down projection
    run "gemm_bf16_bias_residual_${shape//[=,]/_}_start" gemm_bf16_bias_residual --problem "$shape,B_LAYOUT=1" \
      --config "$gemm_start" --out "results/runs/gemm_bf16_bias_residual/start-from-gemm/${shape//,/_}_B_LAYOUT=1"
    run "gemm_bf16_bias_residual_${shape//[=,]/_}" gemm_bf16_bias_residual --problem "$shape,B_LAYOUT=1" \
      --time "${long}s"
  done
fi
if picked gemm_bf16_bias_gelu; then
  run gemm_bf16_bias_gelu gemm_bf16_bias_gelu --problem M=4096,N=4096,K=4096,B_LAYOUT=1 --config "$gemm_start" \
    --out results/runs/gemm_bf16_bias_gelu/start-from-gemm/M=4096_N=4096_K=4096_B_LAYOUT=1
fi
if picked gemm_bf16_silu_gated; then
  # The MLP's gate and up projections with their SiLU-gated product (kernlathe.torch.silu_gated_linear) at the
  # layer's 4096 and 16384 tokens: the plain GEMM's winners at 4096^3 and at the gate/up shape first, then a search.
  for shape in M=4096,N=28672,K=4096 M=16384,N=28672,K=4096; do
    run "gemm_bf16_silu_gated_${shape//[=,]/_}_start" gemm_bf16_silu_gated --problem "$shape,B_LAYOUT=1" \
      --config "$gate_up_start" --config "$gemm_start" \
      --out "results/runs/gemm_bf16_silu_gated/start-from-gemm/${shape//,/_}_B_LAYOUT=1"
    run "gemm_bf16_silu_gated_${shape//[=,]/_}" gemm_bf16_silu_gated --problem "$shape,B_LAYOUT=1" --time "${long}s"
  done
fi
exit $status
