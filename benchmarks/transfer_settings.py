#!/usr/bin/env python3
"""Compares settings of the transfer prior (tuner/search/prior.h PriorSettings) with bench_search_transfer, on more
seeds than its default run and on the single-source pairings of --single-sources.

For each setting (transfers proposed at most, model share of the default strategy's own proposals while a prior is in
play), bench_search_transfer runs with --json --single-sources on several disjoint seed sets (50 seeds each by
default: 1-50, 51-100, 101-150). Printed per setting and section: the geometric mean of best/optimum over every target
and every seed of all sets at 20 and 50 evaluations, the range of the per-set figures, and how many (target, seed
set) cases were worse with the prior than without beyond the noise. The no-prior figures do not depend on the
setting and are printed once.

The sections: the T4 files with the other GPUs as prior (leave one out, the floor of issue 32), the T4 files with
each other GPU alone as prior, and the project's H100/H200 records (each GPU from the other).

Exit 0 when every run gave its figures (a setting that misses a floor is a result here, not a failure), 1 when a run
failed, 2 on bad usage.

Usage: benchmarks/transfer_settings.py [--bench build/bench_search_transfer] [--seeds 50] [--sets 3]
                                       [--settings 6:0.25,6:0.5,...]
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_outcome import Outcome  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ["community T4 files", "community T4 files, one GPU as prior", "project records"]
BUDGETS = [20, 50]
# Before 2026-11-29 (6 transfers, the portfolio's own 0.25), the default since (0.5), and the neighbours of each.
DEFAULT_SETTINGS = "6:0.25,6:0.5,4:0.25,4:0.5,8:0.5,6:0.375,6:0.75"


def parse_settings(text):
    settings = []
    for item in text.split(","):
        transfers, share = item.split(":")
        settings.append((int(transfers), float(share)))
    return settings


def mean_of_logs(values):
    return math.exp(sum(math.log(value) for value in values) / len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=str(ROOT / "build" / "bench_search_transfer"))
    parser.add_argument("--seeds", type=int, default=50, help="seeds per set")
    parser.add_argument("--sets", type=int, default=3, help="disjoint seed sets")
    parser.add_argument("--settings", default=DEFAULT_SETTINGS, help="TRANSFERS:MODEL_SHARE,...")
    options = parser.parse_args()
    outcome = Outcome("transfer_settings")
    try:
        settings = parse_settings(options.settings)
    except ValueError:
        outcome.usage(f"--settings takes TRANSFERS:MODEL_SHARE,... (got '{options.settings}')", parser.format_usage())
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"# date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}")
    print(f"# commit: {commit}")
    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores, CPU only")
    print(f"# command: benchmarks/transfer_settings.py --seeds {options.seeds} --sets {options.sets} "
          f"--settings {options.settings}")
    print(f"# each setting: bench_search_transfer --json --single-sources --seeds {options.seeds} --first-seed "
          f"{', '.join(str(1 + index * options.seeds) for index in range(options.sets))}")
    print("# figures: geometric mean of best/optimum over every target and seed of all sets [lowest-highest set]; "
          "worse: (target, set) cases worse with the prior than without beyond the noise\n")
    without = {}
    print(f"{'transfers':>9} {'share':>6}  {'section':<38} " + " ".join(f"{'@' + str(b):>24}" for b in BUDGETS)
          + "  worse")
    for transfers, share in settings:
        per_set = {section: {budget: [] for budget in BUDGETS} for section in SECTIONS}
        worse = {section: 0 for section in SECTIONS}
        for index in range(options.sets):
            command = [options.bench, "--json", "--single-sources", "--seeds", str(options.seeds),
                       "--first-seed", str(1 + index * options.seeds), "--transfers", str(transfers),
                       "--model-share", str(share)]
            result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            if result.returncode not in (0, 1):  # 1: a floor missed, still a result
                outcome.failed(f"{' '.join(command)}: exit {result.returncode}: {result.stderr.strip()[-300:]}")
                continue
            output = json.loads(result.stdout)
            section_of_case = {"T4, leave one GPU out": SECTIONS[0]}
            for case in output["cases"]:
                section = section_of_case.get(case["data"],
                                              SECTIONS[1] if case["data"].startswith("T4, prior ") else SECTIONS[2])
                worse[section] += 1 if case["worse_beyond_noise"] else 0
            for section in SECTIONS:
                for budget in BUDGETS:
                    per_set[section][budget].append(output["summary"][section][f"with_prior_at_{budget}"])
                    without.setdefault((section, budget, index),
                                       output["summary"][section][f"without_prior_at_{budget}"])
        for section in SECTIONS:
            cells = []
            for budget in BUDGETS:
                figures = per_set[section][budget]
                if not figures:
                    cells.append(f"{'-':>24}")
                    continue
                # Sets of equal size: the geometric mean of their geometric means is that over every seed.
                cells.append(f"{mean_of_logs(figures):.4f} [{min(figures):.4f}-{max(figures):.4f}]".rjust(24))
            print(f"{transfers:>9} {share:>6}  {section:<38} " + " ".join(cells) + f"  {worse[section]:>5}")
    print("\nwithout a prior (the same for every setting):")
    for section in SECTIONS:
        cells = []
        for budget in BUDGETS:
            figures = [without[(section, budget, index)] for index in range(options.sets)
                       if (section, budget, index) in without]
            finite = [figure for figure in figures if figure is not None and math.isfinite(figure)]
            cells.append(f"{mean_of_logs(finite):.4f}".rjust(24) if finite and len(finite) == len(figures)
                         else f"{'inf':>24}")
        print(f"{'':>9} {'':>6}  {section:<38} " + " ".join(cells))
    if outcome.records:
        outcome.finish()  # exits 1, naming the runs that failed
    print("transfer_settings: every run gave its figures (a comparison: no floor is judged here)")


if __name__ == "__main__":
    main()
