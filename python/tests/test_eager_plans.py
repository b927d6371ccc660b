"""The eager path's plans by key (kernlathe/torch/ops.py, _EagerPlans), without a GPU: the CUDA implementations run on
CPU tensors with a test double for the runtime's prepared launch, which records what each call hands the native
launch. The first call with a key plans and prepares, later ones reuse it and launch with their own addresses; a
new shape or dtype plans again, a strided input is copied first; explain() still reports a cached choice; a bad call
raises every time; clearing the runtime's state clears the plans."""

import pytest

torch = pytest.importorskip("torch")

import kernlathe  # noqa: E402
import kernlathe.torch as kt  # noqa: E402
from kernlathe.torch import gated as gated_ops  # noqa: E402
from kernlathe.torch import ops  # noqa: E402

STREAM = 1234


class RecordingLaunch:
    def __init__(self, plan, pointer_names, scalar_names):
        self.plan, self.pointer_names, self.scalar_names = plan, pointer_names, scalar_names
        self.calls = []

    def __call__(self, stream, *values):
        self.calls.append((stream, values))


@pytest.fixture
def prepared(monkeypatch):
    """ops._prepare replaced: every preparation is recorded, and launches go to a RecordingLaunch."""
    made = []
    real_prepare = ops._prepare

    def fake_prepare(plan, device_index, pointer_names, scalar_names):
        if plan.kernel is None:  # PyTorch computes it, or the error without the fallback: no runtime asked
            return real_prepare(plan, device_index, pointer_names, scalar_names)
        launch = RecordingLaunch(plan, list(pointer_names), list(scalar_names))
        made.append(launch)
        return ops._Prepared(launch, ops._choice_for(plan, "kernel", f"test double for {plan.kernel}"))

    monkeypatch.setattr(ops, "_prepare", fake_prepare)
    monkeypatch.setattr(ops, "_current_stream", lambda device_index: STREAM)
    ops._clear_prepared()
    yield made
    ops._clear_prepared()


def rows(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape).to(dtype)


def test_a_second_call_with_the_key_reuses_the_plan_and_launches_with_its_own_addresses(prepared):
    x, weight = rows(4, 64), rows(64)
    first = ops._rms_norm_cuda(x, weight, 1e-5)
    other = rows(4, 64)
    second = ops._rms_norm_cuda(other, weight, 1e-6)
    assert len(prepared) == 1, "the second call prepared again"
    (launch,) = prepared
    assert launch.plan.kernel == "rmsnorm_bf16" and launch.plan.problem == {"ROWS": 4, "COLS": 64}
    assert launch.pointer_names == ["input", "weight", "output"] and launch.scalar_names == ["epsilon"]
    assert launch.calls == [(STREAM, (x.data_ptr(), weight.data_ptr(), first.data_ptr(), 1e-5)),
                            (STREAM, (other.data_ptr(), weight.data_ptr(), second.data_ptr(), 1e-6))]
    assert first.shape == x.shape and first.dtype == x.dtype and first.data_ptr() != second.data_ptr()


def test_the_cached_plan_is_the_uncached_planners(prepared):
    x, weight = rows(3, 5, 96), rows(96)
    ops._rms_norm_cuda(x, weight)
    (entry,) = ops._RMS_NORM.entries.values()
    assert entry.plan == ops.plan_rms_norm(x)
    gate_up = rows(2, 3, 48)
    ops._silu_mul_cuda(gate_up)
    (entry,) = ops._SILU_MUL.entries.values()
    assert entry.plan == ops.plan_silu_mul(gate_up) and entry.shape == (2, 3, 24)
    a, w = rows(6, 32), rows(40, 32)
    ops._linear_cuda(a, w, None, None, "gelu")
    (entry,) = ops._LINEAR.entries.values()
    assert entry.plan == ops.plan_linear(a, w, None, None, "gelu")


