#!/usr/bin/env python3
"""PyTorch's own sequences for the kernels issue 19 fuses, timed on the GPU with CUDA events (random data, as the
specs draw it), so a benchmark can print our fused kernel's time beside PyTorch's in the same run.

  torch_reference.py add_layernorm ROWS COLS DTYPE   x + r, then layer_norm (two kernels); layer_norm alone
  torch_reference.py gemm M N K                      bf16: mm, addmm(bias), gelu(addmm(bias)), addmm(bias) + r
  torch_reference.py attention B H S D CAUSAL DTYPE  scaled_dot_product_attention on [B, H, S, D] tensors with
                                                     each backend (cuDNN, flash, memory-efficient) forced in turn
  torch_reference.py attention_models B H KV_H S D CAUSAL DTYPE LAYOUT
                                                     the same with grouped-query heads (KV_H key/value heads) on
                                                     tensors in LAYOUT bshd ([B, S, H, D], passed as transposed
                                                     views, no copy) or bhsd, cuDNN and flash backends
  torch_reference.py rows CASES_FILE                 row kernels (issue 30) in eager mode and through torch.compile,
                                                     all cases in this one process: each line of CASES_FILE is
                                                     "OP DTYPE ROWS COLS MODE", OP rmsnorm or softmax, MODE warm or
                                                     cold (as `tune run --warm/--cold` measures); one JSON object per
                                                     line on stdout

Prints one JSON object: for each sequence the median milliseconds per call (each sample times a batch of calls
between two events, after a warm-up), the samples' spread, and for add_layernorm the minimal bytes of the fused
operation (read x, r, gamma, beta once; write the sum and the output once), so the caller can put PyTorch on the
same copy-ceiling scale as `tune run`. Every output is checked for NaN once.

A sequence that fails (NaN, an error; in rows mode also a compiled output that differs from eager) is reported with
its error, the others are still timed, and the script exits 1 after naming it on its last line (stderr); an attention
backend that refuses the shape is data, not a failure. Bad usage exits 2.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_outcome import Outcome  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

outcome = Outcome("torch_reference")


class NanOutput(RuntimeError):
    """A reference produced NaN: a failure, never a backend refusing a shape."""

WARMUP_CALLS = 10
CALLS_PER_SAMPLE = 10
SAMPLES = 15
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "fp32": torch.float32, "f16": torch.float16}


def uniform(shape, low, high, dtype, generator):
    values = torch.rand(shape, device="cuda", dtype=torch.float32, generator=generator)
    return (values * (high - low) + low).to(dtype)


def time_call(call):
    """Median and relative spread (max - min over median) of the milliseconds per call."""
    result = call()
    torch.cuda.synchronize()
    outputs = result if isinstance(result, tuple) else (result,)
    for output in outputs:
        if torch.isnan(output).any():
            raise NanOutput("a PyTorch reference produced NaN")
    # Warm-up: at least WARMUP_CALLS calls and half a second, so the clocks have settled (a cold H200 ran the first
    # GEMMs 10-20% slower than the later ones).
    warmup_start, warmup_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    warmup_start.record()
    calls = 0
    while True:
        call()
        calls += 1
        if calls % WARMUP_CALLS == 0:
            warmup_end.record()
            warmup_end.synchronize()
            if warmup_start.elapsed_time(warmup_end) >= 500:
                break
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(SAMPLES):
        start.record()
        for _ in range(CALLS_PER_SAMPLE):
            call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / CALLS_PER_SAMPLE)
    median = statistics.median(samples)
    return {"median_ms": median, "spread": (max(samples) - min(samples)) / median}


def add_layernorm(rows, cols, dtype_name):
    dtype = DTYPES[dtype_name]
    generator = torch.Generator(device="cuda").manual_seed(41)
    x = uniform((rows, cols), -2, 2, dtype, generator)
    r = uniform((rows, cols), -2, 2, dtype, generator)
    gamma = uniform((cols,), 0.5, 1.5, dtype, generator)
    beta = uniform((cols,), -0.5, 0.5, dtype, generator)

    def unfused():
        total = x + r
        return total, F.layer_norm(total, (cols,), gamma, beta, 1e-5)

    element_bytes = torch.tensor([], dtype=dtype).element_size()
    return {
        "sequence": "x + r; layer_norm",
        "dtype": dtype_name,
        "bytes": (4 * rows * cols + 2 * cols) * element_bytes,
        "add_then_layer_norm": time_call(unfused),
        "layer_norm": time_call(lambda: F.layer_norm(x, (cols,), gamma, beta, 1e-5)),
    }


def gemm(m, n, k):
    generator = torch.Generator(device="cuda").manual_seed(11)
    a = uniform((m, k), -1, 1, torch.bfloat16, generator)
    b = uniform((k, n), -1, 1, torch.bfloat16, generator)  # row-major K x N, as the specs' B
    bias = uniform((n,), -8, 8, torch.bfloat16, generator)
    residual = uniform((m, n), -32, 32, torch.bfloat16, generator)
    flops = 2 * m * n * k
    timings = {
        "mm": time_call(lambda: torch.mm(a, b)),
        "addmm": time_call(lambda: torch.addmm(bias, a, b)),
        "gelu_addmm": time_call(lambda: F.gelu(torch.addmm(bias, a, b))),
        "addmm_residual": time_call(lambda: torch.addmm(bias, a, b) + residual),
    }
    for timing in timings.values():
        timing["tflops"] = flops / (timing["median_ms"] * 1e-3) / 1e12
    return {"dtype": "bf16", "flops": flops, **timings}


def attention(batch, heads, sequence, head_dim, causal, dtype_name):
    """Forward attention with each SDPA backend, in TFLOP/s counted as the specs count them (4 B H S^2 D, half of it
    causal). A backend that refuses the shape is reported with its error instead of a time."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dtype = DTYPES[dtype_name]
    generator = torch.Generator(device="cuda").manual_seed(41)
    shape = (batch, heads, sequence, head_dim)
    q = uniform(shape, -2, 2, dtype, generator)
    k = uniform(shape, -2, 2, dtype, generator)
    v = uniform(shape, -1, 1, dtype, generator)
    flops = 4 * batch * heads * sequence * sequence * head_dim // (2 if causal else 1)
    report = {"dtype": dtype_name, "flops": flops, "shape": list(shape), "causal": bool(causal)}
    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    for name, backend in backends.items():
        try:
            with sdpa_kernel(backend):
                timing = time_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
            timing["tflops"] = flops / (timing["median_ms"] * 1e-3) / 1e12
        except NanOutput as error:
            timing = {"error": str(error)}
            outcome.failed(f"attention {name} backend: {error}")
        except RuntimeError as error:  # the backend does not take this shape or dtype on this GPU
            timing = {"error": str(error).splitlines()[0][:200]}
        report[name] = timing
    return report


