"""kernlathe.Runtime without a GPU: databases load, selection walks the ladder on built-in device profiles with the
rung and the reason of the C++ runtime, and its errors reach Python with the runtime's message."""

import json

import pytest

import kernlathe


def test_package_imports_and_reports_the_library_version():
    assert kernlathe.__version__ == "0.1.0"
    assert "sm_90" in kernlathe.known_archs()
    assert "NVIDIA H200" in kernlathe.known_devices()


def test_runtime_reads_a_database_directory(tiled_database_dir):
    runtime = kernlathe.Runtime(tiled_database_dir)
    assert runtime.kernels() == ["tiled"]
    description = runtime.description("tiled")
    assert description["problem"] == [("M", 4096), ("N", 4096), ("K", 4096)]
    assert description["entries"] == 2
    assert runtime.problem_symbols("tiled") == ["M", "N", "K"]


def test_exact_rung_on_the_tuned_board(tiled_database_dir):
    selection = kernlathe.Runtime(tiled_database_dir).select("tiled", M=4096, N=4096, K=4096, device="NVIDIA H200")
    assert selection.rung == "exact"
    assert selection.configuration == {"BM": 128}
    assert selection.entry["device_name"] == "NVIDIA H200"
    assert selection.entry["median_ms"] == 0.5
    assert selection.device == "NVIDIA H200"
    assert "exact" in str(selection)


def test_another_board_of_the_arch_takes_the_nearest_problem(tiled_database_dir):
    selection = kernlathe.Runtime(tiled_database_dir).select("tiled", M=4096, device="NVIDIA H100 PCIe")
    assert selection.rung == "same_arch_nearest_problem"
    assert selection.configuration == {"BM": 128}
    assert selection.problem == {"M": 4096, "N": 4096, "K": 4096}


def test_another_arch_falls_to_the_default_configuration(tiled_database_dir):
    selection = kernlathe.Runtime(tiled_database_dir).select("tiled", arch="sm_80")
    assert selection.rung == "default_configuration"
    assert selection.configuration == {"BM": 64}
    assert selection.entry is None


def test_an_entry_unusable_at_the_problem_is_passed_over_and_said(tiled_database_dir):
    # 4160 = 65 x 64: BM = 128 breaks M % BM == 0, the default BM = 64 does not.
    selection = kernlathe.Runtime(tiled_database_dir).select("tiled", M=4160, device="NVIDIA H200")
    assert selection.rung == "default_configuration"
    assert selection.configuration == {"BM": 64}
    assert "unusable" in selection.reason


def test_stale_entries_are_skipped_unless_asked_for(tiled_database_dir):
    problem = dict(M=8192, N=4096, K=4096)
    fresh = kernlathe.Runtime(tiled_database_dir).select("tiled", device="NVIDIA H200", **problem)
    assert fresh.rung != "exact"
    assert "stale" in fresh.reason
    stale = kernlathe.Runtime(tiled_database_dir, use_stale_entries=True).select("tiled", device="NVIDIA H200", **problem)
    assert stale.rung == "exact"


def test_no_usable_configuration_raises_the_runtime_message(tiled_database_dir):
    with pytest.raises(kernlathe.KernlatheError) as error:
        kernlathe.Runtime(tiled_database_dir).select("tiled", M=1000, arch="sm_90")
    message = str(error.value)
    assert "no usable configuration" in message
    assert "M=1000" in message
    assert "M % BM == 0" in message
    assert isinstance(error.value, RuntimeError)


def test_unknown_kernel_and_unknown_profile(tiled_database_dir):
    runtime = kernlathe.Runtime(tiled_database_dir)
    with pytest.raises(kernlathe.KernlatheError, match="no database knows the kernel 'gemm'"):
        runtime.select("gemm", arch="sm_90")
    with pytest.raises(ValueError, match="sm_42"):
        runtime.select("tiled", arch="sm_42")
    with pytest.raises(ValueError, match="not sm_80"):
        runtime.select("tiled", arch="sm_80", device="NVIDIA H200")


def test_missing_path_and_corrupt_database(tmp_path):
    with pytest.raises(kernlathe.KernlatheError, match="no such database"):
        kernlathe.Runtime(tmp_path / "absent")
    (tmp_path / "broken.json").write_text("{not json")
    runtime = kernlathe.Runtime(tmp_path)
    assert runtime.kernels() == []
    assert any("broken.json" in warning for warning in runtime.warnings)


def test_export_directory_layout(tmp_path, tiled_database_dir):
    export = tmp_path / "export"
    (export / "database").mkdir(parents=True)
    (export / "database" / "tiled.json").write_text((tiled_database_dir / "tiled.json").read_text())
    runtime = kernlathe.Runtime(export)
    assert runtime.options["sources"] == str(export / "sources")
    assert runtime.options["cubins"] == str(export / "cubins")
    assert runtime.kernels() == ["tiled"]


def test_bundled_databases_cover_the_shipped_kernels():
    runtime = kernlathe.Runtime()
    for kernel in ("gemm_bf16", "gemm_bf16_bias_gelu", "gemm_bf16_bias_residual", "attention_bf16", "rmsnorm_bf16",
                   "layernorm_bf16", "softmax_bf16"):
        assert kernel in runtime.kernels()
    assert (kernlathe.bundled_data() / "sources" / "gemm.cu").is_file()


def test_a_kernel_needs_a_gpu_and_says_so(tiled_database_dir):
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a GPU is present")
    except ImportError:
        pass
    with pytest.raises(kernlathe.KernlatheError):
        kernlathe.Runtime(tiled_database_dir).kernel("tiled", M=4096)
