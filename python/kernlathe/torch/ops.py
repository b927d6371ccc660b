"""The ops: for each, a plan (which kernel and problem a call's shapes and dtypes map to, or why PyTorch computes
it), the CUDA implementation that launches the planned kernel, the CPU implementation (the PyTorch reference), and
the fake implementation that torch.compile and meta tensors use (shapes and dtypes, checked)."""

import atexit
import os
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
from torch._subclasses.fake_tensor import is_fake as _is_fake

from kernlathe import _choices as _explain
from kernlathe._kernlathe import KernlatheError
from kernlathe.runtime import Runtime
from kernlathe.torch import reference

# ---------------------------------------------------------------- the runtime behind the ops

_runtimes: Dict[int, Runtime] = {}
_runtime_lock = threading.Lock()
_fallback = os.environ.get("KERNLATHE_TORCH_FALLBACK", "1") != "0"


def runtime(device_index: int = 0) -> Runtime:
    """The Runtime the ops launch from on a CUDA device: KERNLATHE_EXPORT's export directory when set, else the
    databases and templates installed with the package."""
    with _runtime_lock:
        found = _runtimes.get(device_index)
        if found is None:
            found = Runtime(os.environ.get("KERNLATHE_EXPORT") or None, device=device_index)
            _runtimes[device_index] = found
        return found


def use_runtime(new_runtime: Optional[Runtime], device_index: int = 0):
    """Makes the ops use new_runtime on a device (None: back to the default). Clears what was prepared."""
    with _runtime_lock:
        if new_runtime is None:
            _runtimes.pop(device_index, None)
        else:
            _runtimes[device_index] = new_runtime
        _clear_prepared()
        _symbols.clear()


@atexit.register
def _release():
    """Drops the runtimes and their kernels before the interpreter tears the extension down."""
    _clear_prepared()
    _runtimes.clear()


def set_fallback(enabled: bool):
    """True (the default): a call no shipped kernel covers is computed by PyTorch, and explain() says why. False: it
    raises the runtime's error instead."""
    global _fallback
    _fallback = bool(enabled)
    _clear_prepared()


_symbols: Dict[Tuple[int, str], Optional[List[str]]] = {}


def _problem_symbols(device_index, kernel):
    """The problem symbols of a kernel's description, or None when no database knows the kernel."""
    key = (device_index, kernel)
    if key not in _symbols:
        try:
            _symbols[key] = runtime(device_index).problem_symbols(kernel)
        except KernlatheError:
            _symbols[key] = None
    return _symbols[key]


# ---------------------------------------------------------------- plans


@dataclass
class Plan:
    op: str
    kernel: Optional[str]          # None: PyTorch computes the call
    problem: Dict[str, int] = field(default_factory=dict)
    note: str = ""                 # what the op does around the kernel, or why PyTorch computes it

    def key(self):
        found = self.__dict__.get("_key")  # computed once: the eager path asks for it on every call
        if found is None:
            found = self._key = (self.op, self.kernel, tuple(sorted(self.problem.items())))
        return found


_DTYPE_SUFFIX = {torch.bfloat16: "_bf16", torch.float16: "_f16", torch.float32: ""}


