"""The gate and up projections of a gated MLP with their SiLU-gated product, in one GEMM (issue 34): the kernel
gemm_bf16_silu_gated (kernels/gemm_bf16_silu_gated.yaml) computes silu(x W_gate^T) * (x W_up^T) from one weight whose
rows interleave the two projections' rows (row 2 j is W_gate's j-th, row 2 j + 1 W_up's), so the projections' product
is never written to memory and no separate silu_mul kernel reads it back. interleave_gate_up builds that weight once
from a model's two weights (or from a fused [gate; up] weight). Planned, prepared and launched as ops.py's ops are."""

import torch

from kernlathe import _choices as _explain
from kernlathe.torch import ops, reference
from kernlathe.torch.ops import (
    Plan,
    _choice_for,
    _Eager,
    _EagerPlans,
    _eager_fast_path,
    _into,
    _kernel_out,
    _prepared_for,
    _record_planned,
    _require,
    _require_one_device,
    _rows_and_columns,
)


def interleave_gate_up(gate, up=None):
    """The weight silu_gated_linear takes: gate (I x K) and up (I x K) as nn.Linear holds them, or one fused (2 I x K)
    weight whose first I rows are the gate projection's, interleaved row by row into 2 I x K (gate, up, gate, up,
    ...). Done once, when a model's weights are loaded."""
    if up is None:
        torch._check(gate.dim() == 2 and gate.shape[0] % 2 == 0,
                     lambda: f"interleave_gate_up: a fused weight must be 2 I x K, got shape {tuple(gate.shape)}")
        gate, up = gate.chunk(2, dim=0)
    torch._check(gate.dim() == 2 and gate.shape == up.shape,
                 lambda: f"interleave_gate_up: gate {tuple(gate.shape)} and up {tuple(up.shape)} must both be I x K")
    return torch.stack((gate, up), dim=1).reshape(2 * gate.shape[0], gate.shape[1])


def _check_silu_gated_linear(x, weight, check=torch._check):
    check(weight.dim() == 2, lambda: f"silu_gated_linear: weight must be 2 I x K, got shape {tuple(weight.shape)}")
    check(weight.shape[0] % 2 == 0,
          lambda: f"silu_gated_linear: weight has {weight.shape[0]} rows; gate and up rows come in pairs "
                  "(interleave_gate_up)")
    check(x.shape[-1] == weight.shape[1],
          lambda: f"silu_gated_linear: x has {x.shape[-1]} features, weight expects {weight.shape[1]}")
    check(weight.dtype == x.dtype, lambda: f"silu_gated_linear: weight is {weight.dtype}, x is {x.dtype}")


def plan_silu_gated_linear(x, weight) -> Plan:
    rows, k = _rows_and_columns(x)
    problem = {"M": rows, "N": weight.shape[0], "K": k, "B_LAYOUT": 1}
    if x.dtype != torch.bfloat16:
        return Plan("silu_gated_linear", None, problem, f"no shipped gated GEMM for {x.dtype}")
    return Plan("silu_gated_linear", "gemm_bf16_silu_gated", problem)


def _output_shape(x, weight):
    return (*x.shape[:-1], weight.shape[0] // 2)


def _build(x, weight):
    _check_silu_gated_linear(x, weight, _require)
    _require_one_device("silu_gated_linear", "x", x, weight=weight)
    plan = plan_silu_gated_linear(x, weight)
    shape = _output_shape(x, weight)
    if 0 in shape or x.shape[-1] == 0:  # nothing to launch: PyTorch fills a non-empty output (K = 0), unrecorded
        return _Eager(plan, None, shape, x, computes=0 not in shape)
    buffers = ("a", "b", "c") if plan.kernel else ()
    return _Eager(plan, _prepared_for(plan, x.get_device(), buffers), shape, x)


_SILU_GATED_LINEAR = _EagerPlans(_build)


def _silu_gated_linear_cuda(x, weight, out=None):
    entry = _SILU_GATED_LINEAR.get((x.shape, x.dtype, x.get_device(), weight.shape, weight.dtype, weight.get_device()),
                                   x, weight)
    # The contiguous copies stay referenced until the launch is queued (see ops._linear_cuda).
    a, b = x.contiguous(), weight.contiguous()
    out = _kernel_out("silu_gated_linear", out, entry.shape, x, a, b)
    if entry.launch is not None:
        entry.launch(ops._current_stream(entry.device_index), a.data_ptr(), b.data_ptr(), out.data_ptr())
    elif entry.in_torch:
        out.copy_(reference.silu_gated_linear(x, weight))
    return out


@torch.library.custom_op("kernlathe::silu_gated_linear", mutates_args=(), device_types="cuda")
def silu_gated_linear_op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return _silu_gated_linear_cuda(x, weight)


def silu_gated_linear(x, weight, *, out=None):
    """silu(x W_gate^T) * (x W_up^T), weight = interleave_gate_up(W_gate, W_up): the output has weight.shape[0] / 2
    features (written into out, a contiguous tensor of that shape not overlapping x or weight, where given)."""
    if _eager_fast_path(x, weight, out):
        return _silu_gated_linear_cuda(x, weight, out)
    return _into("silu_gated_linear", out, silu_gated_linear_op(x, weight))


@silu_gated_linear_op.register_fake
def _silu_gated_linear_fake(x, weight):
    _check_silu_gated_linear(x, weight)
    if _explain.planning() is not None:
        _record_planned(plan_silu_gated_linear(x, weight))
    return x.new_empty(_output_shape(x, weight))


@silu_gated_linear_op.register_kernel("cpu")
def _silu_gated_linear_cpu(x, weight):
    _check_silu_gated_linear(x, weight)
    _explain.record(_choice_for(plan_silu_gated_linear(x, weight), "torch", "PyTorch computes it: CPU tensors"))
    return reference.silu_gated_linear(x, weight)
