#!/usr/bin/env bash
# `tune sweep` under Open MPI's mpirun: four ranks on this machine, no GPU visible (CUDA_VISIBLE_DEVICES is empty,
# so the check is the same on a GPU host). Rank 0 deals the problems: each rank is dealt one, finds no GPU and gives
# it back, and takes no more. The check reads every rank's output and the state: every rank exits 3, rank 0 heard
# each rank's missing GPU once, the problems tried came first in workload order (the last two never started), each
# on the GPU of its rank's local rank, and rank 0 alone printed the summary, of all six problems. (Sweeps over ranks that tune: tests/cli_sweep_command_test.cpp, SweepOverRanks.)
# Usage: tests/cli_sweep_mpirun_check.sh <tune binary> <source dir> <mpirun>
set -euo pipefail
tune=$1
source_dir=$2
mpirun=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mpirun refuses root unless told; containers often lack the ptrace rights of the single-copy transport.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$source_dir"
cat > "$work/workload.yaml" <<'YAML'
workload: mpirun-check
tasks:
  - spec: saxpy
    sweep: {N: [1024, 2048, 4096, 8192, 16384, 32768]}
YAML
status=0
CUDA_VISIBLE_DEVICES= "$mpirun" --oversubscribe -n 4 --mca btl self,vader --mca btl_vader_single_copy_mechanism none \
  -x CUDA_VISIBLE_DEVICES --output-filename "$work/out" \
  "$tune" sweep "$work/workload.yaml" --out "$work/sweep" --json > /dev/null 2> "$work/mpirun.log" || status=$?
if [[ $status -ne 3 ]]; then
  echo "mpirun exited $status, expected 3 (no GPU on any rank)" >&2
  cat "$work/mpirun.log" "$work"/out/*/rank.*/stderr >&2
  exit 1
fi

python3 - "$work" <<'PYTHON'
import glob, json, os, sys
work = sys.argv[1]
stdout = {}
for path in glob.glob(os.path.join(work, "out", "*", "rank.*", "stdout")):
    stdout[int(path.split("rank.")[1].split(os.sep)[0])] = open(path).read()
assert sorted(stdout) == [0, 1, 2, 3], f"outputs of ranks {sorted(stdout)}"
for rank in (1, 2, 3):
    assert stdout[rank] == "", f"rank {rank} printed {stdout[rank]!r}"
summary = json.loads(stdout[0])
labels = [f"{index:02}-saxpy-N={1024 << (index - 1)}" for index in range(1, 7)]
assert [row["problem"] for row in summary["problems"]] == labels, summary
assert all(row["exit"] == 3 for row in summary["problems"]), summary
with open(os.path.join(work, "sweep", "state.json")) as stream:
    state = json.load(stream)["problems"]
# A problem given back is dealt before the next ones: which problems were tried depends on when each rank asked,
# but they come first in workload order, and the last two, with four ranks, were never started.
assert 1 <= len(state) <= 4 and sorted(state) == labels[:len(state)], f"tried {sorted(state)}"
for label, entry in state.items():
    assert entry["status"] == "failed" and entry["exit"] == 3, (label, entry)
    assert entry["devices"] == [entry["rank"]], f"{label}: devices {entry['devices']} on rank {entry['rank']}"
# Rank 0 heard of each rank's missing GPU once: every rank was dealt a problem and took no more.
with open(glob.glob(os.path.join(work, "out", "*", "rank.0", "stderr"))[0]) as stream:
    without_gpu = sorted(int(line.split("rank ")[2].split(" ")[0]) for line in stream if " has no GPU: " in line)
assert without_gpu == [0, 1, 2, 3], f"ranks without a GPU, as rank 0 heard: {without_gpu}"
print(f"mpirun, 4 ranks: each dealt one problem, {len(state)} problems tried, every rank exit 3, rank 0's summary "
      f"of {len(labels)}")
PYTHON
