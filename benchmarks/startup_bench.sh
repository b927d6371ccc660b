#!/usr/bin/env bash
# Start-up of `tune run` per shipped spec (issue 18: at most 1 s before the first evaluation). Each spec runs once
# untimed (it fills the cubin and ceiling caches, as a user's first run does), then STARTUP_RUNS times (default 2)
# with those caches; the specs of STARTUP_COLD_SPECS run once more with an empty cubin cache and CUDA_CACHE_DISABLE=1
# (ceilings still cached: every compile, the worker's own kernels included, happens in that run). NVRTC's cubins
# go through CUDA's compute cache (~/.nv/ComputeCache) unless CUDA_CACHE_DISABLE=1: on the H200 host the worker's
# kernels for nine dtypes compiled in 1.28 s, then in 0.03 s with that cache, 1.15 s again without it. Every run is `tune run SPEC --budget 3
# --final 0 --json`, the default strategy. Per run it reads the profile of the JSON and prints, last, one line per
# spec: start-up (process start to the end of the start-up phases), when the first configuration went to the GPU
# and when its result came (both from the process's start), and the wall time around the process.
# Usage (on a GPU host, from anywhere): benchmarks/startup_bench.sh [BIN_DIR] [LOG_DIR]
#   STARTUP_SPECS       spec names (default: every kernels/*.yaml; the streamed specs' data is written first)
#   STARTUP_COLD_SPECS  default "gemm_bf16 saxpy transpose conv3x3"
# Exits 1 when a run failed or a start-up took more than 1 s (the floor), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
source benchmarks/common.sh
bench_begin startup_bench
(($# <= 2)) || bench_usage "at most two arguments"
bin="${1:-build}"
logs="${2:-startup-logs}"
runs="${STARTUP_RUNS:-2}"
mkdir -p "$logs"
export KERNLATHE_SOURCE_DIR="$PWD"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if [[ -n "${STARTUP_SPECS:-}" ]]; then
  read -r -a specs <<<"$STARTUP_SPECS"
else
  specs=()
  for file in kernels/*.yaml; do specs+=("$(basename "$file" .yaml)"); done
fi
read -r -a cold_specs <<<"${STARTUP_COLD_SPECS:-gemm_bf16 saxpy transpose conv3x3}"
if [[ " ${specs[*]} " == *stream* ]]; then
  bench_step "stream data, see $logs/stream_data.log" scripts/make_stream_data.sh all >"$logs/stream_data.log" 2>&1
fi

caches="$(mktemp -d)"
ceilings="$caches/warm/kernlathe/ceilings"
# One timed run: NAME CACHE_HOME SPEC [CUDA_CACHE_DISABLE]
run_once() {
  local name="$1" cache_home="$2" spec="$3"
  local environment=("XDG_CACHE_HOME=$cache_home")
  [[ "${4:-0}" == 1 ]] && environment+=("CUDA_CACHE_DISABLE=1")
  local out="$logs/runs/$name"
  rm -rf "$out"
  mkdir -p "$out"
  local start end
  start=$(date +%s.%N)
  bench_step "$name: tune run, see $out/stderr.log" env "${environment[@]}" "$bin/tune" run "$spec" --budget 3 --final 0 --ceiling-cache "$ceilings" \
    --out "$out" --best-dir "$caches/best" --json >"$out/report.json" 2>"$out/stderr.log"
  local code=$?
  end=$(date +%s.%N)
  echo "$name $spec $code $(python3 -c "print(f'{$end - $start:.3f}')")" >>"$logs/runs.txt"
}

: >"$logs/runs.txt"
for spec in "${specs[@]}"; do
  run_once "$spec-first" "$caches/warm" "$spec"
  for ((index = 1; index <= runs; ++index)); do run_once "$spec-warm-$index" "$caches/warm" "$spec"; done
  if [[ " ${cold_specs[*]} " == *" $spec "* ]]; then
    rm -rf "$caches/cold"
    run_once "$spec-cold" "$caches/cold" "$spec" 1
  fi
done

bench_step "report" python3 - "$logs" <<'EOF'
import json, os, sys
sys.path.insert(0, "benchmarks")
from bench_outcome import Outcome
outcome = Outcome("startup_bench report")

logs = sys.argv[1]
rows = []
for line in open(os.path.join(logs, "runs.txt")):
    name, spec, code, wall = line.split()
    if name.endswith("-first"):
        continue
    kind = "cold cubins" if name.endswith("-cold") else "warm"
    report_path = os.path.join(logs, "runs", name, "report.json")
    try:
        report = json.load(open(report_path))
        profile = report["profile"]
    except (OSError, ValueError, KeyError):
        rows.append((spec, kind, None, None, None, float(wall), f"exit {code}, no report"))
        continue
    process = max(profile.get("process_start_seconds", 0), 0)
    startup = process + profile["startup_seconds"]
    first_request = process + profile.get("first_request_seconds", 0)
    first_result = process + profile["first_result_seconds"]
    # The largest phases on the start-up's path, then what ran alongside.
    path = sorted((p for p in profile["startup"] if not p.get("alongside")), key=lambda p: -p["seconds"])[:3]
    side = sorted((p for p in profile["startup"] if p.get("alongside")), key=lambda p: -p["seconds"])[:2]
    top = ", ".join(f"{p['phase']} {p['seconds']:.2f}" for p in path)
    if side:
        top += "; alongside: " + ", ".join(f"{p['phase']} {p['seconds']:.2f}" for p in side)
    rows.append((spec, kind, startup, first_request, first_result, float(wall), top))

with open(os.path.join(logs, "startup.json"), "w") as out:
    json.dump([dict(zip(("spec", "caches", "startup_s", "first_request_s", "first_result_s", "wall_s", "largest"), row))
               for row in rows], out, indent=1)
print(f"{'spec':24} {'caches':11} {'start-up':>8} {'1st sent':>8} {'1st result':>10} {'wall':>6}  largest phases")
for spec, kind, startup, request, result, wall, top in rows:
    number = lambda value: f"{value:.2f}" if value is not None else "-"
    print(f"{spec:24} {kind:11} {number(startup):>8} {number(request):>8} {number(result):>10} {wall:6.2f}  {top}")
over = [row for row in rows if row[2] is None or row[2] > 1.0]
print(f"\nstart-up above 1 s: {len(over)} of {len(rows)} runs" + (": " + ", ".join(f"{r[0]} ({r[1]})" for r in over) if over else ""))
for spec, kind, startup, *_ in over:
    outcome.missed(f"{spec} ({kind}): start-up " + (f"{startup:.2f} s" if startup is not None else "not measured") +
                   ", floor 1 s")
outcome.finish()
EOF
bench_finish
