#!/usr/bin/env bash
# The project's Python: a virtual environment in .venv (ignored by git) holding the pinned packages of
# scripts/report/requirements.txt (what `tune report` draws its charts with), then the Python package `kernlathe`
# with PyTorch and its build and test tools (scripts/setup-python-package.sh). Safe to run again: report packages
# that already import are left as they are, and the package is rebuilt incrementally.
# Usage: scripts/setup-python.sh [VENV_DIR]      (default .venv at the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${1:-.venv}"
requirements=scripts/report/requirements.txt
python="${PYTHON:-/usr/bin/python3}"

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import matplotlib, numpy' 2>/dev/null; then
  exec scripts/setup-python-package.sh "$venv"
fi
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "setup-python: $python cannot create a virtual environment; install python3-venv (apt-get install python3-venv)" >&2
  exit 1
fi
echo "setup-python: creating $venv with $(grep -c '==' "$requirements") pinned packages" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir -r "$requirements"
"$venv/bin/python" -c 'import matplotlib, numpy' || { echo "setup-python: $venv does not import matplotlib" >&2; exit 1; }
echo "setup-python: $venv ready for tune report" >&2
scripts/setup-python-package.sh "$venv"
