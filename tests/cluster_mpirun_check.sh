#!/usr/bin/env bash
# `tune run` under Open MPI's mpirun: four ranks on this machine replay a committed saxpy record (no GPU). Rank 0
# records and ranks; the check reads every rank's output and the record: the same chosen configuration on every
# rank, every rank measured, no configuration recorded twice, as many rows as evaluations. Then two ranks of two
# replayed GPUs each (--devices inside a rank, as two hosts of two GPUs would run): the same, for every GPU.
# Usage: tests/cluster_mpirun_check.sh <tune binary> <source dir> <mpirun>
set -euo pipefail
tune=$1
source_dir=$2
mpirun=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mpirun refuses root unless told; containers often lack the ptrace rights of the single-copy transport.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$source_dir"
# mpirun RANKS OUT RUN [tune run's options]: a replay of the committed saxpy record over RANKS ranks, each rank's
# output under $work/OUT, the record under $work/RUN.
replay_over_ranks() {
  local ranks=$1 out=$2 run=$3
  shift 3
  "$mpirun" --oversubscribe -n "$ranks" --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
    --output-filename "$work/$out" \
    "$tune" run saxpy --replay results/runs/saxpy/sm_90/N=67108864/evaluations.csv --out "$work/$run" --json "$@" \
    > /dev/null 2> "$work/$out.log" || { cat "$work/$out.log" >&2; exit 1; }
}
replay_over_ranks 4 out run
# Two "hosts" of two GPUs: each rank measures on its --devices (on real hosts each rank names its own GPUs).
replay_over_ranks 2 out2 run2 --devices 0,1

python3 - "$work" <<'PYTHON'
import csv, glob, json, os, sys
work = sys.argv[1]


def check(out, run, ranks, expected_lanes=None):
    """Every rank's every GPU printed rank 0's choice and measured what rank 0 recorded from it; the record holds
    each configuration once, one row per evaluation, rows from every lane."""
    outputs = {}
    for path in glob.glob(os.path.join(work, out, "*", "rank.*", "stdout")):
        rank = int(path.split("rank.")[1].split(os.sep)[0])
        with open(path) as stream:
            outputs[rank] = json.load(stream)
    assert sorted(outputs) == list(range(ranks)), f"outputs of ranks {sorted(outputs)}"
    report = outputs[0]
    chosen = report["chosen"]
    assert chosen, "rank 0 chose nothing"
    if expected_lanes:
        assert sorted(report["devices"]) == expected_lanes, f"lanes {report['devices']}"
    for rank in range(1, ranks):
        gpus = outputs[rank]
        if expected_lanes:  # a rank of several GPUs prints one outcome per GPU
            assert isinstance(gpus, list) and len(gpus) == 2, f"rank {rank} printed {gpus}"
        for gpu in gpus if isinstance(gpus, list) else [gpus]:
            label = gpu["label"]
            assert gpu["chosen"] == chosen, f"{label} chose {gpu['chosen']}, rank 0 {chosen}"
            assert label in report["devices"], f"{label} not among {report['devices']}"
            assert gpu["measured"] == report["evaluations_per_device"].get(label, 0), label
            assert gpu["measured"] >= 1, f"{label} measured nothing"
    with open(os.path.join(work, run, "evaluations.csv")) as stream:
        rows = list(csv.DictReader(stream))
    parameters = ["BLOCK", "VEC", "ITEMS", "GRID_STRIDE", "BLOCKS_PER_SM"]
    keys = [tuple(row[name] for name in parameters) for row in rows]
    assert len(keys) == len(set(keys)), "a configuration was recorded twice"
    assert len(rows) == report["evaluated"], f"{len(rows)} rows for {report['evaluated']} evaluations"
    assert {row["device"] for row in rows} == set(report["devices"]), "a lane's rows are missing"
    print(f"mpirun, {ranks} ranks: {len(rows)} rows, per lane {report['evaluations_per_device']}, chosen {chosen}")


check("out", "run", 4)
check("out2", "run2", 2, ["rank 0, replayed gpu 0", "rank 0, replayed gpu 1", "rank 1, replayed gpu 0",
                          "rank 1, replayed gpu 1"])
PYTHON
