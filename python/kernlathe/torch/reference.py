"""What each kernlathe.torch op computes, in PyTorch: the CPU implementation, the fallback where no shipped kernel
covers a case, and the reference the GPU tests compare with. Reductions and activations in fp32, rounded to the
input's dtype once, as the kernels do."""

import math

import torch
import torch.nn.functional as F


def linear(x, weight, bias=None, residual=None, activation="none"):
    out = torch.matmul(x.float(), weight.float().t())
    if bias is not None:
        out = out + bias.float()
    if activation == "gelu":
        out = F.gelu(out)  # exact (erf) GELU, the GEMM epilogue's (templates/gemm/epilogue.cuh)
    if residual is not None:
        out = out + residual.float()
    return out.to(x.dtype)


def attention(q, k, v, causal=False, scale=None, layout="bhsd"):
    if layout == "bshd":
        q, k, v = (tensor.transpose(1, 2) for tensor in (q, k, v))
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads != heads:
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal, scale=scale).to(q.dtype)
    if layout == "bshd":
        out = out.transpose(1, 2).contiguous()
    return out


def rms_norm(x, weight, eps=1e-5):
    values = x.float()
    normalised = values * torch.rsqrt(values.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normalised * weight.float()).to(x.dtype)


def layer_norm(x, weight, bias=None, eps=1e-5):
    bias = None if bias is None else bias.float()
    return F.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias, eps).to(x.dtype)


def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def silu_mul(gate_up):
    """silu(gate) * up in fp32, rounded once, as the kernel computes it."""
    gate, up = gate_up.float().chunk(2, dim=-1)
    return (F.silu(gate) * up).to(gate_up.dtype)


def silu_gated_linear(x, weight):
    """silu(x W_gate^T) * (x W_up^T) for a weight whose rows interleave the gate's and the up projection's
    (kernlathe.torch.interleave_gate_up), in fp32 and rounded once, as the gated GEMM's epilogue computes it."""
    product = torch.matmul(x.float(), weight.float().t())
    return (F.silu(product[..., 0::2]) * product[..., 1::2]).to(x.dtype)
