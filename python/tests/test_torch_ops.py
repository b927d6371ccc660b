"""kernlathe.torch on the CPU: every op's fake implementation gives the real output's shape and dtype, opcheck
passes (on CPU the ops compute the PyTorch reference), torch.compile(fullgraph=True) traces a block with no graph
break, bad shapes are named, and explain() says how each op was chosen, planned on a device profile."""

import pytest

torch = pytest.importorskip("torch")

import kernlathe  # noqa: E402
import kernlathe.torch as kt  # noqa: E402
from kernlathe.torch import reference  # noqa: E402

DTYPES = [torch.bfloat16, torch.float32]


def make(*shape, dtype=torch.bfloat16, device="cpu", seed=0):
    generator = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=generator, dtype=torch.float32).to(dtype=dtype, device=device)


def op_cases(dtype, device="cpu"):
    """(op, args, kwargs, expected shape) for every op, at ragged shapes."""
    x = make(3, 5, 24, dtype=dtype, device=device)
    weight = make(40, 24, dtype=dtype, device=device, seed=1)
    bias = make(40, dtype=dtype, device=device, seed=2)
    residual = make(3, 5, 40, dtype=dtype, device=device, seed=3)
    q = make(2, 8, 7, 16, dtype=dtype, device=device, seed=4)
    k = make(2, 2, 7, 16, dtype=dtype, device=device, seed=5)
    v = make(2, 2, 7, 16, dtype=dtype, device=device, seed=6)
    rows = make(7, 33, dtype=dtype, device=device, seed=7)
    gamma = make(33, dtype=dtype, device=device, seed=8)
    beta = make(33, dtype=dtype, device=device, seed=9)
    return [
        (torch.ops.kernlathe.linear, (x, weight), {}, (3, 5, 40)),
        (torch.ops.kernlathe.linear, (x, weight, bias, None, "gelu"), {}, (3, 5, 40)),
        (torch.ops.kernlathe.linear, (x, weight, bias, residual, "none"), {}, (3, 5, 40)),
        (torch.ops.kernlathe.attention, (q, k, v, True, None, "bhsd"), {}, (2, 8, 7, 16)),
        (torch.ops.kernlathe.attention, (q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(),
                                         v.transpose(1, 2).contiguous(), False, 0.3, "bshd"), {}, (2, 7, 8, 16)),
        (torch.ops.kernlathe.rms_norm, (rows, gamma, 1e-5), {}, (7, 33)),
        (torch.ops.kernlathe.layer_norm, (rows, gamma, beta, 1e-5), {}, (7, 33)),
        (torch.ops.kernlathe.softmax, (rows,), {}, (7, 33)),
        (torch.ops.kernlathe.silu_mul, (make(3, 5, 48, dtype=dtype, device=device, seed=10),), {}, (3, 5, 24)),
        (torch.ops.kernlathe.silu_gated_linear, (x, make(48, 24, dtype=dtype, device=device, seed=17)), {}, (3, 5, 24)),
    ]


