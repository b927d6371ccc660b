"""Shared fixtures: planted databases (written here, as tests/runtime_test_support.h plants them for the C++ tests)
and the `gpu` marker: GPU tests are skipped, with the reason, where torch sees no CUDA device."""

import copy
import json
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU: torch.cuda.is_available() is False")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def tiled_database(entries):
    """A kernel "tiled" as the runtime sees a GEMM: tiles BM of 64 or 128 that must divide M (the C++ tests' planted
    database), with the entries given."""
    return {
        "format": 2,
        "kernel": "tiled",
        "description": {
            "kernel": "tiled", "template": "tiled.cu", "template_hash": "0000000000000000", "spec_hash": "current",
            "entry_point": "tiled", "template_arguments": [], "compile_options": [], "arch_specific": False,
            "problem": [{"name": "M", "default": 4096}, {"name": "N", "default": 4096}, {"name": "K", "default": 4096}],
            "parameters": [{"name": "BM", "type": "integer", "values": [64, 128]}],
            "derived": [], "constraints": ["M % BM == 0"],
            "launch": {"grid": ["M // BM", "1", "1"], "block": ["256", "1", "1"], "shared_memory": "0"},
            "arguments": [{"name": "c", "kind": "buffer", "dtype": "f32", "role": "out", "count": "M * N"}],
            "default_configuration": {"BM": 64}, "default_origin": "space defaults", "loader": {},
        },
        "entries": entries,
    }


def entry(device, arch, problem, configuration, median_ms=1.0, spec_hash="current"):
    return {"device_name": device, "arch": arch, "driver": "580.159.04", "problem": problem,
            "configuration": configuration, "time": {"median_ms": median_ms, "spread": 0.01, "samples": 10},
            "gflops": 0, "gbps": 0, "date": "2026-11-27T00:00:00Z", "spec_hash": spec_hash, "tool_version": "0.1.0"}


@pytest.fixture
def tiled_database_dir(tmp_path):
    entries = [entry("NVIDIA H200", "sm_90", "M=4096,N=4096,K=4096", {"BM": 128}, median_ms=0.5),
               entry("NVIDIA H200", "sm_90", "M=8192,N=4096,K=4096", {"BM": 128}, median_ms=1.0, spec_hash="older")]
    (tmp_path / "tiled.json").write_text(json.dumps(tiled_database(entries)))
    return tmp_path


@pytest.fixture
def softmax_database_dir(tmp_path):
    """softmax_bf16's shipped description with hand-written entries: VEC=8 tuned at 4096 x 4096 on an H200."""
    shipped = json.loads((REPOSITORY / "results/best/softmax_bf16.json").read_text())
    database = copy.deepcopy(shipped)
    spec_hash = database["description"]["spec_hash"]
    tuned = {"CACHE_ROW": False, "ROWS_PER_BLOCK": 2, "ROW_THREADS": 128, "UNROLL": 2, "VEC": 8}
    database["entries"] = [entry("NVIDIA H200", "sm_90", "ROWS=4096,COLS=4096,ELEMENT_BYTES=2", tuned,
                                 spec_hash=spec_hash)]
    directory = tmp_path / "database"
    directory.mkdir()
    (directory / "softmax_bf16.json").write_text(json.dumps(database))
    return directory