def test_another_shape_or_dtype_plans_again(prepared):
    weight = rows(64)
    ops._rms_norm_cuda(rows(4, 64), weight)
    ops._rms_norm_cuda(rows(8, 64), weight)                      # rows differ: another problem
    ops._rms_norm_cuda(rows(2, 4, 64), weight)                   # another shape, the same problem (ROWS = 8)
    ops._rms_norm_cuda(rows(4, 64, dtype=torch.float32), rows(64, dtype=torch.float32))
    assert len(ops._RMS_NORM.entries) == 4
    kernels = [(launch.plan.kernel, launch.plan.problem["ROWS"]) for launch in prepared]
    # (2, 4, 64) has the problem of (8, 64): the prepared launch is shared, only the key's entry is new
    assert kernels == [("rmsnorm_bf16", 4), ("rmsnorm_bf16", 8), ("rmsnorm", 4)]  # f32 kernels have no suffix


def test_a_strided_input_is_copied_before_the_launch(prepared):
    weight = rows(64)
    contiguous = rows(4, 64)
    strided = rows(64, 4).t()                                     # shape (4, 64), strides (1, 4)
    ops._rms_norm_cuda(contiguous, weight)
    ops._rms_norm_cuda(strided, weight)
    (launch,) = prepared
    (_, first), (_, second) = launch.calls
    assert first[0] == contiguous.data_ptr()
    assert second[0] != strided.data_ptr(), "the kernel reads rows as contiguous: a strided view must be copied"


def test_explain_reports_a_choice_made_before_it_collected(prepared):
    x, weight = rows(4, 64), rows(64)
    ops._rms_norm_cuda(x, weight)
    explanation = kernlathe.explain(lambda: ops._rms_norm_cuda(x, weight))
    assert [(choice.op, choice.route, choice.kernel) for choice in explanation] == [
        ("kernlathe::rms_norm", "kernel", "rmsnorm_bf16")]
    assert explanation[0].reason == "test double for rmsnorm_bf16"
    assert explanation[0] in kernlathe.explain()
    assert kernlathe._choices.collectors_active == 0
    assert kernlathe.explain(lambda: None) == []


def test_a_bad_call_raises_every_time_and_is_not_remembered(prepared):
    x = rows(4, 64)
    for _ in range(2):
        with pytest.raises(RuntimeError, match=r"rms_norm: weight must have 64 elements"):
            ops._rms_norm_cuda(x, rows(63))
    with pytest.raises(RuntimeError, match=r"rms_norm: weight is on meta, x on cpu"):
        ops._rms_norm_cuda(x, torch.empty(64, dtype=torch.bfloat16, device="meta"))
    assert not ops._RMS_NORM.entries and not prepared


def test_without_fallback_an_uncovered_dtype_raises_every_time(prepared):
    x = rows(4, 64, dtype=torch.float16)
    kt.set_fallback(False)
    try:
        for _ in range(2):
            with pytest.raises(kernlathe.KernlatheError, match=r"kernlathe::rms_norm: no shipped rmsnorm kernel"):
                ops._rms_norm_cuda(x, rows(64, dtype=torch.float16))
    finally:
        kt.set_fallback(True)
    weight = rows(64, dtype=torch.float16)
    out = ops._rms_norm_cuda(x, weight)   # with the fallback: PyTorch computes it
    torch.testing.assert_close(out, kt.reference.rms_norm(x, weight))
    (entry,) = ops._RMS_NORM.entries.values()
    assert entry.launch is None and entry.in_torch and entry.choice.route == "torch"


def test_clearing_the_runtime_state_clears_the_plans(prepared):
    ops._rms_norm_cuda(rows(4, 64), rows(64))
    assert ops._RMS_NORM.entries
    kt.set_fallback(True)
    assert not ops._RMS_NORM.entries and not ops._prepared