def attention_models(batch, heads, kv_heads, sequence, head_dim, causal, dtype_name, layout):
    """Attention as models call it: grouped-query heads (enable_gqa, query head h reads key/value head
    h // (heads // kv_heads)) on [B, S, H, D] tensors viewed as [B, H, S, D] (layout bshd) or on [B, H, S, D]
    tensors (bhsd). Where a backend refuses enable_gqa, K and V are expanded to every query head outside the timed
    call and the report says so ("gqa": "expanded")."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dtype = DTYPES[dtype_name]
    generator = torch.Generator(device="cuda").manual_seed(41)

    def tensor(head_count, low, high):
        if layout == "bshd":
            return uniform((batch, sequence, head_count, head_dim), low, high, dtype, generator).transpose(1, 2)
        return uniform((batch, head_count, sequence, head_dim), low, high, dtype, generator)

    q, k, v = tensor(heads, -2, 2), tensor(kv_heads, -2, 2), tensor(kv_heads, -1, 1)
    flops = 4 * batch * heads * sequence * sequence * head_dim // (2 if causal else 1)
    report = {"dtype": dtype_name, "flops": flops, "batch": batch, "heads": heads, "kv_heads": kv_heads,
              "sequence": sequence, "head_dim": head_dim, "causal": bool(causal), "layout": layout}
    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
    for name, backend in backends.items():
        timing = None
        try:
            with sdpa_kernel(backend):
                timing = time_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal),
                                                                          enable_gqa=True))
            timing["gqa"] = "native"
        except RuntimeError as error:
            native_error = str(error).splitlines()[0][:200]
            group = heads // kv_heads
            if layout == "bshd":
                k_all = k.transpose(1, 2).repeat_interleave(group, dim=2).transpose(1, 2)
                v_all = v.transpose(1, 2).repeat_interleave(group, dim=2).transpose(1, 2)
            else:
                k_all, v_all = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            try:
                with sdpa_kernel(backend):
                    timing = time_call(lambda: F.scaled_dot_product_attention(q, k_all, v_all,
                                                                              is_causal=bool(causal)))
                timing["gqa"] = "expanded"
                timing["native_error"] = native_error
            except RuntimeError as second:
                timing = {"error": str(second).splitlines()[0][:200], "native_error": native_error}
        if "median_ms" in timing:
            timing["tflops"] = flops / (timing["median_ms"] * 1e-3) / 1e12
        report[name] = timing
    return report


def time_cold(call):
    """Median and spread of one call per sample with the L2 cache flushed before it, as `tune run --cold` measures
    (tuner/measure/measurement.h: a write over twice the L2 size, outside the timed region). A GPU-side sleep is
    queued before the flush, so the host has queued the flush, both events and the call (torch.compile's guards and
    eager's dispatch take tens of microseconds) before the GPU reaches the first event: the events time the kernels,
    not the host."""
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    for _ in range(WARMUP_CALLS):
        call()
    samples = []
    for _ in range(3 * SAMPLES):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)  # ~1 ms at the H200's clocks
        flush.fill_(1)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    median = statistics.median(samples)
    return {"median_ms": median, "spread": (max(samples) - min(samples)) / median}


def rows_case(op, dtype_name, rows, cols, mode):
    """One row kernel in eager mode and compiled, inputs as the specs draw them (RMSNorm: x in [-2, 2], weight in
    [0.5, 1.5], eps 1e-5 as kernels/rmsnorm*.yaml; softmax: x in [-8, 8]). Warm mode rotates calls over enough
    copies of the input to exceed four L2 sizes, so no call finds its input in L2 where the matrix is smaller than
    that (the large shapes are several times the L2 anyway); cold mode flushes the L2 before every call."""
    dtype = DTYPES[dtype_name]
    generator = torch.Generator(device="cuda").manual_seed(41)
    low, high = (-2, 2) if op == "rmsnorm" else (-8, 8)
    element_bytes = torch.tensor([], dtype=dtype).element_size()
    copies = 1 if mode == "cold" else max(
        1, -(-4 * torch.cuda.get_device_properties(0).L2_cache_size // (rows * cols * element_bytes)))
    inputs = [uniform((rows, cols), low, high, dtype, generator) for _ in range(copies)]
    weight = uniform((cols,), 0.5, 1.5, dtype, generator)
    if op == "rmsnorm":
        def function(x, w):
            return F.rms_norm(x, (cols,), w, 1e-5)
    elif op == "softmax":
        def function(x, w):
            return torch.softmax(x, dim=-1)
    else:
        outcome.failed(f"unknown row op {op}")
        return {"op": op, "dtype": dtype_name, "rows": rows, "cols": cols, "mode": mode}
    report = {"op": op, "dtype": dtype_name, "rows": rows, "cols": cols, "mode": mode, "input_copies": copies}
    # Dynamo keys its cache on the code object, which every case shares: without a reset, the shapes after the
    # recompile limit (8) would silently run eager. dynamic=False: a kernel specialised to the shape, as ours is.
    torch._dynamo.reset()
    compiled = torch.compile(function, dynamic=False)
    expected = function(inputs[0], weight)
    for name, candidate in (("eager", function), ("compiled", compiled)):
        try:
            result = candidate(inputs[0], weight)
            torch.cuda.synchronize()
            # The compiled kernel computes the same operation: bf16 outputs within a few bf16 steps, fp32 closer.
            tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-4
            if not torch.allclose(result.float(), expected.float(), rtol=tolerance, atol=tolerance):
                raise RuntimeError("output differs from eager beyond the tolerance")
            index = [0]

            def call():
                index[0] = (index[0] + 1) % copies
                return candidate(inputs[index[0]], weight)
            report[name] = time_cold(call) if mode == "cold" else time_call(call)
        except Exception as error:  # noqa: BLE001 -- the table says what failed instead of a time
            report[name] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"}
            outcome.failed(f"{op} {dtype_name} {rows}x{cols} {name}: {report[name]['error']}")
    return report


def rows(cases_path):
    for line in open(cases_path):
        if not line.strip():
            continue
        op, dtype_name, row_count, col_count, mode = line.split()
        report = rows_case(op, dtype_name, int(row_count), int(col_count), mode)
        report["torch"] = torch.__version__
        report["device"] = torch.cuda.get_device_name()
        print(json.dumps(report), flush=True)
        del report
        torch.cuda.empty_cache()


def main(arguments):
    if len(arguments) == 2 and arguments[0] == "rows":
        rows(arguments[1])
        outcome.finish(sys.stderr)
    if len(arguments) == 4 and arguments[0] == "add_layernorm":
        report = add_layernorm(int(arguments[1]), int(arguments[2]), arguments[3])
    elif len(arguments) == 4 and arguments[0] == "gemm":
        report = gemm(int(arguments[1]), int(arguments[2]), int(arguments[3]))
    elif len(arguments) == 7 and arguments[0] == "attention":
        report = attention(*(int(value) for value in arguments[1:6]), arguments[6])
    elif len(arguments) == 9 and arguments[0] == "attention_models" and arguments[8] in ("bshd", "bhsd"):
        report = attention_models(*(int(value) for value in arguments[1:7]), arguments[7], arguments[8])
    else:
        outcome.usage("unknown arguments: " + " ".join(arguments), __doc__)
    report["torch"] = torch.__version__
    report["device"] = torch.cuda.get_device_name()
    print(json.dumps(report))
    outcome.finish(sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
