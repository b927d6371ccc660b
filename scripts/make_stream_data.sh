#!/usr/bin/env bash
# Writes the datasets of the streamed examples (kernels/*stream*.yaml) once, as .npy shards of many items each, under
# ${KERNLATHE_STREAM_DATA:-/tmp/kernlathe-stream} (outside the repository: ~2 GiB). Deterministic: the same seed gives the
# same bytes, so results and references compare across runs. An existing complete dataset is kept.
#   scripts/make_stream_data.sh [small|large|heavy|all]      (default all)
# Needs python3 with NumPy.
set -euo pipefail
root="${KERNLATHE_STREAM_DATA:-/tmp/kernlathe-stream}"
which="${1:-all}"
python3 - "$root" "$which" <<'PY'
import os, sys
try:
    import numpy as np
except ImportError:
    sys.exit("make_stream_data.sh needs NumPy: pip install numpy")

root, which = sys.argv[1], sys.argv[2]
# name: (folder, file prefix, shards, items per shard, item shape, seed) -- must match the specs' problem sizes.
datasets = {
    "small": ("conv3x3_small", "images", 32, 1024, (64, 64), 7),       # 32768 images of 64x64 (512 MiB)
    "large": ("conv3x3_large", "images", 16, 4, (2048, 2048), 9),      # 64 images of 2048x2048 (1 GiB)
    "heavy": ("stream_heavy", "items", 16, 128, (256, 256), 11),       # 2048 items of 256x256 (512 MiB)
}
for name, (folder, prefix, shards, per_shard, shape, seed) in datasets.items():
    if which not in ("all", name):
        continue
    directory = os.path.join(root, folder)
    os.makedirs(directory, exist_ok=True)
    expected_bytes = per_shard * int(np.prod(shape)) * 4
    for shard in range(shards):
        path = os.path.join(directory, f"{prefix}_{shard:03d}.npy")
        if os.path.exists(path) and os.path.getsize(path) >= expected_bytes:
            continue
        generator = np.random.default_rng([seed, shard])
        data = generator.uniform(-1.0, 1.0, size=(per_shard, *shape)).astype(np.float32)
        # Written under another name first, so a killed run never leaves a short file the glob would match.
        with open(path + ".partial", "wb") as stream:
            np.save(stream, data)
        os.replace(path + ".partial", path)
    print(f"{name}: {shards * per_shard} items of {shape} float32 in {directory}", file=sys.stderr)
PY