def test_every_op_hands_the_launch_its_buffers_in_order(prepared):
    x, gamma, beta = rows(4, 64), rows(64), rows(64)
    layer = ops._layer_norm_cuda(x, gamma, beta, 1e-5)
    unbiased = ops._layer_norm_cuda(x, gamma, None, 1e-5)
    soft = ops._softmax_cuda(x)
    gate_up = rows(4, 128)
    product = ops._silu_mul_cuda(gate_up)
    a, weight, bias, residual = rows(4, 64), rows(32, 64), rows(32), rows(4, 32)
    fused = ops._linear_cuda(a, weight, bias, residual, "none")
    by_kernel = {launch.plan.kernel: launch for launch in prepared}
    zeros = ops._zeros_of(64, torch.bfloat16, x.device)
    assert by_kernel["layernorm_bf16"].calls == [
        (STREAM, (x.data_ptr(), gamma.data_ptr(), beta.data_ptr(), layer.data_ptr(), 1e-5)),
        (STREAM, (x.data_ptr(), gamma.data_ptr(), zeros.data_ptr(), unbiased.data_ptr(), 1e-5))]
    assert by_kernel["softmax_bf16"].calls == [(STREAM, (x.data_ptr(), soft.data_ptr()))]
    assert by_kernel["silu_mul_bf16"].calls == [(STREAM, (gate_up.data_ptr(), product.data_ptr()))]
    assert product.shape == (4, 64)
    assert by_kernel["gemm_bf16_bias_residual"].pointer_names == ["a", "b", "c", "bias", "residual"]
    assert by_kernel["gemm_bf16_bias_residual"].calls == [
        (STREAM, (a.data_ptr(), weight.data_ptr(), fused.data_ptr(), bias.data_ptr(), residual.data_ptr()))]
    assert fused.shape == (4, 32)
    gated = gated_ops._silu_gated_linear_cuda(a, weight)
    by_kernel = {launch.plan.kernel: launch for launch in prepared}
    assert by_kernel["gemm_bf16_silu_gated"].pointer_names == ["a", "b", "c"]
    assert by_kernel["gemm_bf16_silu_gated"].calls == [(STREAM, (a.data_ptr(), weight.data_ptr(), gated.data_ptr()))]
    assert gated.shape == (4, 16)
    assert by_kernel["gemm_bf16_silu_gated"].plan.problem == {"M": 4, "N": 32, "K": 64, "B_LAYOUT": 1}


def test_the_plain_gemm_adds_the_bias_after_the_launch(prepared):
    a, weight, bias = rows(64, 64), rows(32, 64), rows(32)
    out = ops._linear_cuda(a, weight, bias, None, "none")
    (launch,) = prepared
    assert launch.plan.kernel == "gemm_bf16" and launch.pointer_names == ["a", "b", "c"]
    assert len(launch.calls) == 1 and launch.calls[0][1][2] == out.data_ptr()


def test_few_rows_take_the_decode_gemm_and_others_the_tiled_one(prepared):
    weight = rows(32, 64)
    for count in (1, 7, 32, 33):
        a = rows(count, 64)
        out = ops._linear_cuda(a, weight, None, None, "none")
        launch = prepared[-1]
        expected = "gemm_decode_bf16" if count <= ops._DECODE_ROWS else "gemm_bf16"
        assert launch.plan.kernel == expected, count
        assert launch.pointer_names == (["a", "w", "c"] if expected == "gemm_decode_bf16" else ["a", "b", "c"])
        assert launch.calls[-1][1] == (a.data_ptr(), weight.data_ptr(), out.data_ptr())
    # K not a multiple of 8, or an epilogue the decode path has no spec for: the tiled GEMM.
    ops._linear_cuda(rows(4, 60), rows(32, 60), None, None, "none")
    assert prepared[-1].plan.kernel == "gemm_bf16"
    ops._linear_cuda(rows(4, 64), weight, None, rows(4, 32), "none")
    assert prepared[-1].plan.kernel == "gemm_bf16_bias_residual"


# ---------------------------------------------------------------- out=: the caller's output tensor


