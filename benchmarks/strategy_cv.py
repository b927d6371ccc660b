#!/usr/bin/env python3
"""Choose the default search strategy by leave-one-kernel-family-out cross-validation on recorded landscapes.

Every candidate (the project's strategies and a few portfolio settings) is replayed with `tune replay --json` on
every landscape of the development set: 25 seeds, budgets 50, 100 and 200. A landscape's score is the median over
seeds of best/optimum. A candidate's score on a set of landscapes is the geometric mean of the landscapes' scores,
and the selection criterion is the mean of its logarithm over the three budgets, among the candidates that meet the
two hard goals of the default on the landscapes it is chosen on: never worse than random search (median, any budget),
and seeds that do not collapse (the quartiles over seeds are not one configuration slower than the optimum).

  fitted           the candidate chosen on every landscape, scored on every landscape (what tuning settings on the
                   data that judges them gives: optimistic)
  cross-validated  for each kernel family, the candidate chosen on the other families, scored on that family's
                   landscapes; the geometric mean over all landscapes of these held-out scores

Replays are cached under --cache (one JSON per candidate and landscape), so a rerun replays only what is missing.
Usage (from the repository root, after building):

  nice benchmarks/strategy_cv.py                    # the whole development set, about 20 minutes on 2 cores
  nice benchmarks/strategy_cv.py --seeds 5 --candidates 'local surrogate'   # a quick look

A replay that fails is named and its candidate left out (the others are still scored); the fitted choice breaking a
hard goal is a missed floor. Either exits 1 after the last line says which; bad usage exits 2 (argparse).
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_outcome import Outcome  # noqa: E402

outcome = Outcome("strategy_cv")
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T4 = ROOT.parent / "shared" / "datasets" / "t4"
BUDGETS = [50, 100, 200]
CANDIDATES = ["random", "local", "annealing", "genetic", "differential-evolution", "bayesian", "surrogate",
              "portfolio:model_share=0.25", "portfolio:model_share=0.5", "portfolio:model_share=0.75",
              "portfolio:model_share=0.25,local_learns_from_model=0",
              "portfolio:model_share=0.5,local_learns_from_model=0",
              "portfolio:model_share=0.25,model_first=30", "portfolio:model_share=0.25,model_first=60"]


def without_split_k(csv, workdir, label):
    """The GEMM records were made before the space had WG_SPLIT_K, by a kernel that never split K: at their 4096
    rows that is the value 0 of today's space (above 256 rows 0 never splits, and the space admits only 0 there). A
    record without the column is copied (with its run.json) into workdir with WG_SPLIT_K=0 on every row, and the
    space is pinned to WG_SPLIT_K == 0, so the replayed space is the one the record covers. Returns the record to
    replay and whether it was pinned."""
    lines = Path(csv).read_text().splitlines()
    header = lines[0].split(",")
    if "WG_SPLIT_K" in header:
        return csv, False
    at = header.index("WG_CLUSTER") + 1
    copied = Path(workdir) / label
    copied.mkdir(parents=True, exist_ok=True)
    rows = [",".join(header[:at] + ["WG_SPLIT_K"] + header[at:])]
    for line in lines[1:]:
        # Fields before WG_CLUSTER are plain values (no quotes or commas), so splitting there is safe.
        fields = line.split(",", at)
        rows.append(",".join(fields[:at] + ["0"] + fields[at:]))
    (copied / "evaluations.csv").write_text("\n".join(rows) + "\n")
    run_json = Path(csv).parent / "run.json"
    if run_json.exists():
        (copied / "run.json").write_text(run_json.read_text())
    return copied / "evaluations.csv", True


def wgmma_only_spec(kernel, workdir, pin_split_k=False):
    """The kernel's spec over the wgmma sub-space of spaces/gemm.yaml (the exhaustive wgmma records); pin_split_k:
    only WG_SPLIT_K == 0 (records made before split-K existed, see without_split_k)."""
    pinned = '  - PATH == "wgmma"\n' + ("  - WG_SPLIT_K == 0\n" if pin_split_k else "")
    space = (ROOT / "spaces" / "gemm.yaml").read_text().replace("constraints:\n", "constraints:\n" + pinned, 1)
    space_file = Path(workdir) / f"gemm_wgmma{'_unsplit' if pin_split_k else ''}.yaml"
    space_file.write_text(space)
    spec = (ROOT / "kernels" / f"{kernel}.yaml").read_text()
    spec = spec.replace("space: ../spaces/gemm.yaml", f"space: {space_file}")
    spec = spec.replace("template: ../templates", f"template: {ROOT / 'templates'}")
    spec_file = Path(workdir) / f"{kernel}_wgmma{'_unsplit' if pin_split_k else ''}.yaml"
    spec_file.write_text(spec)
    return spec_file


def landscapes(workdir):
    """(name, family, tune replay arguments): exhaustive records only, since a configuration a record lacks counts
    as a failure and would reward strategies that stay where the recording run went (the layernorm records hold 500
    of 50,382 valid configurations, so they are left out)."""
    found = []
    for kernel in ["convolution", "dedispersion"]:
        for gpu in ["A4000", "A6000", "MI250X"]:
            found.append((f"{kernel}-{gpu}", kernel, ["--t4", str(T4 / f"{kernel}-{gpu}.T4.json.gz")]))
    own = [("conv3x3", "W=8192_H=8192", "W=8192,H=8192"),
           ("saxpy", "N=67108864", "N=67108864"),
           ("softmax", "ROWS=8192_COLS=8192_ELEMENT_BYTES=4", "ROWS=8192,COLS=8192"),
           ("transpose", "ROWS=8192_COLS=8192", "ROWS=8192,COLS=8192")]
    for kernel, folder, problem in own:
        for gpu in ["h100", "h200"]:
            csv = ROOT / "results" / "runs" / kernel / "sm_90" / gpu / folder / "evaluations.csv"
            if csv.exists():
                found.append((f"{kernel}-{gpu}", kernel, ["--csv", str(csv), "--spec", f"kernels/{kernel}.yaml",
                                                          "--problem", problem, "--arch", "sm_90"]))
    gemm = [("gemm_f16", "wgmma-only", "M=4096,N=4096,K=4096", "f16-h200"),
            ("gemm_bf16", "wgmma-only", "M=4096,N=4096,K=4096", "bf16-h200"),
            ("gemm_bf16", "h100-wgmma-only", "M=4096,N=4096,K=4096", "bf16-h100"),
            ("gemm_bf16", "h200-wgmma-only", "M=4096,N=4096,K=4096", "bf16-h200b")]
    for kernel, folder, problem, label in gemm:
        kind = "INPUT_KIND=2" if kernel == "gemm_f16" else "INPUT_KIND=3"
        leaf = problem.replace(",", "_") + f"_{kind}_ELEMENT_BYTES=2"
        csv = ROOT / "results" / "runs" / kernel / "sm_90" / folder / leaf / "evaluations.csv"
        if csv.exists():
            csv, pinned = without_split_k(csv, workdir, f"gemm-{label}")
            found.append((f"gemm-{label}", "gemm", ["--csv", str(csv),
                                                     "--spec", str(wgmma_only_spec(kernel, workdir, pinned)),
                                                     "--problem", problem, "--arch", "sm_90"]))
    return found


def replay(tune, candidate, name, arguments, seeds, cache):
    budgets = "" if BUDGETS == [50, 100, 200] else "--" + "-".join(map(str, BUDGETS))
    key = re.sub(r"[^A-Za-z0-9_.=-]", "_", f"{name}--{candidate}--{seeds}{budgets}")
    path = cache / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    command = [str(tune), "replay", *arguments, "--strategy", candidate, "--seeds", str(seeds),
               "--budget", ",".join(map(str, BUDGETS)), "--json"]
    print(f"replaying {name} with {candidate}", file=sys.stderr, flush=True)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        outcome.failed(f"{' '.join(command)} exited with {result.returncode}: "
                       f"{(result.stderr.strip().splitlines() or [''])[-1]}")
        return None
    rows = {str(row["budget"]): {"median": row["median_best_over_optimum"],
                                 "q1": row["lower_quartile_best_over_optimum"],
                                 "q3": row["upper_quartile_best_over_optimum"]} for row in json.loads(result.stdout)}
    path.write_text(json.dumps(rows))
    return rows


def score(value):
    return value if value is not None else 10.0  # no seed found a working configuration: far worse than any


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(title, rows):
    print(f"\n{title}")
    print(f"| {'strategy':<52} | " + " | ".join(f"{b:>6}" for b in BUDGETS) + " |")
    print(f"|{'-' * 54}|" + "|".join("-" * 8 for _ in BUDGETS) + "|")
    for label, values in rows:
        print(f"| {label:<52} | " + " | ".join(f"{v:6.4f}" for v in values) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", default=str(ROOT / "build" / "tune"))
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--candidates", default=" ".join(CANDIDATES), help="strategies separated by spaces")
    parser.add_argument("--cache", default=str(ROOT / "build" / "strategy-cv"))
    parser.add_argument("--landscapes", default="", help="regular expression: only landscapes whose name matches")
    parser.add_argument("--budgets", default="50,100,200",
                        help="evaluation budgets, comma-separated; the criterion is the mean over them (default "
                             "50,100,200, those the default strategy was chosen on)")
    options = parser.parse_args()
    BUDGETS[:] = [int(budget) for budget in options.budgets.split(",")]
    candidates = options.candidates.split()
    cache = Path(options.cache)
    cache.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="strategy_cv_") as workdir:
        development = [l for l in landscapes(workdir) if re.search(options.landscapes, l[0])]
        results = {}  # (candidate, landscape) -> {budget: {median, q1, q3}}
        replay_failed = set()
        for name, family, arguments in development:
            for candidate in candidates:
                rows = replay(options.tune, candidate, name, arguments, options.seeds, cache)
                if rows is None:
                    replay_failed.add(candidate)
                results[candidate, name] = rows
        candidates = [candidate for candidate in candidates if candidate not in replay_failed]
        if not candidates:
            outcome.finish()

    names = [name for name, _, _ in development]
    families = sorted({family for _, family, _ in development})
    family_of = {name: family for name, family, _ in development}

    def median(candidate, name, budget):
        return score(results[candidate, name][str(budget)]["median"])

    def geomeans(candidate, subset):
        return [geometric_mean([median(candidate, name, b) for name in subset]) for b in BUDGETS]

    def criterion(candidate, subset):
        return sum(math.log(v) for v in geomeans(candidate, subset)) / len(BUDGETS)

    def failures(candidate, subset):
        """Where the candidate breaks a hard goal: (landscape, budget, what)."""
        broken = []
        for name in subset:
            for b in BUDGETS:
                row = results[candidate, name][str(b)]
                if "random" in candidates and median(candidate, name, b) > median("random", name, b) * 1.0001:
                    broken.append((name, b, "worse than random"))
                if row["q1"] is not None and row["q1"] == row["q3"] and row["q1"] > 1.001:
                    broken.append((name, b, f"collapsed at {row['q1']:.4f}"))
        return broken

    def choose(subset):
        eligible = [c for c in candidates if c != "random" and not failures(c, subset)]
        return min(eligible or candidates, key=lambda c: criterion(c, subset))

    print(f"{len(names)} landscapes in {len(families)} families ({', '.join(families)}), {options.seeds} seeds; "
          "geometric mean over landscapes of the median best/optimum")
    table("Every candidate on every landscape", [(c, geomeans(c, names)) for c in candidates])

    print("\nHard goals broken (never worse than random; no collapse of the seeds):")
    for candidate in candidates:
        broken = failures(candidate, names)
        print(f"  {candidate:<52} " + ("none" if not broken else "; ".join(f"{n} @ {b}: {w}" for n, b, w in broken)))
    fitted = choose(names)
    for name, b, what in failures(fitted, names):
        outcome.missed(f"the fitted choice {fitted} on {name} at budget {b}: {what}")
    table(f"Fitted: chosen on all landscapes: {fitted}", [(fitted, geomeans(fitted, names))])

    held_out = {}  # landscape -> the candidate chosen without its family
    print("\nLeave one family out: the candidate chosen on the other families")
    for family in families:
        training = [name for name in names if family_of[name] != family]
        chosen = choose(training)
        for name in names:
            if family_of[name] == family:
                held_out[name] = chosen
        scores = geomeans(chosen, [n for n in names if family_of[n] == family])
        print(f"  {family:<14} -> {chosen:<52} held-out " + " ".join(f"{v:.4f}" for v in scores))
    cross_validated = [geometric_mean([median(held_out[name], name, b) for name in names]) for b in BUDGETS]
    rows = [("cross-validated selection", cross_validated)]
    rows += [(c, geomeans(c, names)) for c in candidates]
    table("Cross-validated: held-out scores of the selection beside each fixed candidate", rows)

    print(f"\nPer landscape, {fitted} against random (median best/optimum; q1-q3 of {fitted} at 200):")
    for name in names:
        ours = [median(fitted, name, b) for b in BUDGETS]
        randoms = [median("random", name, b) for b in BUDGETS] if "random" in candidates else ours
        worse = [b for b, o, r in zip(BUDGETS, ours, randoms) if o > r * 1.0001]
        spread = results[fitted, name]["200"]
        print(f"  {name:<22} " + " ".join(f"{v:.4f}" for v in ours) + "  random " +
              " ".join(f"{v:.4f}" for v in randoms) +
              f"  q1-q3 {score(spread['q1']):.4f}-{score(spread['q3']):.4f}" +
              (f"  WORSE THAN RANDOM at {worse}" if worse else ""))
    outcome.finish()


if __name__ == "__main__":
    main()
