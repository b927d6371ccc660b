#!/usr/bin/env python3
"""Would another objective choose a covering set that serves held-out problems better? (issue 32; the analysis behind
results/workload/README.md). Reads a sweep's records (FOLDER/<problem>/evaluations.csv, as benchmarks/workload_bench.sh
keeps them), builds the problem x configuration matrix of verified medians as `tune cover` does, and chooses at most
K configurations with each objective, by greedy additions then one-for-one swaps (tuner/cache/covering_set.cpp's
method): geo, the geometric mean of best / served time (what `tune cover` maximises; this script reproduces its
figures); min, the worst problem first, then the geometric mean; powQ, the power mean of served / best with exponent
Q (large Q leans to the worst). For each it prints the fractions on every problem and with each problem held out of
the choice. Configurations measured on fewer than 3 problems and best on none are left out of the candidates (for
speed; a held-out problem is served only by configurations measured on it).

    python3 benchmarks/covering_objectives.py FOLDER [K] [OBJECTIVE...]     (default K 6, objectives geo min pow8)
"""
import argparse
import csv
import math
from collections import Counter
from pathlib import Path


def load(folder):
    """{problem: {configuration: fastest verified median ms}}"""
    times = {}
    for records in sorted(Path(folder).glob("*/evaluations.csv")):
        row_times = times.setdefault(records.parent.name, {})
        with open(records, newline="") as file:
            for row in csv.DictReader(file):
                if row["status"] != "ok" or not row["time_median_ms"]:
                    continue
                key = tuple((name, value) for name, value in row.items() if name[:1].isupper() and name not in "MNK")
                row_times[key] = min(float(row["time_median_ms"]), row_times.get(key, math.inf))
    return times


def fractions(times, problems, chosen):
    result = []
    for problem in problems:
        served = [times[problem][c] for c in chosen if c in times[problem]]
        result.append(min(times[problem].values()) / min(served) if served else 0.0)
    return result


def score(values, objective):
    if not all(values):
        return (-sum(1 for v in values if not v), 0.0, 0.0)
    geo = sum(math.log(v) for v in values) / len(values)
    if objective == "geo":
        return (0, geo, 0.0)
    if objective == "min":
        return (0, min(values), geo)
    exponent = float(objective[3:])
    return (0, -sum(v ** -exponent for v in values) / len(values), geo)


def choose(times, problems, candidates, limit, objective):
    chosen = []
    for _ in range(limit):
        best = max((c for c in candidates if c not in chosen),
                   key=lambda c: score(fractions(times, problems, chosen + [c]), objective))
        chosen.append(best)
    current = score(fractions(times, problems, chosen), objective)
    improved = True
    while improved:
        improved = False
        for position in range(len(chosen)):
            for candidate in candidates:
                if candidate in chosen:
                    continue
                trial = chosen[:position] + [candidate] + chosen[position + 1:]
                trial_score = score(fractions(times, problems, trial), objective)
                if trial_score > current:
                    chosen, current, improved = trial, trial_score, True
    return chosen


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if all(values) else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a sweep's records: FOLDER/<problem>/evaluations.csv")
    parser.add_argument("limit", type=int, nargs="?", default=6, help="configurations at most (default 6)")
    parser.add_argument("objectives", nargs="*", default=["geo", "min", "pow8"], help="geo, min or powQ")
    arguments = parser.parse_args()  # bad usage: a message and exit 2
    for objective in arguments.objectives:
        power = objective.startswith("pow") and objective[3:].replace(".", "", 1).isdigit()
        if objective not in ("geo", "min") and not power:
            parser.error(f"objective {objective!r}: geo, min or powQ (Q a number)")
    if arguments.limit < 1:
        parser.error("the number of configurations must be at least 1")
    times = load(arguments.folder)
    if not times:
        parser.error(f"no records under {arguments.folder} (FOLDER/<problem>/evaluations.csv)")
    limit, objectives = arguments.limit, arguments.objectives
    problems = sorted(times)
    measured_on = Counter(c for row in times.values() for c in row)
    bests = {min(row, key=row.get) for row in times.values()}
    candidates = sorted({c for c, count in measured_on.items() if count >= 3} | bests)
    print(f"{len(problems)} problems, {len(candidates)} candidate configurations, at most {limit} chosen")
    for objective in objectives:
        on_all = fractions(times, problems, choose(times, problems, candidates, limit, objective))
        held = []
        for problem in problems:
            others = [p for p in problems if p != problem]
            held += fractions(times, [problem], choose(times, others, candidates, limit, objective))
        worst_held = problems[held.index(min(held))]
        print(f"{objective:6} every problem: geometric mean {geometric_mean(on_all):.3f}, worst {min(on_all):.3f} | "
              f"each held out: geometric mean {geometric_mean(held):.3f}, worst {min(held):.3f} ({worst_held})")


if __name__ == "__main__":
    main()
