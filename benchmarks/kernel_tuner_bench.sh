#!/usr/bin/env bash
# Tuning speed against Kernel Tuner (issue 18): `tune` and Kernel Tuner 1.5.0 (CuPy backend) tune the same shipped
# kernels on this GPU, one after the other, cold caches; prints each tool's whole-run wall time and the ratio per
# kernel, last, and writes OUT_DIR/kernel_tuner_comparison.json (benchmarks/kernel_tuner/README.md).
#
# Usage (on a GPU host, from anywhere): benchmarks/kernel_tuner_bench.sh [TUNE_BINARY] [OUT_DIR] [kt_compare.py options]
#   TUNE_BINARY  default build/tune; OUT_DIR default kernel-tuner-logs (logs, records, JSON)
#   options      e.g. --only transpose,conv3x3  --kernel-tuner-timeout 150  --restrictions membership  --dry-run
#
# Kernel Tuner comes from PyPI (benchmarks/kernel_tuner/requirements.txt); CuPy must already be installed (its
# package is per CUDA version). The Python used ($PYTHON, default python3):
#   1. imports kernel_tuner already: used as it is;
#   2. else wheels in $KT_WHEELS (default .whl at the repository root) are installed offline into $KT_SITE
#      (default $TMPDIR/kernlathe-kernel-tuner-site) and put on PYTHONPATH. For a GPU host without network, fetch
#      them elsewhere: see benchmarks/kernel_tuner/offline-wheels.txt for the pip download line;
#   3. else a virtual environment $KT_VENV (default .deps/kernel-tuner-venv) that also sees the system's packages
#      (CuPy, NumPy) gets the requirements from PyPI.
# Exits 1 when the setup failed, a case failed or a case missed the 10x goal (kt_compare.py), 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
source benchmarks/common.sh
bench_begin kernel_tuner_bench
# A setup step that failed: nothing can be measured after it.
setup_failed() { bench_failed "$1"; bench_finish; }
tune="${1:-build/tune}"
out="${2:-kernel-tuner-logs}"
shift $(($# < 2 ? $# : 2))
python="${PYTHON:-python3}"
wheels="${KT_WHEELS:-.whl}"
export KERNLATHE_SOURCE_DIR="${KERNLATHE_SOURCE_DIR:-$PWD}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ -x "$tune" ]] || bench_usage "no $tune (build it, or name it)"
mkdir -p "$out"

imports_kernel_tuner() { "$1" -c 'import kernel_tuner, numpy, yaml' 2>/dev/null; }

if imports_kernel_tuner "$python"; then
  :
elif compgen -G "$wheels/*.whl" >/dev/null; then
  site="${KT_SITE:-${TMPDIR:-/tmp}/kernlathe-kernel-tuner-site}"
  rm -rf "$site"
  echo "kernel_tuner_bench: installing the wheels of $wheels into $site" >&2
  "$python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" "$wheels"/*.whl \
    || setup_failed "pip could not install the wheels of $wheels"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
else
  venv="${KT_VENV:-.deps/kernel-tuner-venv}"
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "kernel_tuner_bench: creating $venv (with the system's packages) for Kernel Tuner" >&2
    "$python" -m venv --system-site-packages "$venv" || setup_failed "could not create $venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r benchmarks/kernel_tuner/requirements.txt \
    || setup_failed "pip could not install benchmarks/kernel_tuner/requirements.txt"
  python="$venv/bin/python"
fi
if ! imports_kernel_tuner "$python"; then
  echo "kernel_tuner_bench: $python cannot import kernel_tuner, numpy and yaml:" >&2
  "$python" -c 'import kernel_tuner, numpy, yaml' 2>&1 | tail -3 >&2
  setup_failed "$python cannot import kernel_tuner, numpy and yaml"
fi
if [[ " $* " != *" --dry-run "* ]] && ! "$python" -c 'import cupy' 2>/dev/null; then
  setup_failed "$python cannot import cupy (install the cupy-cuda12x or cupy-cuda13x of the driver)"
fi
version=$("$python" -c 'import kernel_tuner; print(kernel_tuner.__version__)')
[[ "$version" == 1.5.0 ]] \
  || echo "kernel_tuner_bench: note: Kernel Tuner $version; the benchmark was written for 1.5.0" >&2

bench_step "kt_compare.py (a case failed or missed the goal: see $out/kt_compare.log)" \
  "$python" benchmarks/kernel_tuner/kt_compare.py --tune "$tune" --out "$out" --python "$python" "$@" 2>&1 \
  | tee "$out/kt_compare.log"
bench_finish
