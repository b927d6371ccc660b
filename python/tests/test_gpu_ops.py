"""On a GPU (marked gpu; skipped elsewhere): every op against its PyTorch reference at ragged shapes, the runtime's
launch from torch tensors and CuPy arrays on the current stream, and torch.compile(fullgraph=True) of a block."""

import pytest

torch = pytest.importorskip("torch")

import kernlathe  # noqa: E402
import kernlathe.torch as kt  # noqa: E402
from kernlathe.torch import reference  # noqa: E402

pytestmark = pytest.mark.gpu

# bf16 keeps 8 bits of mantissa: one rounding of the output is 2^-8 relative; K-long sums in fp32 add little more.
TOLERANCE = {torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float32: dict(rtol=1e-4, atol=1e-4)}


def make(*shape, dtype=torch.bfloat16, scale=1.0, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=generator, device="cuda") * scale).to(dtype)


def routes(explanation):
    return {choice.op: choice.route for choice in explanation}


@pytest.mark.parametrize("rows", [1, 77, 1000, 4096])
@pytest.mark.parametrize("epilogue", ["none", "bias", "gelu", "residual", "bias_residual", "gelu_residual"])
def test_linear_against_reference(rows, epilogue):
    k, n = 1024, 768 + 64
    x = make(rows, k, seed=1)
    weight = make(n, k, scale=k ** -0.5, seed=2)
    bias = make(n, seed=3) if "bias" in epilogue or "gelu" in epilogue else None
    residual = make(rows, n, seed=4) if "residual" in epilogue else None
    activation = "gelu" if "gelu" in epilogue else "none"
    explanation = kernlathe.explain(kt.linear, x, weight, bias, residual, activation)
    out = kt.linear(x, weight, bias, residual, activation)
    torch.testing.assert_close(out, reference.linear(x, weight, bias, residual, activation), **TOLERANCE[torch.bfloat16])
    assert explanation[0].op == "kernlathe::linear"


def test_linear_takes_a_tuned_kernel_at_a_llama_shape():
    x = make(4096, 4096, seed=5)
    weight = make(6144, 4096, scale=4096 ** -0.5, seed=6)
    explanation = kernlathe.explain(kt.linear, x, weight)
    assert routes(explanation) == {"kernlathe::linear": "kernel"}, str(explanation)
    assert explanation[0].kernel == "gemm_bf16"
    assert explanation[0].problem["B_LAYOUT"] == 1


@pytest.mark.parametrize("batch,heads,kv_heads,sequence,causal", [
    (1, 8, 8, 512, False), (2, 8, 2, 1024, True), (1, 4, 4, 1000, True), (3, 32, 8, 128, True)])
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_attention_against_reference(batch, heads, kv_heads, sequence, causal, layout):
    def shaped(count, seed):
        if layout == "bhsd":
            return make(batch, count, sequence, 128, seed=seed)
        return make(batch, sequence, count, 128, seed=seed)

    q, k, v = shaped(heads, 7), shaped(kv_heads, 8), shaped(kv_heads, 9)
    out = kt.attention(q, k, v, causal=causal, layout=layout)
    torch.testing.assert_close(out, reference.attention(q, k, v, causal, None, layout), **TOLERANCE[torch.bfloat16])
    assert out.shape == q.shape


@pytest.mark.parametrize("head_dim", [64, 96])
def test_attention_at_other_head_dimensions(head_dim):
    # Head dimension 96 runs on the wgmma path as 128 columns, the last 32 zeros the kernel never stores (issue 33).
    q = make(2, 1000, 8, head_dim, seed=24)
    k, v = make(2, 1000, 2, head_dim, seed=25), make(2, 1000, 2, head_dim, seed=26)
    explanation = kernlathe.explain(kt.attention, q, k, v, True, None, "bshd")
    out = kt.attention(q, k, v, causal=True, layout="bshd")
    torch.testing.assert_close(out, reference.attention(q, k, v, True, None, "bshd"), **TOLERANCE[torch.bfloat16])
    assert (explanation[0].route, explanation[0].kernel) == ("kernel", "attention_bf16"), explanation[0]