def test_out_is_the_buffer_every_op_hands_its_launch(prepared):
    x, gamma, beta = rows(4, 64), rows(64), rows(64)
    a, weight, bias, residual = rows(40, 64), rows(32, 64), rows(32), rows(40, 32)
    outs = {name: torch.empty(shape, dtype=torch.bfloat16)
            for name, shape in (("rms", (4, 64)), ("layer", (4, 64)), ("soft", (4, 64)), ("silu", (4, 32)),
                                ("linear", (40, 32)), ("fused", (40, 32)), ("gated", (40, 16)))}
    assert ops._rms_norm_cuda(x, gamma, 1e-5, outs["rms"]) is outs["rms"]
    assert ops._layer_norm_cuda(x, gamma, beta, 1e-5, outs["layer"]) is outs["layer"]
    assert ops._softmax_cuda(x, outs["soft"]) is outs["soft"]
    assert ops._silu_mul_cuda(x, outs["silu"]) is outs["silu"]
    assert ops._linear_cuda(a, weight, None, None, "none", outs["linear"]) is outs["linear"]
    assert ops._linear_cuda(a, weight, bias, residual, "none", outs["fused"]) is outs["fused"]
    assert gated_ops._silu_gated_linear_cuda(a, weight, outs["gated"]) is outs["gated"]
    by_kernel = {launch.plan.kernel: launch for launch in prepared}
    written = {"rmsnorm_bf16": (2, "rms"), "layernorm_bf16": (3, "layer"), "softmax_bf16": (1, "soft"),
               "silu_mul_bf16": (1, "silu"), "gemm_bf16": (2, "linear"), "gemm_bf16_bias_residual": (2, "fused"),
               "gemm_bf16_silu_gated": (2, "gated")}
    for kernel, (position, name) in written.items():
        ((_stream, values),) = by_kernel[kernel].calls
        assert values[position] == outs[name].data_ptr(), kernel


def test_an_out_of_another_shape_dtype_or_layout_is_refused(prepared):
    x, gamma = rows(4, 64), rows(64)
    for out, what in ((rows(4, 32), r"shape \(4, 64\) on cpu; got torch.bfloat16, shape \(4, 32\)"),
                      (rows(4, 64, dtype=torch.float32), r"got torch.float32"),
                      (rows(64, 4).t(), r"shape \(4, 64\) on cpu, not contiguous")):
        with pytest.raises(RuntimeError, match=r"rms_norm: out must be a contiguous torch.bfloat16 tensor .*" + what):
            ops._rms_norm_cuda(x, gamma, 1e-5, out)
    assert all(not launch.calls for launch in prepared), "a refused out= launched nothing"


def test_an_out_overlapping_an_input_is_refused(prepared):
    x, gamma = rows(4, 64), rows(64)
    with pytest.raises(RuntimeError, match="rms_norm: out overlaps an input"):
        ops._rms_norm_cuda(x, gamma, 1e-5, x)  # in place: the kernel would read rows it already wrote
    storage = rows(5, 64)
    with pytest.raises(RuntimeError, match="softmax: out overlaps an input"):
        ops._softmax_cuda(storage[:4], storage[1:])  # shifted by one row
    gate_up = rows(4, 128)
    with pytest.raises(RuntimeError, match="silu_mul: out overlaps an input"):
        ops._silu_mul_cuda(gate_up, gate_up.view(-1)[:256].view(4, 64))
    assert all(not launch.calls for launch in prepared)
    # Neighbours in one storage that do not overlap are fine.
    ops._softmax_cuda(storage[:2], storage[2:4])


def test_through_the_dispatcher_out_receives_a_copy_of_the_result():
    # CPU tensors take the op through torch.ops.kernlathe (the reference): out= is filled and returned.
    x, gamma = rows(4, 64), rows(64)
    out = torch.empty(4, 64, dtype=torch.bfloat16)
    assert kt.rms_norm(x, gamma, 1e-5, out=out) is out
    torch.testing.assert_close(out, kt.reference.rms_norm(x, gamma, 1e-5))
    logits = torch.randn(3, 10)
    into = torch.empty(3, 10)
    assert kt.softmax(logits, out=into) is into
    torch.testing.assert_close(into, torch.softmax(logits, dim=-1))
    with pytest.raises(RuntimeError, match=r"linear: out must be a contiguous torch.float32 tensor of shape \(2, 3\)"):
        kt.linear(torch.randn(2, 5), torch.randn(3, 5), out=torch.empty(3, 2))