def case_id(case):
    return case[0].__name__ if hasattr(case[0], "__name__") else str(case[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_fake_shapes_and_dtypes_of_every_op(dtype):
    from torch._subclasses.fake_tensor import FakeTensorMode

    cases = op_cases(dtype)
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        for op, args, kwargs, shape in cases:
            fake_args = [mode.from_tensor(arg) if isinstance(arg, torch.Tensor) else arg for arg in args]
            out = op(*fake_args, **kwargs)
            assert tuple(out.shape) == shape, op
            assert out.dtype == dtype, op
            assert out.is_contiguous(), op


@pytest.mark.parametrize("dtype", DTYPES)
def test_meta_tensors_take_the_fake_implementation(dtype):
    for op, args, kwargs, shape in op_cases(dtype, device="meta"):
        out = op(*args, **kwargs)
        assert out.device.type == "meta" and tuple(out.shape) == shape and out.dtype == dtype


@pytest.mark.parametrize("case", range(10))
def test_opcheck_on_cpu(case):
    op, args, kwargs, _shape = op_cases(torch.float32)[case]
    torch.library.opcheck(op, args, kwargs)


def test_cpu_results_are_the_reference():
    cases = op_cases(torch.float32)
    x, weight, bias = cases[1][1][:3]
    torch.testing.assert_close(kt.linear(x, weight, bias, None, "gelu"),
                               torch.nn.functional.gelu(torch.nn.functional.linear(x, weight, bias)))
    q, k, v = cases[3][1][:3]
    expected = torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1),
                                                                is_causal=True)
    torch.testing.assert_close(kt.attention(q, k, v, causal=True), expected)
    rows, gamma, beta = cases[6][1][:3]
    torch.testing.assert_close(kt.layer_norm(rows, gamma, beta), torch.nn.functional.layer_norm(rows, (33,), gamma, beta))
    torch.testing.assert_close(kt.softmax(rows), torch.softmax(rows, -1))
    torch.testing.assert_close(kt.rms_norm(rows, gamma), torch.nn.functional.rms_norm(rows, (33,), gamma, 1e-5))
    gate_up = cases[8][1][0]
    torch.testing.assert_close(kt.silu_mul(gate_up),
                               torch.nn.functional.silu(gate_up[..., :24]) * gate_up[..., 24:])
    # The gated GEMM's weight interleaves the two projections row by row; the op is the MLP's first half.
    x = cases[0][1][0]
    gate, up = make(24, 24, dtype=torch.float32, seed=18), make(24, 24, dtype=torch.float32, seed=19)
    weight = kt.interleave_gate_up(gate, up)
    assert torch.equal(weight[0::2], gate) and torch.equal(weight[1::2], up)
    assert torch.equal(kt.interleave_gate_up(torch.cat((gate, up))), weight)
    torch.testing.assert_close(kt.silu_gated_linear(x, weight),
                               torch.nn.functional.silu(x @ gate.t()) * (x @ up.t()))


def test_bad_shapes_are_named():
    x = make(4, 24)
    with pytest.raises(RuntimeError, match=r"x has 24 features, weight expects 16"):
        kt.linear(x, make(40, 16))
    with pytest.raises(RuntimeError, match=r"activation must be 'none' or 'gelu'"):
        kt.linear(x, make(40, 24), activation="relu")
    with pytest.raises(RuntimeError, match=r"8 query heads are not a multiple of 3 K/V heads"):
        kt.attention(make(1, 8, 4, 16), make(1, 3, 4, 16), make(1, 3, 4, 16))
    with pytest.raises(RuntimeError, match=r"weight must have 24 elements"):
        kt.rms_norm(x, make(23))
    with pytest.raises(RuntimeError, match=r"weight has 47 rows; gate and up rows come in pairs"):
        kt.silu_gated_linear(x, make(47, 24))
    with pytest.raises(RuntimeError, match=r"gate \(24, 24\) and up \(23, 24\) must both be I x K"):
        kt.interleave_gate_up(make(24, 24), make(23, 24))