@pytest.mark.parametrize("sequence", [1000, 63])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_on_views_into_a_fused_qkv_projection(sequence, causal):
    # Llama-3-8B (issue 33): one (batch, sequence, 48 x 128) output of the fused QKV projection, q its first 32 heads,
    # k and v 8 each; the op reads the views in place, rows 6144 elements apart.
    batch, heads, kv_heads, head_dim = 2, 32, 8, 128
    qkv = make(batch, sequence, (heads + 2 * kv_heads) * head_dim, seed=19)
    q, k, v = qkv.split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
    q, k, v = (tensor.unflatten(-1, (-1, head_dim)) for tensor in (q, k, v))
    explanation = kernlathe.explain(kt.attention, q, k, v, causal, None, "bshd")
    out = kt.attention(q, k, v, causal=causal, layout="bshd")
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal, enable_gqa=True).transpose(1, 2)
    assert out.shape == q.shape and out.is_contiguous()
    torch.testing.assert_close(out, expected, **TOLERANCE[torch.bfloat16])
    (choice,) = explanation
    if choice.route == "kernel" and "Q_ROW_STRIDE" in kernlathe.Runtime().problem_symbols(choice.kernel):
        assert choice.problem["Q_ROW_STRIDE"] == 6144 and choice.problem["KV_ROW_STRIDE"] == 6144, str(explanation)
        assert "copied" not in choice.reason, str(explanation)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("rows,columns", [(1, 4096), (1000, 4096), (4096, 1000), (333, 8192)])
def test_row_ops_against_reference(dtype, rows, columns):
    x = make(rows, columns, dtype=dtype, seed=10)
    weight = make(columns, dtype=dtype, seed=11)
    bias = make(columns, dtype=dtype, seed=12)
    tolerance = TOLERANCE[dtype]
    torch.testing.assert_close(kt.rms_norm(x, weight), reference.rms_norm(x, weight), **tolerance)
    torch.testing.assert_close(kt.layer_norm(x, weight, bias), reference.layer_norm(x, weight, bias), **tolerance)
    torch.testing.assert_close(kt.softmax(x), reference.softmax(x), **tolerance)


@pytest.mark.parametrize("rows,columns", [(1, 14336), (1000, 14336), (4096, 1000), (333, 7)])
def test_silu_mul_against_reference(rows, columns):
    gate_up = make(rows, 2 * columns, seed=18)
    out = kt.silu_mul(gate_up)
    assert out.shape == (rows, columns)
    torch.testing.assert_close(out, reference.silu_mul(gate_up), **TOLERANCE[torch.bfloat16])
    choice = kernlathe.explain(lambda: kt.silu_mul(gate_up))[0]
    assert (choice.route, choice.kernel) == ("kernel", "silu_mul_bf16"), choice


@pytest.mark.parametrize("rows", [1, 77, 1000, 4096])
def test_silu_gated_linear_against_reference(rows):
    k, intermediate = 1024, 1400  # N = 2800: edge tiles at every tile width
    x = make(rows, k, seed=19)
    gate, up = make(intermediate, k, scale=k ** -0.5, seed=20), make(intermediate, k, scale=k ** -0.5, seed=21)
    weight = kt.interleave_gate_up(gate, up)
    out = kt.silu_gated_linear(x, weight)
    assert out.shape == (rows, intermediate)
    torch.testing.assert_close(out, reference.silu_gated_linear(x, weight), **TOLERANCE[torch.bfloat16])
    # The same as the unfused MLP half in PyTorch: silu(x W_gate^T) * (x W_up^T).
    unfused = torch.nn.functional.silu(x.float() @ gate.float().t()) * (x.float() @ up.float().t())
    torch.testing.assert_close(out, unfused.to(torch.bfloat16), **TOLERANCE[torch.bfloat16])
    choice = kernlathe.explain(lambda: kt.silu_gated_linear(x, weight))[0]
    assert (choice.route, choice.kernel) == ("kernel", "gemm_bf16_silu_gated"), choice


def test_silu_gated_linear_takes_its_tuned_entry_at_the_llama_shape():
    x = make(4096, 4096, seed=22)
    weight = make(28672, 4096, scale=4096 ** -0.5, seed=23)
    choice = kernlathe.explain(lambda: kt.silu_gated_linear(x, weight))[0]
    assert (choice.route, choice.kernel) == ("kernel", "gemm_bf16_silu_gated"), choice
    assert "tuned on this device" in choice.reason or "same arch" in choice.reason, choice


