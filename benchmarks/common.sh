# shellcheck shell=bash
# Bookkeeping shared by the benchmark scripts and scripts/gpu-check.sh (issue 31: a benchmark that misses a floor or
# whose step failed must not exit 0). Sourced, never run:
#   source "$(dirname "$0")/common.sh"   (from benchmarks/; scripts/gpu-check.sh sources benchmarks/common.sh)
#   bench_begin NAME                  once, first: the name that starts every line this file prints
#   bench_usage "MESSAGE"             bad usage: the message and the script's usage line on stderr, exit 2
#   bench_step LABEL COMMAND...       runs COMMAND; a non-zero exit is recorded as a failed step named LABEL, and the
#                                     script goes on (the rest is still measured and logged). Returns its exit code.
#   bench_failed "WHAT"               records a failed step by hand (a step whose exit code is read elsewhere)
#   bench_missed "WHAT"               records a missed floor
#   bench_finish                      prints the final line (what failed, what missed) and exits 0, or 1 if any
# The records go to a ledger file ($BENCH_LEDGER, exported): Python reports started by the script record there too
# (benchmarks/bench_outcome.py), one "failed<TAB>WHAT" or "missed<TAB>WHAT" line each. A step that exits non-zero
# after recording its own lines in the ledger is not counted a second time.

bench_begin() {
  bench_name="$1"
  BENCH_LEDGER="$(mktemp "${TMPDIR:-/tmp}/kernlathe-bench-ledger.XXXXXX")"
  export BENCH_LEDGER
}

bench_usage() {
  echo "${bench_name:-benchmark}: $1" >&2
  sed -n 's/^# Usage\(.*\)$/usage\1/p' "$0" >&2
  exit 2
}

bench_record() {  # bench_record failed|missed WHAT
  printf '%s\t%s\n' "$1" "$2" >>"$BENCH_LEDGER"
}

bench_failed() {
  bench_record failed "$1"
  echo "${bench_name}: FAILED: $1" >&2
}

bench_missed() {
  bench_record missed "$1"
  echo "${bench_name}: MISSED: $1" >&2
}

bench_step() {
  local label="$1"
  shift
  local lines_before
  lines_before=$(wc -l <"$BENCH_LEDGER")
  "$@"
  local code=$?
  if ((code != 0)) && (($(wc -l <"$BENCH_LEDGER") == lines_before)); then
    bench_failed "$label (exit $code)"
  fi
  return "$code"
}

bench_count() {  # bench_count failed|missed -> the number of such records
  grep -c "^$1"$'\t' "$BENCH_LEDGER"
}

bench_finish() {
  local failed missed
  failed=$(bench_count failed)
  missed=$(bench_count missed)
  if ((failed == 0 && missed == 0)); then
    echo "${bench_name}: every step ran and every floor held"
    rm -f "$BENCH_LEDGER"
    exit 0
  fi
  local list
  list=$(cut -f2 "$BENCH_LEDGER" | paste -sd';' - | sed 's/;/; /g')
  echo "${bench_name}: ${failed} failed step(s), ${missed} missed floor(s): ${list}"
  rm -f "$BENCH_LEDGER"
  exit 1
}
