#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) into build-fuzz/ and runs
# each for the given number of seconds (default 60) over its seed corpus in fuzz/corpus/<name>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DKERNLATHE_BUILD_TESTS=OFF -DKERNLATHE_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined" >/dev/null
for source in fuzz/*_fuzz.cpp; do
  name="$(basename "$source" .cpp)"
  cmake --build build-fuzz --target "$name" -j "$(nproc)" >/dev/null
  corpus="fuzz/corpus/${name%_fuzz}"
  work="$(mktemp -d)"
  echo "fuzz: $name for ${seconds}s over $corpus" >&2
  build-fuzz/"$name" -max_total_time="$seconds" -print_final_stats=1 "$work" "$corpus" 2>&1 | tail -n 3
  rm -rf "$work"
done
