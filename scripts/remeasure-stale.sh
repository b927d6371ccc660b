#!/usr/bin/env bash
# Measures again, on this host's GPU, the configurations of every stale entry of the named kernels (`tune best
# KERNEL` says STALE: the spec, its space or a template file changed since the entry was measured), each with its own
# problem: `tune run KERNEL --problem P --config C`, which verifies, times and stores it in results/best with its
# record under results/runs/KERNEL/remeasured/DATE/. For an edit that leaves those kernels' code as it was (a new epilogue
# behind a compile option of another spec, a comment), this brings the stored entries back without searching again;
# after an edit that changes them, scripts/tune-shipped-kernels.sh searches again instead.
# Entries of other GPUs are left alone (they say which device measured them). Logs go to LOG_DIR, one per run; exit 0
# only when every run passed.
# Usage (GPU host, repository root): scripts/remeasure-stale.sh LOG_DIR KERNEL...
#   TUNE_BINARY   the tune to run (default .device/bin/tune, else build/tune)
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${1:?usage: scripts/remeasure-stale.sh LOG_DIR KERNEL...}"
shift
(($# > 0)) || { echo "remeasure-stale: name at least one kernel" >&2; exit 2; }
mkdir -p "$logs"
tune="${TUNE_BINARY:-}"
for candidate in .device/bin/tune build/tune; do
  [[ -z "$tune" && -x "$candidate" ]] && tune="$candidate"
done
[[ -n "$tune" ]] || { echo "remeasure-stale: no tune binary (.device/bin/tune or build/tune)" >&2; exit 2; }
device="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
[[ -n "$device" ]] || { echo "remeasure-stale: no GPU (nvidia-smi names none)" >&2; exit 3; }

# A folder per day keeps each day's re-measurements apart from the searches and from each other.
day="$(date -u +%F)"
status=0
for kernel in "$@"; do
  # One line per stale entry of this device: PROBLEM<TAB>CONFIGURATION (NAME=VALUE,...).
  entries="$("$tune" best "$kernel" --json | python3 -c '
import json, sys
device = sys.argv[1]
for entry in json.load(sys.stdin):
    if entry.get("stale") and entry["device"] == device:
        values = ",".join(f"{name}={str(value).lower() if isinstance(value, bool) else value}"
                          for name, value in entry["configuration"].items())
        problem = entry["problem"]
        print(f"{problem}\t{values}")' "$device")" || { echo "$kernel: tune best failed"; status=1; continue; }
  [[ -n "$entries" ]] || { echo "$kernel: no stale entry of $device"; continue; }
  while IFS=$'\t' read -r problem configuration; do
    name="${kernel}_${problem//[=,]/_}"
    start=$SECONDS
    "$tune" run "$kernel" --problem "$problem" --config "$configuration" \
      --out "results/runs/$kernel/remeasured/$day/${problem//,/_}" >"$logs/$name.log" 2>&1
    code=$?
    echo "$kernel $problem: exit $code in $((SECONDS - start)) s"
    ((code == 0)) || status=1
  done <<<"$entries"
done
exit $status
