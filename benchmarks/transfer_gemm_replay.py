#!/usr/bin/env python3
"""The GEMM part of the transfer floor (issue 32: a GPU model never tuned, with another model's records as prior,
reaches within 2% of its best known configuration in <= 20 evaluations), replayed on the CPU.

The project holds exhaustive recordings of the bf16 wgmma GEMM (4096^3) on the H100 and the H200. Each in turn is
the target: `tune replay` runs the default strategy on the target's recording, without a prior and with the other
model's recording as `--prior`, 10 seeds, budgets 10, 20 and 50, and prints the median and the upper quartile over
seeds of best/optimum. The recordings predate WG_SPLIT_K and cover the wgmma sub-space: they are replayed over the
space pinned to PATH == "wgmma" and WG_SPLIT_K == 0, as benchmarks/strategy_cv.py does (its without_split_k).

A replay is the target's recorded landscape, not a first run on that GPU: a configuration the recording lacks
cannot be proposed, so the figure says how fast the search reaches the best of what was measured there.
Exit 1 when, with the prior, the upper quartile at 20 evaluations is above 1.02 on either target; 2 on bad usage.

Usage: benchmarks/transfer_gemm_replay.py [--tune build/tune] [--seeds 10]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strategy_cv  # noqa: E402  (without_split_k, wgmma_only_spec)
from bench_outcome import Outcome  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LEAF = "M=4096_N=4096_K=4096_INPUT_KIND=3_ELEMENT_BYTES=2"
BUDGETS = [10, 20, 50]
FLOOR = 1.02


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", default=str(ROOT / "build" / "tune"))
    parser.add_argument("--seeds", type=int, default=10)
    options = parser.parse_args()
    outcome = Outcome("transfer_gemm_replay")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"# date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}")
    print(f"# commit: {commit}")
    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores, CPU only")
    print(f"# command: benchmarks/transfer_gemm_replay.py --seeds {options.seeds} (default strategy, tune replay)")
    print("# records: results/runs/gemm_bf16/sm_90/h100-wgmma-only and h200-wgmma-only, bf16 M=N=K=4096\n")
    base = ROOT / "results" / "runs" / "gemm_bf16" / "sm_90"
    with tempfile.TemporaryDirectory(prefix="transfer_gemm_") as workdir:
        records = {}
        for gpu in ["h100", "h200"]:
            records[gpu], pinned = strategy_cv.without_split_k(base / f"{gpu}-wgmma-only" / LEAF / "evaluations.csv",
                                                               workdir, gpu)
        spec = strategy_cv.wgmma_only_spec("gemm_bf16", workdir, pin_split_k=pinned)
        print(f"{'target':<8} {'prior':<8} " + " ".join(f"{'@' + str(b) + ' median':>12} {'q3':>7}" for b in BUDGETS))
        for target, source in [("h100", "h200"), ("h200", "h100")]:
            for prior in [None, source]:
                command = [options.tune, "replay", "--csv", str(records[target]), "--spec", str(spec),
                           "--problem", "M=4096,N=4096,K=4096", "--arch", "sm_90", "--seeds", str(options.seeds),
                           "--budget", ",".join(map(str, BUDGETS)), "--json"]
                if prior:
                    command += ["--prior", str(records[prior])]
                result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
                if result.returncode != 0:
                    outcome.failed(f"{' '.join(command)}: exit {result.returncode}: {result.stderr.strip()[-300:]}")
                    continue
                rows = {row["budget"]: row for row in json.loads(result.stdout)}
                cells = []
                for budget in BUDGETS:
                    row = rows[budget]
                    cells.append(f"{row['median_best_over_optimum']:12.4f} {row['upper_quartile_best_over_optimum']:7.4f}")
                print(f"{target.upper():<8} {(prior or 'none').upper():<8} " + " ".join(cells))
                if prior and rows[20]["upper_quartile_best_over_optimum"] > FLOOR:
                    outcome.missed(f"{target} with the {prior} prior: upper quartile "
                                   f"{rows[20]['upper_quartile_best_over_optimum']:.4f} at 20 evaluations (floor {FLOOR})")
    outcome.finish()


if __name__ == "__main__":
    main()
