#!/usr/bin/env bash
# The runtime library on a GPU, in one go (issue: runtime library). For each kernel: a short `tune run` that stores
# the best configuration in results/best (measuring the stored configuration first, so a stale entry is re-measured
# rather than replaced by a worse one); `tune export` of those kernels; bench_runtime (warm launch overhead, cold
# start from embedded / exported / disk cache / NVRTC, time through the runtime against the recorded time); the
# runtime's GPU tests; and the examples against the export. Streamed kernels (STREAM_KERNELS, default the two
# conv3x3 streams; their data written by scripts/make_stream_data.sh when missing) are tuned, exported and measured
# through kernlathe::StreamedKernel the same way, and the streamed example checks every image on the host.
# Usage (on a GPU host, from anywhere): benchmarks/runtime_bench.sh BIN_DIR LOG_DIR [SECONDS_PER_KERNEL]
# RUNTIME_KERNELS (space-separated) replaces the default list of kernels; SKIP_TUNING=1 uses results/best as it is,
# TUNE_ONLY=1 stops after the tuning runs; STREAM_SECONDS sets the streamed kernels' tuning time (an evaluation of
# one takes ~1 s: several passes over 512 MiB to 1 GiB of files). The entries stored are copied to LOG_DIR/best.
# Exits 1 when a step failed (the other steps still run), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin runtime_bench
(($# <= 3)) || bench_usage "at most three arguments"
bin="${1:-build}"
logs="${2:-runtime-logs}"
seconds="${3:-25}"
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export TUNE_BINARY="$PWD/$bin/tune"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$(mktemp -d)}"
summary="$logs/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
kernels=(${RUNTIME_KERNELS:-saxpy softmax layernorm transpose conv3x3 reduce_sum gemm_bf16})
streamed=(${STREAM_KERNELS-conv3x3_stream_small conv3x3_stream_large})
stream_root="${KERNLATHE_STREAM_DATA:-/tmp/kernlathe-stream}"
declare -A stream_data=([conv3x3_stream_small]="$stream_root/conv3x3_small/images_*.npy"
                        [conv3x3_stream_large]="$stream_root/conv3x3_large/images_*.npy")
stream_arguments=()
if ((${#streamed[@]})); then
  bench_step "stream data small, see $logs/make_stream_data.log" scripts/make_stream_data.sh small \
    >"$logs/make_stream_data.log" 2>&1
  bench_step "stream data large, see $logs/make_stream_data.log" scripts/make_stream_data.sh large \
    >>"$logs/make_stream_data.log" 2>&1
  note "stream data: exit $?"
  for kernel in "${streamed[@]}"; do stream_arguments+=(--stream "$kernel=${stream_data[$kernel]}"); done
fi

note "date $(date -u +%FT%TZ) commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
bench_step "nvidia-smi" nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader 2>&1 | tee -a "$summary"

for kernel in "${kernels[@]}" "${streamed[@]}"; do
  if [[ "${SKIP_TUNING:-0}" != 1 ]]; then
    kernel_seconds="$seconds"
    [[ " ${streamed[*]} " == *" $kernel "* ]] && kernel_seconds="${STREAM_SECONDS:-$seconds}"
    bench_step "tune run $kernel, see $logs/tune-$kernel.err" "$bin/tune" run "$kernel" --time "${kernel_seconds}s" \
      --budget 200 --out "$logs/runs/$kernel" --json >"$logs/tune-$kernel.json" 2>"$logs/tune-$kernel.err"
    note "tune run $kernel: exit $? $(python3 -c "
import json; r = json.load(open('$logs/tune-$kernel.json')); b = r['best'][0]
print('evaluated', r.get('evaluated'), 'best %.4f ms' % b['median_ms'], 'stored' if r.get('best_cache_updated') else 'kept stored entry')" 2>/dev/null)"
  fi
done

mkdir -p "$logs/best"
for kernel in "${kernels[@]}" "${streamed[@]}"; do cp "results/best/$kernel.json" "$logs/best/" 2>/dev/null; done
[[ "${TUNE_ONLY:-0}" == 1 ]] && bench_finish

rm -rf "$logs/export"
bench_step "tune export, see $logs/export.log" "$bin/tune" export "${kernels[@]}" "${streamed[@]}" --arch sm_90 \
  -o "$logs/export" --embed >"$logs/export.log" 2>&1
note "tune export: exit $? ($(tail -n 1 "$logs/export.log"))"
# tune measures each stored configuration again in this session (second evaluation of a 2-evaluation run: the
# default first, then the stored entry's configuration), in a scratch copy of the best cache so nothing stored changes.
: >"$logs/remeasured.txt"
for kernel in "${kernels[@]}" "${streamed[@]}"; do
  rm -rf "$logs/remeasure-best" && cp -r results/best "$logs/remeasure-best"
  bench_step "remeasure $kernel, see $logs/remeasure-$kernel.err" "$bin/tune" run "$kernel" --budget 2 \
    --best-dir "$logs/remeasure-best" --out "$logs/remeasure/$kernel" --json \
    >"$logs/remeasure-$kernel.json" 2>"$logs/remeasure-$kernel.err"
  bench_step "remeasured time of $kernel" python3 - "$kernel" "$logs/remeasure-$kernel.json" "results/best/$kernel.json" >>"$logs/remeasured.txt" <<'PY'
import json, sys
kernel, report, stored = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
entries = [e for e in stored["entries"] if e.get("device_name") == report["device"] and e["arch"] == report["arch"]]
for entry in entries:
    for ranked in report["best"]:
        if ranked["configuration"] == entry["configuration"]:
            print(kernel, ranked["median_ms"])
            raise SystemExit
PY
done
REMEASURED="$logs/remeasured.txt" bench_step "bench_runtime, see $logs/bench_runtime.txt" "$bin/bench_runtime" "$logs/export" "${kernels[@]}" "${stream_arguments[@]}" \
  >"$logs/bench_runtime.txt" 2>&1
note "bench_runtime: exit $?"
cat "$logs/bench_runtime.txt" | tee -a "$summary"

bench_step "runtime GPU tests, see $logs/runtime_gpu_tests.log" "$bin/test_gpu_device" --gtest_filter='RuntimeOnDevice.*:RuntimeWithoutContext.*:StreamedRuntimeOnDevice.*' \
  >"$logs/runtime_gpu_tests.log" 2>&1
note "runtime GPU tests: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$logs/runtime_gpu_tests.log" | tr '\n' ' '))"
grep -E '^\[ (runtime|stream)' "$logs/runtime_gpu_tests.log" | tee -a "$summary"

for example in gemm softmax; do
  exported="$example"
  [[ $example == gemm ]] && exported=gemm_bf16
  if [[ -x "$bin/kernlathe_${example}_example" && -f "$logs/export/database/$exported.json" ]]; then
    bench_step "example $example, see $logs/example-$example.log" "$bin/kernlathe_${example}_example" "$logs/export" \
      >"$logs/example-$example.log" 2>&1
    note "example $example: exit $?"
    cat "$logs/example-$example.log" | tee -a "$summary"
  fi
done
if ((${#streamed[@]})) && [[ -x "$bin/kernlathe_stream_conv3x3_example" ]]; then
  for mode in tuned naive; do
    bench_step "example stream_conv3x3 ($mode), see $logs/example-stream-$mode.log" \
      "$bin/kernlathe_stream_conv3x3_example" "$logs/export" "${stream_data[conv3x3_stream_small]}" conv3x3_stream_small \
      $([[ $mode == naive ]] && echo --naive) >"$logs/example-stream-$mode.log" 2>&1
    note "example stream_conv3x3 ($mode): exit $?"
    cat "$logs/example-stream-$mode.log" | tee -a "$summary"
  done
fi
bench_finish 2>&1 | tee -a "$summary"
exit "${PIPESTATUS[0]}"
