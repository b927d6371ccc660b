#!/usr/bin/env bash
# The C++ file `tune export --embed` writes, compiled into a program that links the installed runtime library
# (tests/embedded_export/), one phase per ctest test of the EmbeddedExport fixture (CMakeLists.txt):
#   export  tune export of tests/data/export (kernel stride, sm_90) with --embed
#   build   cmake --install of this build into a prefix, then the program configured and built against it
#   select  the program finds its embedded kernel and selects it for the H100 SXM and PCIe without a GPU
#   launch  the program launches from the embedded cubin and checks the outputs (GPU; exit 77 where there is none)
# Usage: tests/embedded_export_check.sh PHASE SOURCE_DIR BUILD_DIR [TUNE]
set -euo pipefail
phase="$1"
source_dir="$2"
build="$3"
work="$build/embedded_export"
case "$phase" in
  export)
    rm -rf "$work"
    mkdir -p "$work"
    "$4" export stride --dir "$source_dir/tests/data/export/best" --specs "$source_dir/tests/data/export/kernels" \
      --arch sm_90 -o "$work/ship" --embed
    test -f "$work/ship/kernlathe_embedded.cpp"
    ;;
  build)
    cmake --install "$build" --prefix "$work/prefix" >/dev/null
    cmake -S "$source_dir/tests/embedded_export" -B "$work/program" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DKERNLATHE_EMBEDDED_SOURCE="$work/ship/kernlathe_embedded.cpp" >/dev/null
    cmake --build "$work/program"
    ;;
  select | launch)
    exec "$work/program/embedded_program" "$phase"
    ;;
  *)
    echo "embedded_export_check: unknown phase '$phase' (export, build, select or launch)" >&2
    exit 2
    ;;
esac
