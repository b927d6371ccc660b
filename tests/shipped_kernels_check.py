#!/usr/bin/env python3
"""The kernels the Python package launches (kernlathe.torch, python/kernlathe/torch/ops.py) each have a stored entry
in results/best that is current: measured against the spec, space and template sources as they are now (`tune best
KERNEL --json`: "stale": false). A template or spec change that staled them made the runtime pass their entries over
or refuse their databases, and the package's GPU tests failed on the GPU host long after the change; this check says
so in CI, where it happens. tests/data/stale_shipped_kernels.txt names the kernels known to be stale (each with the
reason); the list may only shrink: a kernel on it that is current again fails the check until it is taken off.
Re-tune with scripts/tune-shipped-kernels.sh on a GPU host.

Usage: shipped_kernels_check.py SOURCE_DIR TUNE_BINARY"""

import json
import re
import subprocess
import sys
from pathlib import Path

# What kernlathe.torch plans calls onto (its Plan(..., kernel, ...) names); checked against its modules below.
SHIPPED = ["gemm_bf16", "gemm_bf16_bias_gelu", "gemm_bf16_bias_residual", "gemm_f16", "attention_bf16",
           "attention_f16", "rmsnorm_bf16", "rmsnorm", "layernorm_bf16", "layernorm", "softmax_bf16", "softmax",
           "silu_mul_bf16", "gemm_bf16_silu_gated", "gemm_decode_bf16"]


def known_stale(source):
    known = {}
    for line in (source / "tests/data/stale_shipped_kernels.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            kernel, _, reason = line.partition(":")
            known[kernel.strip()] = reason.strip()
    return known


def main():
    source, tune = Path(sys.argv[1]), sys.argv[2]
    ops = "".join(path.read_text() for path in sorted((source / "python/kernlathe/torch").glob("*.py")))
    problems = []
    for kernel in SHIPPED:
        family = re.sub(r"_(bf16|f16)$", "", kernel).split("_")[0]
        if kernel not in ops and family not in ops:
            problems.append(f"{kernel}: not named in python/kernlathe/torch/*.py; is it still shipped?")
    known = known_stale(source)
    for kernel in SHIPPED:
        result = subprocess.run([tune, "best", kernel, "--json", "--dir", str(source / "results/best"), "--specs",
                                 str(source / "kernels")], cwd=source, capture_output=True, text=True)
        if result.returncode != 0:
            problems.append(f"{kernel}: tune best exited {result.returncode}: {result.stderr.strip()[:300]}")
            continue
        entries = json.loads(result.stdout)
        current = [entry for entry in entries if not entry["stale"]]
        if kernel in known:
            if current:
                problems.append(f"{kernel}: current again ({current[0]['device']}, {current[0]['problem']}): take it "
                                "off tests/data/stale_shipped_kernels.txt")
            continue
        if not current:
            reasons = sorted({entry["stale_reason"] for entry in entries}) or ["no entries"]
            problems.append(f"{kernel}: none of its {len(entries)} stored entries is current ({'; '.join(reasons)[:300]}"
                            "); run scripts/tune-shipped-kernels.sh on a GPU host")
    for problem in problems:
        print(f"shipped_kernels_check: {problem}")
    print(f"shipped_kernels_check: {len(SHIPPED)} kernels, {len(known)} known stale, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