class Block(torch.nn.Module):
    """A pre-norm transformer block of the kernlathe ops: what torch.compile must trace whole."""

    def __init__(self, hidden=32, heads=4, kv_heads=2, dtype=torch.float32, device="cpu"):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.norm = torch.nn.Parameter(make(hidden, dtype=dtype, device=device, seed=11))
        self.qkv = torch.nn.Parameter(make((heads + 2 * kv_heads) * self.head_dim, hidden, dtype=dtype, device=device,
                                           seed=12) * 0.1)
        self.out = torch.nn.Parameter(make(hidden, hidden, dtype=dtype, device=device, seed=13) * 0.1)
        self.up = torch.nn.Parameter(make(2 * hidden, hidden, dtype=dtype, device=device, seed=14) * 0.1)
        self.up_bias = torch.nn.Parameter(make(2 * hidden, dtype=dtype, device=device, seed=15))
        self.down = torch.nn.Parameter(make(hidden, 2 * hidden, dtype=dtype, device=device, seed=16) * 0.1)

    def forward(self, x):
        batch, sequence, hidden = x.shape
        qkv = kt.linear(kt.rms_norm(x, self.norm), self.qkv)
        q, k, v = qkv.split([self.heads * self.head_dim, self.kv_heads * self.head_dim,
                             self.kv_heads * self.head_dim], dim=-1)
        q = q.reshape(batch, sequence, self.heads, self.head_dim)
        k = k.reshape(batch, sequence, self.kv_heads, self.head_dim)
        v = v.reshape(batch, sequence, self.kv_heads, self.head_dim)
        attended = kt.attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True, layout="bshd")
        x = kt.linear(attended.reshape(batch, sequence, hidden), self.out, None, x)
        hidden_states = kt.linear(kt.layer_norm(x, self.norm), self.up, self.up_bias, None, "gelu")
        return kt.softmax(kt.linear(hidden_states, self.down, None, x))


def test_torch_compile_fullgraph_traces_a_block_with_no_graph_break():
    torch._dynamo.reset()
    block = Block().requires_grad_(False)  # inference: the ops have no autograd formula
    x = make(2, 6, 32, dtype=torch.float32)
    expected = block(x)
    explanation = torch._dynamo.explain(block)(x)
    assert explanation.graph_break_count == 0
    assert explanation.graph_count == 1
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), expected)


def test_explain_on_cpu_says_pytorch_computed_it():
    x = make(5, 24, dtype=torch.float32)
    explanation = kernlathe.explain(lambda: kt.softmax(x))
    assert len(explanation) == 1
    assert explanation[0].op == "kernlathe::softmax"
    assert explanation[0].route == "torch"
    assert "CPU tensors" in explanation[0].reason
    assert explanation[0] in kernlathe.explain()


@pytest.fixture
def planted_runtime(softmax_database_dir):
    kt.use_runtime(kernlathe.Runtime(softmax_database_dir))
    yield
    kt.use_runtime(None)


def test_explain_plans_on_a_device_profile(planted_runtime):
    def model(x, y, weight):
        return kt.softmax(x), kt.softmax(y), kt.rms_norm(y, weight)

    x = torch.empty(4096, 4096, dtype=torch.bfloat16)
    y = torch.empty(1000, 4098, dtype=torch.bfloat16)
    explanation = kernlathe.explain(model, x, y, torch.empty(4098, dtype=torch.bfloat16), device="NVIDIA H200")
    tuned, ragged, norm = explanation
    assert (tuned.route, tuned.kernel, tuned.rung) == ("planned", "softmax_bf16", "exact")
    assert tuned.problem == {"ROWS": 4096, "COLS": 4096, "ELEMENT_BYTES": 2}
    assert tuned.configuration["VEC"] == 8
    assert tuned.device == "NVIDIA H200"
    # 4098 columns: the tuned VEC = 8 breaks COLS % VEC == 0; the default configuration (VEC = 1) runs.
    assert (ragged.route, ragged.rung) == ("planned", "default configuration")
    assert ragged.configuration["VEC"] == 1
    assert "unusable" in ragged.reason
    # No database in this runtime knows rmsnorm_bf16: PyTorch would compute it, and the line says why.
    assert norm.route == "torch" and norm.kernel == "rmsnorm_bf16"
    assert "no database knows the kernel 'rmsnorm_bf16'" in norm.reason
    assert "softmax_bf16(ROWS=4096,COLS=4096" in str(explanation)