def test_ops_run_on_a_side_stream():
    stream = torch.cuda.Stream()
    x = make(1000, 4096, seed=13)
    weight = make(4096, seed=14)
    with torch.cuda.stream(stream):
        out = kt.rms_norm(x, weight)
    stream.synchronize()
    torch.testing.assert_close(out, reference.rms_norm(x, weight), **TOLERANCE[torch.bfloat16])


def test_runtime_launch_from_torch_tensors():
    runtime = kernlathe.Runtime()
    n = 1 << 20
    saxpy = runtime.kernel("saxpy", N=n)
    assert saxpy.selection.rung in ("exact", "same_arch_nearest_problem", "same_arch_any_problem", "same_major_arch",
                                    "problem_default", "default_configuration")
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    expected = 2.5 * x + y
    saxpy.launch(x=x, y=y, a=2.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, expected)


def test_runtime_launch_from_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    runtime = kernlathe.Runtime()
    n = 1 << 16
    saxpy = runtime.kernel("saxpy", N=n)
    x = cupy.random.rand(n, dtype=cupy.float32)
    y = cupy.random.rand(n, dtype=cupy.float32)
    expected = 0.5 * x + y
    saxpy.launch(x=x, y=y, a=0.5)
    cupy.cuda.get_current_stream().synchronize()
    assert float(cupy.abs(y - expected).max()) < 1e-6


def test_runtime_launch_refuses_a_cpu_tensor_on_a_gpu_machine():
    saxpy = kernlathe.Runtime().kernel("saxpy", N=1024)
    with pytest.raises(kernlathe.KernlatheError, match="a torch tensor on cpu"):
        saxpy.launch(x=torch.rand(1024), y=torch.rand(1024, device="cuda"), a=1.0)


def test_torch_compile_fullgraph_of_a_block():
    from test_torch_ops import Block

    torch._dynamo.reset()
    block = Block(hidden=1024, heads=8, kv_heads=2, dtype=torch.bfloat16, device="cuda").requires_grad_(False)
    x = make(2, 256, 1024, seed=15)
    eager = block(x)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x), eager, rtol=3e-2, atol=3e-2)


def test_eager_fast_path_and_dispatched_op_agree():
    x = make(1000, 4096, seed=16)
    weight = make(4096, seed=17)
    fast = kt.rms_norm(x, weight)
    dispatched = torch.ops.kernlathe.rms_norm(x, weight, 1e-5)
    torch.testing.assert_close(fast, dispatched, rtol=0, atol=0)


def test_out_receives_what_the_allocating_call_returns():
    # The eager fast path writes straight into out= (filled with NaN first); the same calls allocating agree (within
    # bf16 tolerance: a GEMM split over K may sum in another order).
    x, gamma, beta = make(77, 4096, seed=1), make(4096, seed=2), make(4096, seed=3)
    weight, bias = make(1024, 4096, scale=4096 ** -0.5, seed=4), make(1024, seed=5)
    q, k, v = make(2, 300, 32, 128, seed=6), make(2, 300, 8, 128, seed=7), make(2, 300, 8, 128, seed=8)
    calls = [
        (kt.rms_norm, (x, gamma, 1e-5)),
        (kt.layer_norm, (x, gamma, beta, 1e-5)),
        (kt.softmax, (x,)),
        (kt.silu_mul, (x,)),
        (kt.linear, (x, weight)),
        (kt.linear, (x, weight, bias, None, "gelu")),
        (kt.linear, (make(5, 4096, seed=9), weight)),  # the decode GEMM
        (kt.attention, (q, k, v, True, None, "bshd")),
        (kt.attention, (q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(),
                        v.transpose(1, 2).contiguous(), False, None, "bhsd")),
    ]
    for op, arguments in calls:
        expected = op(*arguments)
        out = torch.full_like(expected, float("nan"))
        assert op(*arguments, out=out) is out
        torch.testing.assert_close(out, expected, **TOLERANCE[torch.bfloat16], msg=lambda m: f"{op.__name__}: {m}")
    with pytest.raises(RuntimeError, match="rms_norm: out overlaps an input"):
        kt.rms_norm(x, gamma, 1e-5, out=x)


@pytest.mark.parametrize("case", range(9))
def test_opcheck_on_cuda(case):
    from test_torch_ops import op_cases

    op, args, kwargs, _shape = op_cases(torch.bfloat16, device="cuda")[case]
    torch.library.opcheck(op, args, kwargs, test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
