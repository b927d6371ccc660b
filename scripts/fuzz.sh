#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) into build-fuzz/ and runs
# each fuzz/<name>_fuzz.cpp for the given number of seconds (default 60) over its seed corpus in
# fuzz/corpus/<name>/: the expression parser, the spec loader, the CSV record reader and space enumeration.
# One input running past 10 seconds is a failure too (-timeout): every target bounds its own work. On a failure
# the fuzzer's whole log is shown and the input that caused it is left in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DKERNLATHE_BUILD_TESTS=OFF -DKERNLATHE_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined" >/dev/null
mkdir -p build-fuzz/artifacts
for source in fuzz/*_fuzz.cpp; do
  name="$(basename "$source" .cpp)"
  cmake --build build-fuzz --target "$name" -j "$(nproc)" >/dev/null
  corpus="fuzz/corpus/${name%_fuzz}"
  work="$(mktemp -d)"
  log="$(mktemp)"
  echo "fuzz: $name for ${seconds}s over $corpus" >&2
  if ! build-fuzz/"$name" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
      -artifact_prefix=build-fuzz/artifacts/"$name"- "$work" "$corpus" >"$log" 2>&1; then
    cat "$log" >&2
    echo "fuzz: $name FAILED; the input is in build-fuzz/artifacts/" >&2
    rm -rf "$work" "$log"
    exit 1
  fi
  tail -n 3 "$log"
  rm -rf "$work" "$log"
done
