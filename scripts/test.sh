#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every CPU test, compile-checks every shipped kernel spec
# with NVRTC (no GPU needed) and gives each fuzz target a short bounded run.
# GPU tests carry the ctest label `gpu`; on a machine with a GPU run them with: ctest --test-dir build -L gpu
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh "$@"

ctest_log="$(mktemp)"
ctest --test-dir build -L cpu --output-on-failure -j "$(nproc)" | tee "$ctest_log"
total="$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$ctest_log" | tail -n 1)"
rm -f "$ctest_log"

for spec in kernels/*.yaml; do
  build/tune compile-check "$spec" --arch sm_90 --sample 8
  build/tune compile-check "$spec" --arch sm_80 --sample 4
done

scripts/fuzz.sh 30

# ctest has already failed the script on any failing test; the closing line counts them for the record.
echo "ctest: ${total:-0} passed, 0 failed"
