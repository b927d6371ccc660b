#!/usr/bin/env python3
"""Time to the same quality, a sweep's problems against the same problems tuned from scratch (benchmarks/
workload_bench.sh, issue 32). Each problem's folder under SWEEP_DIR and SCRATCH_DIR holds a `tune run`'s records
(evaluations.csv, one row per evaluation with its epoch timestamp). For each problem present in both:

  q        the from-scratch run's best verified median (status ok)
  target   q * (1 + tolerance): rows within it count as the same quality, across the runs' noise
  times    each side's time from its first result to its first row at or under the target; where the sweep never gets
           there, its whole search time (a lower bound), and the problem is named

Prints a row per problem and the sums; exits 1 when the sweep's sum is more than a third of the from-scratch runs' or
the sweep did not reach some problem's quality at all (the floor: the same quality, in a third of the time), 2 on bad
usage. Usage: workload_time_to_quality.py SWEEP_DIR SCRATCH_DIR [--tolerance 0.01]"""
import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_outcome import Outcome  # noqa: E402

FLOOR = 1 / 3


def read_rows(records):
    """(seconds from the first result, median ms or None where not verified) per row, in time order."""
    with open(records, newline="") as file:
        rows = list(csv.DictReader(file))
    if not rows:
        return []
    stamped = sorted((float(row["timestamp"]), row) for row in rows)
    first = stamped[0][0]
    return [(stamp - first, float(row["time_median_ms"]) if row["status"] == "ok" and row["time_median_ms"] else None)
            for stamp, row in stamped]


def time_to(rows, target):
    """Seconds from the first result to the first row at or under target; None if no row gets there."""
    for seconds, median in rows:
        if median is not None and median <= target:
            return seconds
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("scratch_dir", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.01)
    arguments = parser.parse_args()
    outcome = Outcome("workload time to quality")
    problems = sorted(path.parent.name for path in arguments.scratch_dir.glob("*/evaluations.csv"))
    if not problems:
        outcome.failed(f"no records under {arguments.scratch_dir}")
        outcome.finish()
    print(f"time to the from-scratch run's best (within {arguments.tolerance:.1%}), seconds from each run's first result")
    print(f"{'problem':<58} {'scratch best':>12} {'sweep best':>10} {'scratch s':>9} {'sweep s':>8}")
    scratch_sum = sweep_sum = 0.0
    never = []
    for problem in problems:
        scratch = read_rows(arguments.scratch_dir / problem / "evaluations.csv")
        sweep_file = arguments.sweep_dir / problem / "evaluations.csv"
        sweep = read_rows(sweep_file) if sweep_file.exists() else []
        verified = [median for _, median in scratch if median is not None]
        if not verified or not sweep:
            outcome.failed(f"{problem}: {'no verified row from scratch' if not verified else 'no sweep records'}")
            continue
        best = min(verified)
        target = best * (1 + arguments.tolerance)
        scratch_seconds = time_to(scratch, target)
        sweep_seconds = time_to(sweep, target)
        sweep_best = min((median for _, median in sweep if median is not None), default=float("nan"))
        note = ""
        if sweep_seconds is None:
            sweep_seconds = sweep[-1][0]
            never.append(problem)
            note = "  (never within it: its whole search counted, a lower bound)"
        scratch_sum += scratch_seconds
        sweep_sum += sweep_seconds
        print(f"{problem:<58} {best:12.4f} {sweep_best:10.4f} {scratch_seconds:9.2f} {sweep_seconds:8.2f}{note}")
    if scratch_sum <= 0:
        outcome.failed("the from-scratch runs reached their best at their first result: nothing to compare")
        outcome.finish()
    ratio = sweep_sum / scratch_sum
    print(f"sum: from scratch {scratch_sum:.2f} s, sweep {sweep_sum:.2f} s: {ratio:.3f} of the time (floor <= "
          f"{FLOOR:.3f}); the sweep never reached {len(never)} of {len(problems)} problems' from-scratch best")
    if ratio > FLOOR:
        outcome.missed(f"the sweep took {ratio:.3f} of the from-scratch time to the same quality (floor {FLOOR:.3f})")
    if never:
        outcome.missed(f"the sweep never reached the from-scratch quality on {len(never)} problem(s): {', '.join(never)}")
    outcome.finish()


if __name__ == "__main__":
    main()
