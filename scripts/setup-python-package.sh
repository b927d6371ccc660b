#!/usr/bin/env bash
# The Python package (python/, `import kernlathe`) in the project's virtual environment: its build tools and test
# runner (python/requirements.txt), PyTorch, and the package itself, built from this checkout. Called by
# scripts/setup-python.sh; safe to run again (torch is kept when it imports; the package is rebuilt incrementally in
# python/build/, seconds when nothing changed).
# PyTorch: the CPU wheel from PyTorch's own index where it is reachable (about 200 MB); otherwise PyPI's wheel, which
# brings the CUDA libraries (about 3 GB, 3 minutes on a 2-core machine; the CPU tests run the same).
# Usage: scripts/setup-python-package.sh [VENV_DIR]      (default .venv at the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${1:-.venv}"
python="$venv/bin/python"
torch_version="${KERNLATHE_TORCH_VERSION:-2.11.0}"
cpu_index=https://download.pytorch.org/whl/cpu
# --no-cache-dir: the wheels are not kept a second time in pip's cache (PyPI's torch with its CUDA libraries is 3 GB,
# and a CI machine's disk is small).
pip=("$python" -m pip install --quiet --disable-pip-version-check --no-cache-dir)

[[ -x "$python" ]] || { echo "setup-python-package: no virtual environment at $venv (run scripts/setup-python.sh)" >&2; exit 1; }
"${pip[@]}" -r python/requirements.txt

if "$python" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$torch_version' else 1)" 2>/dev/null; then
  echo "setup-python-package: torch $torch_version already in $venv" >&2
elif "$python" -c "import urllib.request; urllib.request.urlopen('$cpu_index/torch/', timeout=20)" 2>/dev/null; then
  echo "setup-python-package: torch $torch_version, CPU wheel" >&2
  "${pip[@]}" "torch==$torch_version" --index-url "$cpu_index" --extra-index-url https://pypi.org/simple
else
  echo "setup-python-package: PyTorch's CPU index is unreachable; torch $torch_version from PyPI (with CUDA libraries)" >&2
  "${pip[@]}" "torch==$torch_version"
fi

# The package, against this venv's build tools (no isolated build environment to download); ccache where present.
config=()
if command -v ccache >/dev/null; then
  config+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
start=$SECONDS
"${pip[@]}" --no-build-isolation --no-deps --force-reinstall "${config[@]}" ./python
"$python" -c 'import kernlathe, kernlathe.torch' || { echo "setup-python-package: kernlathe does not import" >&2; exit 1; }
echo "setup-python-package: kernlathe $("$python" -c 'import kernlathe; print(kernlathe.__version__)') built and installed in $venv in $((SECONDS - start)) s" >&2
