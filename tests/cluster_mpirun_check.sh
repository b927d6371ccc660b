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
"$mpirun" --oversubscribe -n 4 --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
  --output-filename "$work/out" \
  "$tune" run saxpy --replay results/runs/saxpy/sm_90/N=67108864/evaluations.csv --out "$work/run" --json \
  > /dev/null 2> "$work/mpirun.log" || { cat "$work/mpirun.log" >&2; exit 1; }
python3 - "$work" <<'PYTHON'
import csv, glob, json, os, sys
work = sys.argv[1]
outputs = {}
for path in glob.glob(os.path.join(work, "out", "*", "rank.*", "stdout")):
    rank = int(path.split("rank.")[1].split(os.sep)[0])
    with open(path) as stream:
        outputs[rank] = json.load(stream)
assert sorted(outputs) == [0, 1, 2, 3], f"outputs of ranks {sorted(outputs)}"
report = outputs[0]
chosen = report["chosen"]
assert chosen, "rank 0 chose nothing"
for rank in (1, 2, 3):
    assert outputs[rank]["chosen"] == chosen, f"rank {rank} chose {outputs[rank]['chosen']}, rank 0 {chosen}"
    label = outputs[rank]["label"]
    assert label in report["devices"], f"{label} not among {report['devices']}"
    assert outputs[rank]["measured"] == report["evaluations_per_device"].get(label, 0), label
    assert outputs[rank]["measured"] >= 1, f"{label} measured nothing"
with open(os.path.join(work, "run", "evaluations.csv")) as stream:
    rows = list(csv.DictReader(stream))
parameters = ["BLOCK", "VEC", "ITEMS", "GRID_STRIDE", "BLOCKS_PER_SM"]
keys = [tuple(row[name] for name in parameters) for row in rows]
assert len(keys) == len(set(keys)), "a configuration was recorded twice"
assert len(rows) == report["evaluated"], f"{len(rows)} rows for {report['evaluated']} evaluations"
assert {row["device"] for row in rows} == set(report["devices"]), "a rank's rows are missing"
print(f"mpirun, 4 ranks: {len(rows)} rows, per rank {report['evaluations_per_device']}, chosen {chosen}")
PYTHON

# Two "hosts" of two GPUs: each rank measures on its --devices (on real hosts each rank names its own GPUs).
"$mpirun" --oversubscribe -n 2 --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
  --output-filename "$work/out2" \
  "$tune" run saxpy --replay results/runs/saxpy/sm_90/N=67108864/evaluations.csv --devices 0,1 --out "$work/run2" \
  --json > /dev/null 2> "$work/mpirun2.log" || { cat "$work/mpirun2.log" >&2; exit 1; }
python3 - "$work" <<'PYTHON'
import csv, glob, json, os, sys
work = sys.argv[1]
outputs = {}
for path in glob.glob(os.path.join(work, "out2", "*", "rank.*", "stdout")):
    rank = int(path.split("rank.")[1].split(os.sep)[0])
    with open(path) as stream:
        outputs[rank] = json.load(stream)
assert sorted(outputs) == [0, 1], f"outputs of ranks {sorted(outputs)}"
report = outputs[0]
chosen = report["chosen"]
assert chosen, "rank 0 chose nothing"
expected = ["rank 0, replayed gpu 0", "rank 0, replayed gpu 1", "rank 1, replayed gpu 0", "rank 1, replayed gpu 1"]
assert sorted(report["devices"]) == expected, f"lanes {report['devices']}"
gpus = outputs[1]
assert isinstance(gpus, list) and len(gpus) == 2, f"rank 1 printed {gpus}"
for gpu in gpus:
    assert gpu["chosen"] == chosen, f"{gpu['label']} chose {gpu['chosen']}, rank 0 {chosen}"
    assert gpu["measured"] == report["evaluations_per_device"].get(gpu["label"], 0), gpu["label"]
    assert gpu["measured"] >= 1, f"{gpu['label']} measured nothing"
with open(os.path.join(work, "run2", "evaluations.csv")) as stream:
    rows = list(csv.DictReader(stream))
parameters = ["BLOCK", "VEC", "ITEMS", "GRID_STRIDE", "BLOCKS_PER_SM"]
keys = [tuple(row[name] for name in parameters) for row in rows]
assert len(keys) == len(set(keys)), "a configuration was recorded twice"
assert len(rows) == report["evaluated"], f"{len(rows)} rows for {report['evaluated']} evaluations"
assert {row["device"] for row in rows} == set(expected), "a GPU's rows are missing"
print(f"mpirun, 2 ranks of 2 GPUs: {len(rows)} rows, per GPU {report['evaluations_per_device']}, chosen {chosen}")
PYTHON