def test_explain_plans_attention_passing_the_problem_through():
    q = torch.empty(2, 4096, 32, 128, dtype=torch.bfloat16)
    kv = torch.empty(2, 4096, 8, 128, dtype=torch.bfloat16)
    explanation = kernlathe.explain(kt.attention, q, kv, kv, True, None, "bshd", arch="sm_90")
    (choice,) = explanation
    assert choice.kernel == "attention_bf16"
    assert choice.problem["BATCH"] == 2 and choice.problem["HEADS"] == 32 and choice.problem["SEQ"] == 4096
    assert choice.problem["CAUSAL"] == 1
    symbols = kernlathe.Runtime().problem_symbols("attention_bf16")
    if "KV_HEADS" in symbols:
        assert choice.problem["KV_HEADS"] == 8
    else:
        assert "K/V heads repeated 4x" in choice.reason
    assert choice.route in ("planned", "torch")


# ---------------------------------------------------------------- attention on views into a fused QKV output

ATTENTION_SYMBOLS = ["BATCH", "HEADS", "KV_HEADS", "SEQ", "CACHED", "HEAD_DIM", "CAUSAL", "LAYOUT", "ELEMENT_BYTES",
                     "Q_ROW_STRIDE", "KV_ROW_STRIDE"]


@pytest.fixture
def attention_launches(monkeypatch):
    """The CUDA implementation of attention run on CPU tensors with the prepared launch replaced by a test double:
    each call's plan and the addresses that would reach the kernel (q, k, v, o) are recorded instead."""
    from kernlathe.torch import ops

    launches = []

    def fake_prepare(plan, device_index, pointer_names, scalar_names):
        def launch(stream, *values):
            launches.append((plan, dict(zip(pointer_names, values))))

        return ops._Prepared(launch, ops._choice_for(plan, "kernel", f"test double for {plan.kernel}"))

    monkeypatch.setattr(ops, "_problem_symbols", lambda device_index, kernel: ATTENTION_SYMBOLS)
    monkeypatch.setattr(ops, "_prepare", fake_prepare)
    monkeypatch.setattr(ops, "_current_stream", lambda device_index: 0)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    ops._clear_prepared()
    yield lambda q, k, v: (ops._attention_cuda(q, k, v, True, None, "bshd"), launches[-1])
    ops._clear_prepared()


def fused_qkv(batch=2, sequence=10, heads=4, kv_heads=2, head_dim=16, padding=0):
    """q, k and v sliced from one (batch, sequence, (heads + 2 kv_heads) head_dim + padding) tensor, as a model's fused
    QKV projection writes them."""
    qkv = make(batch, sequence, (heads + 2 * kv_heads) * head_dim + padding)
    q_end, k_end = heads * head_dim, (heads + kv_heads) * head_dim
    q = qkv[..., :q_end].unflatten(-1, (heads, head_dim))
    k = qkv[..., q_end:k_end].unflatten(-1, (kv_heads, head_dim))
    v = qkv[..., k_end:k_end + kv_heads * head_dim].unflatten(-1, (kv_heads, head_dim))
    return q, k, v


def test_fused_qkv_views_reach_the_kernel_uncopied_with_their_row_strides(attention_launches):
    q, k, v = fused_qkv()  # rows of (4 + 2 + 2) x 16 = 128 elements
    out, (plan, buffers) = attention_launches(q, k, v)
    assert plan.problem["Q_ROW_STRIDE"] == 128 and plan.problem["KV_ROW_STRIDE"] == 128
    assert plan.problem["LAYOUT"] == 1 and plan.problem["KV_HEADS"] == 2
    for name, view in (("q", q), ("k", k), ("v", v)):
        assert buffers[name] == view.data_ptr(), name
    assert "copied" not in plan.note
    # O is packed whatever the inputs' layout.
    assert buffers["o"] == out.data_ptr() and out.is_contiguous() and out.shape == q.shape


def test_packed_tensors_keep_the_problem_they_had_before_strides(attention_launches):
    q, k, v = (tensor.contiguous() for tensor in fused_qkv())
    _out, (plan, buffers) = attention_launches(q, k, v)
    assert "Q_ROW_STRIDE" not in plan.problem and "KV_ROW_STRIDE" not in plan.problem
    assert buffers["q"] == q.data_ptr() and buffers["v"] == v.data_ptr()
    assert plan.note == ""


