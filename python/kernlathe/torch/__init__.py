"""The shipped kernels as torch custom ops (torch.library.custom_op), each with a fake implementation so that
torch.compile(fullgraph=True) traces a model that uses them without a graph break:

    kernlathe.torch.linear(x, weight, bias=None, residual=None, activation="none")   # nn.Linear layout, W is N x K
    kernlathe.torch.attention(q, k, v, causal=False, scale=None, layout="bhsd")      # GQA: fewer k/v heads
    kernlathe.torch.rms_norm(x, weight, eps=1e-5)
    kernlathe.torch.layer_norm(x, weight, bias=None, eps=1e-5)
    kernlathe.torch.softmax(x)                                                        # over the last dimension
    kernlathe.torch.silu_mul(gate_up)                 # silu(gate) * up: the halves of a fused gate/up projection
    kernlathe.torch.silu_gated_linear(x, weight)      # silu(x W_gate^T) * (x W_up^T) in one GEMM, with
    kernlathe.torch.interleave_gate_up(gate, up)      # the weight this builds once (gated.py)

Every one of them also takes out= (keyword): a contiguous tensor of the output's shape, dtype and device to write
into, not overlapping an input.

The ops are registered as torch.ops.kernlathe.<name>; the functions above call them, except in eager mode on plain
CUDA tensors, where they run the same implementation without the dispatcher (KERNLATHE_TORCH_EAGER_FAST_PATH=0
turns that off). On CUDA tensors each op plans a kernel and a problem from the shapes
(ops.py), the runtime selects a tuned configuration by its ladder and launches it on the current stream. A case no
shipped kernel covers (another dtype, no usable configuration at the shape) is computed by PyTorch and said so by
kernlathe.explain(); set_fallback(False) makes it an error instead. On CPU tensors the ops compute the PyTorch
reference (so opcheck and CPU tests run); forward only (no autograd formula).

The kernels come from kernlathe.Runtime(): the databases and templates installed with the package, or the export
directory named by KERNLATHE_EXPORT; use_runtime() sets another.
"""

from kernlathe.torch.ops import (
    attention,
    layer_norm,
    linear,
    rms_norm,
    runtime,
    set_fallback,
    silu_mul,
    softmax,
    use_runtime,
)
from kernlathe.torch import reference
from kernlathe.torch.gated import interleave_gate_up, silu_gated_linear

__all__ = [
    "attention",
    "interleave_gate_up",
    "layer_norm",
    "linear",
    "reference",
    "rms_norm",
    "runtime",
    "set_fallback",
    "silu_gated_linear",
    "silu_mul",
    "softmax",
    "use_runtime",
]