def _rows_and_columns(x):
    columns = x.shape[-1]
    return (x.numel() // columns if columns else 0), columns


# Up to this many rows a plain bf16 linear takes gemm_decode_bf16 (templates/gemm_decode.cu), which streams the weight
# through every SM, instead of gemm_bf16's 64-row tiles: at 16 tokens of Llama-3-8B's four projections it ran at
# 0.840-1.010 of cuBLAS against 0.736-0.996 for gemm_bf16, each tuned
# (results/linear_workload/2026-11-29-h200-de829a9-decode/linear_workload_m16.txt). Its
# space's declared default is valid up to 32 rows, so the ladder always has a rung there. K must be a multiple of 8.
_DECODE_ROWS = 32


def plan_linear(x, weight, bias, residual, activation) -> Plan:
    rows, k = _rows_and_columns(x)
    n = weight.shape[0]
    problem = {"M": rows, "N": n, "K": k, "B_LAYOUT": 1}
    if x.dtype != torch.bfloat16 and not (x.dtype == torch.float16 and bias is None and residual is None
                                          and activation == "none"):
        return Plan("linear", None, problem, f"no shipped GEMM for {x.dtype} with this epilogue")
    if x.dtype == torch.float16:
        return Plan("linear", "gemm_f16", problem)
    if activation == "gelu":
        note = "then + residual (PyTorch)" if residual is not None else ""
        return Plan("linear", "gemm_bf16_bias_gelu", problem, note)
    if residual is not None:
        return Plan("linear", "gemm_bf16_bias_residual", problem)
    note = "then + bias (PyTorch)" if bias is not None else ""
    if 0 < rows <= _DECODE_ROWS and k % 8 == 0 and _problem_symbols(max(x.get_device(), 0), "gemm_decode_bf16"):
        return Plan("linear", "gemm_decode_bf16", problem, note)
    return Plan("linear", "gemm_bf16", problem, note)


# The TMA unit steps over rows in multiples of 16 bytes: 8 elements of the 16-bit types the attention kernels take.
_ROW_STRIDE_MULTIPLE = 8


def _token_row_stride(tensor):
    """The elements from one token's row to the next of a (batch, sequence, heads, head_dim) tensor, where the attention
    kernel can read it where it lies: the last dimension contiguous, heads head_dim apart, rows a multiple of 8 elements
    apart and at least a row of heads long, batches a whole sequence of rows apart, and the first element 16-byte
    aligned. q, k and v sliced from one fused QKV projection output qualify (issue 33); None where the tensor must be
    copied. A dimension of size 1 may have any stride."""
    batch, sequence, heads, head_dim = tensor.shape
    batch_stride, sequence_stride, head_stride, element_stride = tensor.stride()
    row = sequence_stride if sequence > 1 else (batch_stride // sequence if batch > 1 else heads * head_dim)
    if tensor.device.type == "meta" or _is_fake(tensor):  # no storage to point at: the offset into it
        address = tensor.storage_offset() * tensor.element_size()
    else:
        address = tensor.data_ptr()
    if (head_dim > 1 and element_stride != 1) or (heads > 1 and head_stride != head_dim):
        return None
    if batch > 1 and batch_stride != sequence * row:
        return None
    if row < heads * head_dim or row % _ROW_STRIDE_MULTIPLE != 0 or address % 16 != 0:
        return None
    return row


def _row_strides(q, k, v, heads, kv_heads, head_dim):
    """Q_ROW_STRIDE and KV_ROW_STRIDE for BSHD views the kernel reads in place (k and v alike), each left out where its
    tensors are packed or must be copied: the problem of a packed call stays what it was before strides existed."""
    strides = {}
    q_row = _token_row_stride(q)
    if q_row is not None and q_row != heads * head_dim:
        strides["Q_ROW_STRIDE"] = q_row
    k_row, v_row = _token_row_stride(k), _token_row_stride(v)
    if k_row is not None and k_row == v_row and k_row != kv_heads * head_dim:
        strides["KV_ROW_STRIDE"] = k_row
    return strides


def plan_attention(q, k, v, causal, layout, device_index) -> Plan:
    if layout == "bshd":
        batch, sequence, heads, head_dim = q.shape
        kv_heads = k.shape[2]
    else:
        batch, heads, sequence, head_dim = q.shape
        kv_heads = k.shape[1]
    problem = {"BATCH": batch, "HEADS": heads, "SEQ": sequence, "HEAD_DIM": head_dim, "CAUSAL": int(bool(causal))}
    suffix = _DTYPE_SUFFIX.get(q.dtype)
    if suffix not in ("_bf16", "_f16"):
        return Plan("attention", None, problem, f"no shipped attention kernel for {q.dtype}")
    kernel = "attention" + suffix
    symbols = _problem_symbols(device_index, kernel)
    if symbols is None:
        return Plan("attention", None, problem, f"no database knows {kernel}")
    notes = []
    # The problem is passed through as far as the spec knows it: a spec with KV_HEADS reads grouped K/V heads itself,
    # one with LAYOUT reads BSHD itself; otherwise the op expands or transposes in PyTorch first.
    if kv_heads != heads:
        if "KV_HEADS" in symbols:
            problem["KV_HEADS"] = kv_heads
        else:
            notes.append(f"K/V heads repeated {heads // kv_heads}x (PyTorch) for a spec without KV_HEADS")
    if layout == "bshd":
        if "LAYOUT" in symbols:
            problem["LAYOUT"] = 1
            # Views into a fused QKV output are read where they lie, their row strides in the problem; K/V heads
            # repeated in PyTorch are fresh packed tensors.
            if "Q_ROW_STRIDE" in symbols and "KV_ROW_STRIDE" in symbols:
                strides = _row_strides(q, k, v, heads, kv_heads, head_dim)
                if "KV_HEADS" not in problem and kv_heads != heads:
                    strides.pop("KV_ROW_STRIDE", None)
                problem.update(strides)
        else:
            notes.append("BSHD transposed to BHSD (PyTorch) for a spec without LAYOUT")
    copied = [name for name, tensor, stride in (("q", q, "Q_ROW_STRIDE"), ("k", k, "KV_ROW_STRIDE"),
                                                  ("v", v, "KV_ROW_STRIDE"))
              if stride not in problem and not tensor.is_contiguous()]
    if copied:
        notes.append(f"{', '.join(copied)} copied to packed tensors (PyTorch)")
    return Plan("attention", kernel, problem, "; ".join(notes))


def _plan_rows(op, family, x, supported=(torch.bfloat16, torch.float32)) -> Plan:
    rows, columns = _rows_and_columns(x)
    problem = {"ROWS": rows, "COLS": columns}
    if x.dtype not in supported:
        return Plan(op, None, problem, f"no shipped {family} kernel for {x.dtype}")
    return Plan(op, family + _DTYPE_SUFFIX[x.dtype], problem)


def plan_rms_norm(x):
    return _plan_rows("rms_norm", "rmsnorm", x)


def plan_layer_norm(x):
    return _plan_rows("layer_norm", "layernorm", x)


def plan_softmax(x):
    return _plan_rows("softmax", "softmax", x)


def plan_silu_mul(gate_up):
    rows, columns = _rows_and_columns(gate_up)
    problem = {"ROWS": rows, "COLS": columns // 2}
    if gate_up.dtype != torch.bfloat16:
        return Plan("silu_mul", None, problem, f"no shipped silu_mul kernel for {gate_up.dtype}")
    return Plan("silu_mul", "silu_mul_bf16", problem)


# ---------------------------------------------------------------- preparing a plan's launch


@dataclass
class _Prepared:
    launch: object            # the kernel's PreparedLaunch: launch(stream, *addresses, *scalars); None: PyTorch computes it
    choice: _explain.Choice


# By device, plan and argument names: shapes that map to one problem (a row op's (4, 8, 4096) and (32, 4096)) share it.
_prepared: Dict[tuple, _Prepared] = {}


def _choice_for(plan, route, reason, kernel=None, selection=None):
    problem = selection.problem if selection else (kernel.problem if kernel else plan.problem)
    return _explain.Choice(op=f"kernlathe::{plan.op}", route=route, kernel=plan.kernel, problem=dict(problem),
                           reason=reason + (f"; {plan.note}" if plan.note else ""),
                           rung=selection.rung_text if selection else None,
                           configuration=selection.configuration if selection else None,
                           binary_source=kernel.binary_source if kernel else None,
                           device=selection.device if selection else None)


def _prepare(plan, device_index, pointer_names, scalar_names):
    """The runtime's selection for plan and its launch prepared for the names, or why PyTorch computes it."""
    if plan.kernel is None:
        if not _fallback:
            raise KernlatheError(f"kernlathe::{plan.op}: {plan.note}")
        return _Prepared(None, _choice_for(plan, "torch", "PyTorch computes it"))
    the_runtime = runtime(device_index)
    try:
        the_runtime.select(plan.kernel, plan.problem)
    except KernlatheError as error:
        # The ladder found nothing usable (or no database knows the kernel): PyTorch computes this shape.
        if not _fallback:
            raise
        return _Prepared(None, _choice_for(plan, "torch", f"PyTorch computes it: {error}"))
    kernel = the_runtime.kernel(plan.kernel, plan.problem)
    return _Prepared(kernel.prepare(pointer_names, scalar_names),
                     _choice_for(plan, "kernel", kernel.selection.reason, kernel, kernel.selection))


def _prepared_for(plan, device_index, pointer_names, scalar_names=()):
    key = (device_index, plan.key(), tuple(pointer_names), tuple(scalar_names))
    found = _prepared.get(key)
    if found is None:
        found = _prepared[key] = _prepare(plan, device_index, list(pointer_names), list(scalar_names))
    return found


# ---------------------------------------------------------------- the eager path's plans, by key


class _Eager:
    """What every call of an op with one key does, settled by the first: the plan, the prepared launch (None: the
    call launches nothing), whether PyTorch computes the call instead, the choice explain() reports (None where
    nothing is computed: an empty output), the output's shape, the device index the stream is asked for, and what
    the op does around the kernel (detail, the op's own)."""

    __slots__ = ("plan", "launch", "in_torch", "choice", "shape", "device_index", "detail")

    def __init__(self, plan, prepared, shape, like, detail=None, computes=True):
        """prepared: a _Prepared, or None where the call computes nothing through the runtime (computes: whether
        PyTorch computes it then, unrecorded, as for a linear with K = 0; otherwise the output is empty)."""
        self.plan = plan
        self.launch = prepared.launch if prepared is not None else None
        self.in_torch = self.launch is None and (prepared is not None or computes)
        self.choice = prepared.choice if prepared is not None else None
        self.shape = tuple(shape)
        self.device_index = like.get_device()
        self.detail = detail


class _EagerPlans:
    """One op's _Eager per key. The key holds all that the op's checks, its plan and its launch depend on (shapes,
    dtypes and devices of the tensors, the options that change the plan; the ops copy a strided input to a contiguous
    one, so strides only decide whether a call copies). The first call with a key checks its arguments (raising as
    before), plans, selects and prepares the launch (build), and records the choice for explain(); a later call with
    the key is one dict lookup, and one record while an explain(fn) call collects (kernlathe._choices). Calls that
    raise are not remembered, so a bad call raises every time. Cleared with the runtime's state (use_runtime,
    set_fallback)."""

    def __init__(self, build):
        self.entries: Dict[tuple, _Eager] = {}
        self.build = build
        _eager_plans.append(self)

    def get(self, key, *arguments):
        entry = self.entries.get(key)
        if entry is None:
            entry = self.build(*arguments)
            self.entries[key] = entry
            if entry.choice is not None:
                _explain.record(entry.choice)
        elif _explain.collectors_active and entry.choice is not None:
            _explain.record(entry.choice)
        return entry


_eager_plans: List[_EagerPlans] = []


def _clear_prepared():
    _prepared.clear()
    for plans in _eager_plans:
        plans.entries.clear()


def _require_one_device(op, first_name, first, **others):
    """The CUDA implementations launch on the first tensor's device: every other tensor must live there too (a
    pointer into another device's memory would fault or read garbage)."""
    for name, tensor in others.items():
        if tensor is not None and tensor.device != first.device:
            raise RuntimeError(f"{op}: {name} is on {tensor.device}, {first_name} on {first.device}")


# The current stream's address without building a torch.cuda.Stream object per call (PyTorch's own kernels' launch
# path); the public torch.cuda.current_stream where this build lacks it.
def _public_current_stream(device_index):
    return torch.cuda.current_stream(device_index).cuda_stream


_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or _public_current_stream


def _record_planned(plan):
    """Under explain(..., arch=/device=): what the runtime would select on that profile, nothing launched."""
    arch, device_name = _explain.planning()
    if plan.kernel is None:
        _explain.record(_choice_for(plan, "torch", "PyTorch computes it"))
        return
    try:
        selection = runtime(0).select(plan.kernel, plan.problem, arch=arch or None, device=device_name or None)
    except KernlatheError as error:
        _explain.record(_choice_for(plan, "torch", f"PyTorch computes it: {error}"))
        return
    _explain.record(_choice_for(plan, "planned", selection.reason, selection=selection))


_zeros: Dict[tuple, torch.Tensor] = {}


def _zeros_of(length, dtype, device):
    """A cached zero vector: the bias of a fused GEMM called without one."""
    key = (length, dtype, device)
    found = _zeros.get(key)
    if found is None:
        found = torch.zeros(length, dtype=dtype, device=device)
        _zeros[key] = found
    return found


# ---------------------------------------------------------------- the eager fast path

_fast_path = os.environ.get("KERNLATHE_TORCH_EAGER_FAST_PATH", "1") != "0"
_is_compiling = torch.compiler.is_compiling
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
# nn.Parameter dispatches as a plain tensor (its __torch_function__ is disabled): a model's weights take the path.
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _eager_fast_path(*tensors):
    """Whether a call may skip the dispatcher and run the op's CUDA implementation directly: eager mode (not traced
    by torch.compile), no torch function or dispatch mode active (FakeTensorMode, profilers' modes, subclasses), and
    plain CUDA tensors (or parameters) that need no gradient. The op's own implementation is the same function, so
    results are identical; what it saves is the custom op's dispatch, a cost of the order of the 3 us floor of issue
    34 on a small problem. KERNLATHE_TORCH_EAGER_FAST_PATH=0 sends every call through torch.ops.kernlathe."""
    if not _fast_path or _is_compiling() or _dispatch_modes() or _function_modes():
        return False
    for tensor in tensors:
        if tensor is not None and (type(tensor) not in _PLAIN_TENSORS or not tensor.is_cuda or tensor.requires_grad):
            return False
    return True


def _require(condition, message):
    """torch._check for the CUDA implementations, which only ever see concrete tensors: the same RuntimeError without
    torch._check's symbolic-shape machinery, which cost several microseconds per check on the eager path. The fake
    implementations, traced with symbolic shapes, keep torch._check."""
    if not condition:
        raise RuntimeError(message())


def _tensor_key(tensor):
    """What a tensor gives a key (for the optional ones; the ops spell the others out, a call saved per tensor)."""
    return None if tensor is None else (tensor.shape, tensor.dtype, tensor.get_device())


# ---------------------------------------------------------------- out=: the caller's output tensor


def _check_out(op, out, shape, like):
    """out= must be what the op would allocate: its shape, the inputs' dtype and device, contiguous."""
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or out.device != like.device or \
            not out.is_contiguous():
        raise RuntimeError(f"{op}: out must be a contiguous {like.dtype} tensor of shape {tuple(shape)} on "
                           f"{like.device}; got {out.dtype}, shape {tuple(out.shape)} on {out.device}"
                           f"{'' if out.is_contiguous() else ', not contiguous'}")


def _extent(tensor):
    """The bytes a tensor's elements span, [start, end), a strided view's gaps included."""
    start = tensor.data_ptr()
    if tensor.is_contiguous():
        return start, start + tensor.nbytes
    last = sum((size - 1) * abs(stride) for size, stride in zip(tensor.shape, tensor.stride()))
    return start, start + (last + 1) * tensor.element_size()


def _kernel_out(op, out, shape, like, *inputs, strided=False):
    """The buffer a kernel writes: a new tensor, or out= once checked (_check_out) and found not to overlap what the
    kernel reads (inputs: the tensors whose addresses the launch takes, contiguous unless strided). A kernel that
    reads a row after writing part of it would compute from its own output: such a call is an error, not a wrong
    answer. Written for the eager fast path: a handful of attribute reads per tensor."""
    if out is None:  # new_empty: cheaper than torch.empty(shape, dtype=, device=), 1.05 against 1.55 us (CPU)
        return like.new_empty(shape)
    if out.shape != shape or out.dtype != like.dtype or out.get_device() != like.get_device() or \
            not out.is_contiguous():
        _check_out(op, out, shape, like)
    start = out.data_ptr()
    end = start + out.nbytes
    if start == end:  # an empty out overlaps nothing
        return out
    for tensor in inputs:
        if tensor is None:
            continue
        if strided:
            other_start, other_end = _extent(tensor)
        else:
            other_start = tensor.data_ptr()
            other_end = other_start + tensor.nbytes
        if other_start < end and start < other_end and other_start != other_end:
            raise RuntimeError(f"{op}: out overlaps an input the kernel reads; pass a separate tensor")
    return out


def _into(op, out, result):
    """out= of a call that went through the dispatcher (torch.compile, modes, autograd): the result copied in."""
    if out is None:
        return result
    _check_out(op, out, result.shape, result)
    out.copy_(result)
    return out


# ---------------------------------------------------------------- linear


def _check_linear(x, weight, bias, residual, activation, check=torch._check):
    check(activation in ("none", "gelu"), lambda: f"linear: activation must be 'none' or 'gelu', not {activation!r}")
    check(weight.dim() == 2, lambda: f"linear: weight must be N x K (nn.Linear), got shape {tuple(weight.shape)}")
    check(x.shape[-1] == weight.shape[1],
                 lambda: f"linear: x has {x.shape[-1]} features, weight expects {weight.shape[1]} (weight is N x K)")
    check(weight.dtype == x.dtype, lambda: f"linear: weight is {weight.dtype}, x is {x.dtype}")
    if bias is not None:
        check(bias.shape == (weight.shape[0],), lambda: f"linear: bias must have {weight.shape[0]} elements")
        check(bias.dtype == x.dtype, lambda: f"linear: bias is {bias.dtype}, x is {x.dtype}")
    if residual is not None:
        expected = (*x.shape[:-1], weight.shape[0])
        check(tuple(residual.shape) == expected,
                     lambda: f"linear: residual has shape {tuple(residual.shape)}, the output {expected}")
        check(residual.dtype == x.dtype, lambda: f"linear: residual is {residual.dtype}, x is {x.dtype}")


# What a GEMM kernel's epilogue takes: the plain GEMM (a bias added after, in PyTorch), bias and GELU (a residual added
# after), bias and residual.
_PLAIN, _BIAS_GELU, _BIAS_RESIDUAL = "plain", "bias_gelu", "bias_residual"
_EPILOGUES = {"gemm_bf16": _PLAIN, "gemm_f16": _PLAIN, "gemm_decode_bf16": _PLAIN, "gemm_bf16_bias_gelu": _BIAS_GELU,
              "gemm_bf16_bias_residual": _BIAS_RESIDUAL}
_EPILOGUE_BUFFERS = {_PLAIN: ("a", "b", "c"), _BIAS_GELU: ("a", "b", "c", "bias"),
                     _BIAS_RESIDUAL: ("a", "b", "c", "bias", "residual")}


def _build_linear(x, weight, bias, residual, activation):
    _check_linear(x, weight, bias, residual, activation, _require)
    _require_one_device("linear", "x", x, weight=weight, bias=bias, residual=residual)
    plan = plan_linear(x, weight, bias, residual, activation)
    shape = (*x.shape[:-1], weight.shape[0])
    if 0 in shape or x.shape[-1] == 0:  # nothing to launch: PyTorch fills a non-empty output (K = 0), unrecorded
        return _Eager(plan, None, shape, x, computes=0 not in shape)
    if plan.kernel is None:
        return _Eager(plan, _prepared_for(plan, x.get_device(), ()), shape, x)
    epilogue = _EPILOGUES[plan.kernel]
    zeros = _zeros_of(weight.shape[0], x.dtype, x.device) if epilogue != _PLAIN and bias is None else None
    buffers = ("a", "w", "c") if plan.kernel == "gemm_decode_bf16" else _EPILOGUE_BUFFERS[epilogue]
    return _Eager(plan, _prepared_for(plan, x.get_device(), buffers), shape, x, (epilogue, zeros))


_LINEAR = _EagerPlans(_build_linear)


def _linear_cuda(x, weight, bias=None, residual=None, activation="none", out=None):
    entry = _LINEAR.get((x.shape, x.dtype, x.get_device(), weight.shape, weight.dtype, weight.get_device(),
                         _tensor_key(bias), _tensor_key(residual), activation), x, weight, bias, residual, activation)
    launch = entry.launch
    if launch is None:
        out = _kernel_out("linear", out, entry.shape, x)
        if entry.in_torch:
            out.copy_(reference.linear(x, weight, bias, residual, activation))
        return out
    # The contiguous copies stay referenced until the launch is queued: freed before, their memory could be handed
    # to another tensor while the kernel has yet to read it.
    a, b = x.contiguous(), weight.contiguous()
    out = _kernel_out("linear", out, entry.shape, x, a, b, bias, residual)
    epilogue, zeros = entry.detail
    stream = _current_stream(entry.device_index)
    if epilogue == _PLAIN:
        launch(stream, a.data_ptr(), b.data_ptr(), out.data_ptr())
        if bias is not None:
            out.add_(bias)
        return out
    shift = bias.contiguous() if bias is not None else zeros
    if epilogue == _BIAS_GELU:
        launch(stream, a.data_ptr(), b.data_ptr(), out.data_ptr(), shift.data_ptr())
        if residual is not None:
            out.add_(residual)
        return out
    added = residual.contiguous()
    launch(stream, a.data_ptr(), b.data_ptr(), out.data_ptr(), shift.data_ptr(), added.data_ptr())
    return out


@torch.library.custom_op("kernlathe::linear", mutates_args=(), device_types="cuda")
def linear_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
              residual: Optional[torch.Tensor] = None, activation: str = "none") -> torch.Tensor:
    return _linear_cuda(x, weight, bias, residual, activation)


def linear(x, weight, bias=None, residual=None, activation="none", *, out=None):
    """y = activation(x W^T + bias) + residual, W stored N x K as nn.Linear keeps it. out: a contiguous tensor of
    the output's shape and dtype to write y into (no allocation), not overlapping an input."""
    if _eager_fast_path(x, weight, bias, residual, out):
        return _linear_cuda(x, weight, bias, residual, activation, out)
    return _into("linear", out, linear_op(x, weight, bias, residual, activation))


@linear_op.register_fake
def _linear_fake(x, weight, bias=None, residual=None, activation="none"):
    _check_linear(x, weight, bias, residual, activation)
    if _explain.planning() is not None:
        _record_planned(plan_linear(x, weight, bias, residual, activation))
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@linear_op.register_kernel("cpu")
def _linear_cpu(x, weight, bias=None, residual=None, activation="none"):
    _check_linear(x, weight, bias, residual, activation)
    _explain.record(_choice_for(plan_linear(x, weight, bias, residual, activation), "torch",
                                "PyTorch computes it: CPU tensors"))
    return reference.linear(x, weight, bias, residual, activation)


# ---------------------------------------------------------------- attention


def _check_attention(q, k, v, layout, check=torch._check):
    check(layout in ("bhsd", "bshd"), lambda: f"attention: layout must be 'bhsd' or 'bshd', not {layout!r}")
    check(q.dim() == 4 and k.dim() == 4 and v.dim() == 4, lambda: "attention: q, k and v must be 4-dimensional")
    check(k.shape == v.shape, lambda: f"attention: k {tuple(k.shape)} and v {tuple(v.shape)} differ")
    head_axis, sequence_axis = (2, 1) if layout == "bshd" else (1, 2)
    check(q.shape[0] == k.shape[0] and q.shape[3] == k.shape[3] and q.shape[sequence_axis] == k.shape[sequence_axis],
                 lambda: f"attention: q {tuple(q.shape)} and k {tuple(k.shape)} differ in batch, sequence or head size")
    check(q.shape[head_axis] % k.shape[head_axis] == 0,
                 lambda: f"attention: {q.shape[head_axis]} query heads are not a multiple of {k.shape[head_axis]} K/V heads")
    check(q.dtype == k.dtype == v.dtype, lambda: "attention: q, k and v must have one dtype")


def _build_attention(q, k, v, causal, scale, layout):
    _check_attention(q, k, v, layout, _require)
    _require_one_device("attention", "q", q, k=k, v=v)
    device_index = q.get_device()
    plan = plan_attention(q, k, v, causal, layout, device_index)
    if q.numel() == 0:
        return _Eager(plan, None, q.shape, q, computes=False)
    scalars = () if scale is None else ("scale",)
    if plan.kernel is None:
        return _Eager(plan, _prepared_for(plan, device_index, (), scalars), q.shape, q)
    # The problem is passed through as far as the spec knows it (plan_attention); otherwise the op transposes BSHD to
    # BHSD and repeats grouped K/V heads in PyTorch first.
    head_axis, transposed = 1, False
    if layout == "bshd":
        if "LAYOUT" in plan.problem:
            head_axis = 2
        else:
            transposed = True
    kv_heads = k.shape[2 if layout == "bshd" else 1]
    group = plan.problem["HEADS"] // kv_heads if "KV_HEADS" not in plan.problem and kv_heads != plan.problem["HEADS"] else 1
    in_place = ("Q_ROW_STRIDE" in plan.problem, "KV_ROW_STRIDE" in plan.problem, "KV_ROW_STRIDE" in plan.problem)
    prepared = _prepared_for(plan, device_index, ("q", "k", "v", "o"), scalars)
    return _Eager(plan, prepared, q.shape, q, (transposed, head_axis, group, in_place))


_ATTENTION = _EagerPlans(_build_attention)


def _attention_cuda(q, k, v, causal=False, scale=None, layout="bhsd", out=None):
    # Strides and 16-byte alignment are in the key: they decide whether a BSHD view is read in place (plan_attention).
    entry = _ATTENTION.get((q.shape, q.dtype, q.get_device(), k.shape, k.dtype, k.get_device(), v.shape, v.dtype,
                            v.get_device(), bool(causal), scale is None, layout, q.stride(), k.stride(), v.stride(),
                            q.data_ptr() % 16, k.data_ptr() % 16, v.data_ptr() % 16), q, k, v, causal, scale, layout)
    launch = entry.launch
    if launch is None:
        if entry.in_torch:
            # contiguous like the kernel's output and the fake's: PyTorch's result of a "bshd" call is a transposed view
            return _into("attention", out, reference.attention(q, k, v, causal, scale, layout).contiguous())
        return _into("attention", out, torch.empty_like(q, memory_format=torch.contiguous_format))
    transposed, head_axis, group, in_place = entry.detail
    inputs = [q, k, v]
    if transposed:
        inputs = [tensor.transpose(1, 2) for tensor in inputs]
    if group > 1:
        inputs[1] = inputs[1].repeat_interleave(group, dim=head_axis)
        inputs[2] = inputs[2].repeat_interleave(group, dim=head_axis)
    # A view whose row stride the plan passes is read in place; anything else is made packed (a no-op where it is).
    q_in, k_in, v_in = [tensor if keep else tensor.contiguous() for tensor, keep in zip(inputs, in_place)]
    if out is None or transposed:  # transposed: the kernel writes BHSD, transposed back after and copied to out=
        written = torch.empty_like(q_in, memory_format=torch.contiguous_format)
    else:
        written = _kernel_out("attention", out, q_in.shape, q_in, q_in, k_in, v_in, strided=True)
    stream = _current_stream(entry.device_index)
    if scale is None:
        launch(stream, q_in.data_ptr(), k_in.data_ptr(), v_in.data_ptr(), written.data_ptr())
    else:
        launch(stream, q_in.data_ptr(), k_in.data_ptr(), v_in.data_ptr(), written.data_ptr(), float(scale))
    return _into("attention", out, written.transpose(1, 2).contiguous()) if transposed else written


@torch.library.custom_op("kernlathe::attention", mutates_args=(), device_types="cuda")
def attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                 scale: Optional[float] = None, layout: str = "bhsd") -> torch.Tensor:
    return _attention_cuda(q, k, v, causal, scale, layout)


def attention(q, k, v, causal=False, scale=None, layout="bhsd", *, out=None):
    """softmax(q k^T * scale) v per head, causal optionally; k and v may have fewer heads (GQA). layout "bhsd":
    (batch, heads, sequence, head_dim); "bshd": (batch, sequence, heads, head_dim). The output has q's shape (out:
    a contiguous tensor of that shape and q's dtype to write it into, not overlapping q, k or v)."""
    if _eager_fast_path(q, k, v, out):
        return _attention_cuda(q, k, v, causal, scale, layout, out)
    return _into("attention", out, attention_op(q, k, v, causal, scale, layout))


@attention_op.register_fake
def _attention_fake(q, k, v, causal=False, scale=None, layout="bhsd"):
    _check_attention(q, k, v, layout)
    if _explain.planning() is not None:
        _record_planned(plan_attention(q, k, v, causal, layout, 0))
    return torch.empty_like(q, memory_format=torch.contiguous_format)


@attention_op.register_kernel("cpu")
def _attention_cpu(q, k, v, causal=False, scale=None, layout="bhsd"):
    _check_attention(q, k, v, layout)
    batch, first, second, head_dim = q.shape
    heads, sequence = (second, first) if layout == "bshd" else (first, second)
    problem = {"BATCH": batch, "HEADS": heads, "SEQ": sequence, "HEAD_DIM": head_dim, "CAUSAL": int(bool(causal))}
    _explain.record(_choice_for(Plan("attention", None, problem), "torch", "PyTorch computes it: CPU tensors"))
    return reference.attention(q, k, v, causal, scale, layout).contiguous()


# ---------------------------------------------------------------- RMSNorm, LayerNorm, softmax


def _check_norm(op, x, weight, bias=None, check=torch._check):
    check(x.dim() >= 1, lambda: f"{op}: x must have at least one dimension")
    check(weight.shape == (x.shape[-1],), lambda: f"{op}: weight must have {x.shape[-1]} elements, "
                                                          f"got shape {tuple(weight.shape)}")
    check(weight.dtype == x.dtype, lambda: f"{op}: weight is {weight.dtype}, x is {x.dtype}")
    if bias is not None:
        check(bias.shape == (x.shape[-1],), lambda: f"{op}: bias must have {x.shape[-1]} elements")
        check(bias.dtype == x.dtype, lambda: f"{op}: bias is {bias.dtype}, x is {x.dtype}")


def _build_rows(planner, op, x, weight=None, bias=None, buffers=(), scalars=(), shape=None):
    """The _Eager of a row op (RMSNorm, LayerNorm, softmax, silu_mul): checked by the caller, planned by planner."""
    _require_one_device(op, "x", x, weight=weight, bias=bias)
    plan = planner(x)
    shape = x.shape if shape is None else shape
    if 0 in shape:
        return _Eager(plan, None, shape, x, computes=False)
    return _Eager(plan, _prepared_for(plan, x.get_device(), buffers if plan.kernel else (), scalars), shape, x)


def _build_rms_norm(x, weight):
    _check_norm("rms_norm", x, weight, None, _require)
    return _build_rows(plan_rms_norm, "rms_norm", x, weight, buffers=("input", "weight", "output"),
                       scalars=("epsilon",))


_RMS_NORM = _EagerPlans(_build_rms_norm)


def _rms_norm_cuda(x, weight, eps=1e-5, out=None):
    entry = _RMS_NORM.get((x.shape, x.dtype, x.get_device(), weight.shape, weight.dtype, weight.get_device()), x, weight)
    source = x.contiguous()
    gamma = weight.contiguous()
    out = torch.empty_like(source) if out is None else _kernel_out("rms_norm", out, source.shape, source, source, gamma)
    if entry.launch is not None:
        entry.launch(_current_stream(entry.device_index), source.data_ptr(), gamma.data_ptr(), out.data_ptr(), eps)
    elif entry.in_torch:
        out.copy_(reference.rms_norm(x, weight, eps))
    return out


@torch.library.custom_op("kernlathe::rms_norm", mutates_args=(), device_types="cuda")
def rms_norm_op(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return _rms_norm_cuda(x, weight, eps)


def rms_norm(x, weight, eps=1e-5, *, out=None):
    """x / sqrt(mean(x^2) + eps) * weight over the last dimension (into out, a contiguous tensor of x's shape and
    dtype not overlapping x or weight, where given)."""
    if _eager_fast_path(x, weight, out):
        return _rms_norm_cuda(x, weight, eps, out)
    return _into("rms_norm", out, rms_norm_op(x, weight, eps))


@rms_norm_op.register_fake
def _rms_norm_fake(x, weight, eps=1e-5):
    _check_norm("rms_norm", x, weight)
    if _explain.planning() is not None:
        _record_planned(plan_rms_norm(x))
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@rms_norm_op.register_kernel("cpu")
def _rms_norm_cpu(x, weight, eps=1e-5):
    _check_norm("rms_norm", x, weight)
    _explain.record(_choice_for(plan_rms_norm(x), "torch", "PyTorch computes it: CPU tensors"))
    return reference.rms_norm(x, weight, eps)


def _build_layer_norm(x, weight, bias):
    _check_norm("layer_norm", x, weight, bias, _require)
    entry = _build_rows(plan_layer_norm, "layer_norm", x, weight, bias, buffers=("input", "gamma", "beta", "output"),
                        scalars=("epsilon",))
    if entry.launch is not None and bias is None:
        entry.detail = _zeros_of(x.shape[-1], x.dtype, x.device)  # the kernel's beta
    return entry


_LAYER_NORM = _EagerPlans(_build_layer_norm)


def _layer_norm_cuda(x, weight, bias=None, eps=1e-5, out=None):
    entry = _LAYER_NORM.get((x.shape, x.dtype, x.get_device(), weight.shape, weight.dtype, weight.get_device(),
                             _tensor_key(bias)), x, weight, bias)
    source = x.contiguous()
    gamma = weight.contiguous()
    shift = bias.contiguous() if bias is not None else entry.detail
    out = torch.empty_like(source) if out is None else \
        _kernel_out("layer_norm", out, source.shape, source, source, gamma, shift)
    if entry.launch is not None:
        entry.launch(_current_stream(entry.device_index), source.data_ptr(), gamma.data_ptr(), shift.data_ptr(),
                     out.data_ptr(), eps)
    elif entry.in_torch:
        out.copy_(reference.layer_norm(x, weight, bias, eps))
    return out


@torch.library.custom_op("kernlathe::layer_norm", mutates_args=(), device_types="cuda")
def layer_norm_op(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                  eps: float = 1e-5) -> torch.Tensor:
    return _layer_norm_cuda(x, weight, bias, eps)


def layer_norm(x, weight, bias=None, eps=1e-5, *, out=None):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last dimension (into out, a contiguous tensor of x's
    shape and dtype not overlapping an input, where given)."""
    if _eager_fast_path(x, weight, bias, out):
        return _layer_norm_cuda(x, weight, bias, eps, out)
    return _into("layer_norm", out, layer_norm_op(x, weight, bias, eps))


@layer_norm_op.register_fake
def _layer_norm_fake(x, weight, bias=None, eps=1e-5):
    _check_norm("layer_norm", x, weight, bias)
    if _explain.planning() is not None:
        _record_planned(plan_layer_norm(x))
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@layer_norm_op.register_kernel("cpu")
def _layer_norm_cpu(x, weight, bias=None, eps=1e-5):
    _check_norm("layer_norm", x, weight, bias)
    _explain.record(_choice_for(plan_layer_norm(x), "torch", "PyTorch computes it: CPU tensors"))
    return reference.layer_norm(x, weight, bias, eps)


def _build_softmax(x):
    _require(x.dim() >= 1, lambda: "softmax: x must have at least one dimension")
    return _build_rows(plan_softmax, "softmax", x, buffers=("input", "output"))


_SOFTMAX = _EagerPlans(_build_softmax)


def _softmax_cuda(x, out=None):
    entry = _SOFTMAX.get((x.shape, x.dtype, x.get_device()), x)
    source = x.contiguous()
    out = torch.empty_like(source) if out is None else _kernel_out("softmax", out, source.shape, source, source)
    if entry.launch is not None:
        entry.launch(_current_stream(entry.device_index), source.data_ptr(), out.data_ptr())
    elif entry.in_torch:
        out.copy_(reference.softmax(x))
    return out


@torch.library.custom_op("kernlathe::softmax", mutates_args=(), device_types="cuda")
def softmax_op(x: torch.Tensor) -> torch.Tensor:
    return _softmax_cuda(x)


def softmax(x, *, out=None):
    """softmax over the last dimension (into out, a contiguous tensor of x's shape and dtype not overlapping x, where
    given)."""
    if _eager_fast_path(x, out):
        return _softmax_cuda(x, out)
    return _into("softmax", out, softmax_op(x))


@softmax_op.register_fake
def _softmax_fake(x):
    torch._check(x.dim() >= 1, lambda: "softmax: x must have at least one dimension")
    if _explain.planning() is not None:
        _record_planned(plan_softmax(x))
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@softmax_op.register_kernel("cpu")
def _softmax_cpu(x):
    _explain.record(_choice_for(plan_softmax(x), "torch", "PyTorch computes it: CPU tensors"))
    return reference.softmax(x)


# ---------------------------------------------------------------- the SiLU-gated product of a gated MLP


def _check_silu_mul(gate_up, check=torch._check):
    check(gate_up.dim() >= 1, lambda: "silu_mul: gate_up must have at least one dimension")
    check(gate_up.shape[-1] % 2 == 0,
                 lambda: f"silu_mul: the last dimension ({gate_up.shape[-1]}) must hold gate and up halves")


def _silu_mul_shape(gate_up):
    return (*gate_up.shape[:-1], gate_up.shape[-1] // 2)


def _build_silu_mul(gate_up):
    _check_silu_mul(gate_up, _require)
    return _build_rows(plan_silu_mul, "silu_mul", gate_up, buffers=("gate_up", "output"),
                       shape=_silu_mul_shape(gate_up))


_SILU_MUL = _EagerPlans(_build_silu_mul)


def _silu_mul_cuda(gate_up, out=None):
    entry = _SILU_MUL.get((gate_up.shape, gate_up.dtype, gate_up.get_device()), gate_up)
    source = gate_up.contiguous()
    out = _kernel_out("silu_mul", out, entry.shape, source, source)
    if entry.launch is not None:
        entry.launch(_current_stream(entry.device_index), source.data_ptr(), out.data_ptr())
    elif entry.in_torch:
        out.copy_(reference.silu_mul(gate_up))
    return out


@torch.library.custom_op("kernlathe::silu_mul", mutates_args=(), device_types="cuda")
def silu_mul_op(gate_up: torch.Tensor) -> torch.Tensor:
    return _silu_mul_cuda(gate_up)


def silu_mul(gate_up, *, out=None):
    """silu(gate) * up, where gate and up are the two halves of gate_up's last dimension (a fused gate/up
    projection's output, gate first); into out (contiguous, not overlapping gate_up) where given."""
    if _eager_fast_path(gate_up, out):
        return _silu_mul_cuda(gate_up, out)
    return _into("silu_mul", out, silu_mul_op(gate_up))


@silu_mul_op.register_fake
def _silu_mul_fake(gate_up):
    _check_silu_mul(gate_up)
    if _explain.planning() is not None:
        _record_planned(plan_silu_mul(gate_up))
    return gate_up.new_empty(_silu_mul_shape(gate_up))


@silu_mul_op.register_kernel("cpu")
def _silu_mul_cpu(gate_up):
    _check_silu_mul(gate_up)
    _explain.record(_choice_for(plan_silu_mul(gate_up), "torch", "PyTorch computes it: CPU tensors"))
    return reference.silu_mul(gate_up)