def test_views_and_packed_tensors_of_one_shape_get_their_own_plans(attention_launches):
    # The eager path caches plans by key: the strides must be part of it, or a packed call after a view call of the
    # same shapes would launch with the view's row strides.
    views = fused_qkv()
    _out, (view_plan, _buffers) = attention_launches(*views)
    packed = [tensor.contiguous() for tensor in views]
    _out, (packed_plan, buffers) = attention_launches(*packed)
    assert view_plan.problem["Q_ROW_STRIDE"] == 128
    assert "Q_ROW_STRIDE" not in packed_plan.problem and "KV_ROW_STRIDE" not in packed_plan.problem
    assert buffers["q"] == packed[0].data_ptr()


@pytest.mark.parametrize("why", ["rows not a multiple of 8 elements", "heads not head_dim apart",
                                 "last dimension not contiguous"])
def test_views_the_kernel_cannot_read_are_copied_to_packed_tensors(attention_launches, why):
    if why == "rows not a multiple of 8 elements":
        q, k, v = fused_qkv(padding=4)  # rows of 132 elements
    elif why == "heads not head_dim apart":
        # BHSD storage seen as BSHD: heads a whole sequence apart.
        q, k, v = (tensor.transpose(1, 2).contiguous().transpose(1, 2) for tensor in fused_qkv())
    else:
        q, k, v = (make(*tensor.shape[:-1], 2 * tensor.shape[-1])[..., ::2] for tensor in fused_qkv())
    _out, (plan, buffers) = attention_launches(q, k, v)
    assert "Q_ROW_STRIDE" not in plan.problem and "KV_ROW_STRIDE" not in plan.problem
    for name, view in (("q", q), ("k", k), ("v", v)):
        assert buffers[name] != view.data_ptr(), name  # a packed copy reached the kernel
    assert "q, k, v copied to packed tensors (PyTorch)" in plan.note


def test_k_and_v_with_different_row_strides_are_both_packed(attention_launches):
    q, k, _v = fused_qkv()
    v = k.contiguous()  # packed rows of 32 elements against k's 128
    _out, (plan, buffers) = attention_launches(q, k, v)
    assert plan.problem["Q_ROW_STRIDE"] == 128 and "KV_ROW_STRIDE" not in plan.problem
    assert buffers["q"] == q.data_ptr()
    assert buffers["k"] != k.data_ptr()  # copied
    assert buffers["v"] == v.data_ptr()  # already packed: no copy
    assert plan.note == "k copied to packed tensors (PyTorch)"


def test_a_spec_without_row_strides_copies_the_views(attention_launches, monkeypatch):
    from kernlathe.torch import ops

    monkeypatch.setattr(ops, "_problem_symbols", lambda device_index, kernel: ATTENTION_SYMBOLS[:-2])
    q, k, v = fused_qkv()
    _out, (plan, buffers) = attention_launches(q, k, v)
    assert "Q_ROW_STRIDE" not in plan.problem
    assert all(buffers[name] != view.data_ptr() for name, view in (("q", q), ("k", k), ("v", v)))


def test_views_keep_their_strides_in_the_fake_and_the_plan(monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode
    from kernlathe.torch import ops

    monkeypatch.setattr(ops, "_problem_symbols", lambda device_index, kernel: ATTENTION_SYMBOLS)
    q, k, v = fused_qkv()
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(tensor) for tensor in (q, k, v)]
        out = torch.ops.kernlathe.attention(*fake, True, None, "bshd")
        assert tuple(out.shape) == tuple(q.shape) and out.is_contiguous()
        plan = ops.plan_attention(*fake, True, "bshd", 0)
    assert plan.problem["Q_ROW_STRIDE"] == 128 and plan.problem["KV_ROW_STRIDE"] == 128
