#!/usr/bin/env python3
"""A Llama-3-8B decoder layer (workloads/llama3-8b.yaml: hidden 4096, 32 query and 8 key/value heads of 128, MLP
14336, RMSNorm eps 1e-5; bf16) written once with PyTorch ops and once with kernlathe.torch ops, timed in one process
at each token count (issue 34). Prints, per token count: forward time of PyTorch eager, torch.compile (default mode)
and kernlathe (the three taking turns call by call, so each runs on the same clocks), the ratios, each layer's error against the fp32 PyTorch layer, and each step of the layer timed alone
in both (where the time goes); then the per-call overhead of a kernlathe.torch op over the same kernel launched from
C++ (a tiny problem, many calls) and the first call of a kernel from a fresh Runtime. Exits 1 when a floor is
missed, 3 without a GPU.

Floors (issue 34): kernlathe >= 1.15x eager and >= 1.0x torch.compile; relative error vs fp32 within bf16 tolerance
(<= 1e-2, L2 over the output); op overhead <= 3 us per call over C++ (the op writing into out=, as the C++ loop
launches into buffers that exist; the call that allocates its output is printed beside it, with PyTorch's
empty_like timed alone); first call from stored cubins <= 5 ms.

    python3 benchmarks/llama_layer_bench.py [--tokens 4096,16384] [--sequence 4096] [--json out.json]

The kernlathe layer computes the gate/up projection and its SiLU-gated product (silu(gate) * up) in one GEMM,
kernlathe.torch.silu_gated_linear (the gemm_bf16_silu_gated kernel) over the weight interleave_gate_up builds once
when the weights are made (a model's loader would); the PyTorch layer with F.linear, F.silu and a product. KERNLATHE_EXPORT names an export directory
(`tune export ... --arch sm_90 -o DIR`, cubins included) for the
kernels; without it the package's databases and templates are used, compiled by NVRTC or taken from the cubin cache.
"""

import argparse
import cProfile
import json
import math
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTERMEDIATE, EPS = 4096, 32, 8, 128, 14336, 1e-5
FLOORS = {"speedup_over_eager": 1.15, "speedup_over_compile": 1.0, "relative_error": 1e-2, "overhead_us": 3.0,
          "first_call_ms": 5.0}


def read_workload():
    """The layer's shapes from workloads/llama3-8b.yaml where PyYAML is there, checked against the constants."""
    path = Path(__file__).resolve().parents[1] / "workloads" / "llama3-8b.yaml"
    try:
        import yaml
    except ImportError:
        return f"{path.name} (not read: no PyYAML; built-in shapes)"
    workload = yaml.safe_load(path.read_text())
    attention = workload["attention"]
    assert (attention["heads"], attention["kv_heads"], attention["head_dim"]) == (HEADS, KV_HEADS, HEAD_DIM)
    shapes = {gemm["name"]: (gemm["N"], gemm["K"]) for gemm in workload["gemm"]}
    assert shapes["qkv_proj"] == ((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN)
    assert shapes["gate_up_proj"] == (2 * INTERMEDIATE, HIDDEN) and shapes["down_proj"] == (HIDDEN, INTERMEDIATE)
    assert workload["rmsnorm"]["cols"] == HIDDEN and workload["rmsnorm"]["eps"] == EPS
    return str(path.name)


def make_weights(dtype, device, seed=0):
    generator = torch.Generator(device=device).manual_seed(seed)

    def weight(rows, columns):
        return (torch.randn(rows, columns, generator=generator, device=device) / math.sqrt(columns)).to(dtype)

    def norm(columns):
        return (1 + 0.1 * torch.randn(columns, generator=generator, device=device)).to(dtype)

    weights = {"norm1": norm(HIDDEN), "qkv": weight((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN),
               "o": weight(HIDDEN, HIDDEN), "norm2": norm(HIDDEN), "gate_up": weight(2 * INTERMEDIATE, HIDDEN),
               "down": weight(HIDDEN, INTERMEDIATE)}
    return weights


def interleaved(weights):
    """The gate/up weight as kernlathe.torch.silu_gated_linear takes it (rows of gate and up interleaved), made once."""
    import kernlathe.torch as kt

    return kt.interleave_gate_up(weights["gate_up"])


def silu_gated(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


def torch_layer(x, w, sequence):
    tokens = x.shape[0]
    batch = tokens // sequence
    h = F.rms_norm(x, (HIDDEN,), w["norm1"], EPS)
    q, k, v = F.linear(h, w["qkv"]).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
    q = q.reshape(batch, sequence, HEADS, HEAD_DIM).transpose(1, 2)
    k = k.reshape(batch, sequence, KV_HEADS, HEAD_DIM).transpose(1, 2)
    v = v.reshape(batch, sequence, KV_HEADS, HEAD_DIM).transpose(1, 2)
    attended = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    x = x + F.linear(attended.transpose(1, 2).reshape(tokens, HIDDEN), w["o"])
    h = F.rms_norm(x, (HIDDEN,), w["norm2"], EPS)
    return x + F.linear(silu_gated(F.linear(h, w["gate_up"])), w["down"])


def kernlathe_layer(x, w, sequence, gate_up):
    """gate_up: interleaved(w), the gated GEMM's weight."""
    import kernlathe.torch as kt

    tokens = x.shape[0]
    batch = tokens // sequence
    h = kt.rms_norm(x, w["norm1"], EPS)
    qkv = kt.linear(h, w["qkv"]).view(batch, sequence, HEADS + 2 * KV_HEADS, HEAD_DIM)
    q, k, v = qkv.split([HEADS, KV_HEADS, KV_HEADS], dim=2)
    attended = kt.attention(q, k, v, causal=True, layout="bshd")
    x = kt.linear(attended.reshape(tokens, HIDDEN), w["o"], None, x)          # O projection + residual, fused
    h = kt.rms_norm(x, w["norm2"], EPS)
    gated = kt.silu_gated_linear(h, gate_up)                                  # gate/up + SiLU-gated product, fused
    return kt.linear(gated, w["down"], None, x)                                # down projection + residual, fused


def time_interleaved_ms(functions, repeats, warmup=3):
    """Each function's median time and spread ((max - min) / median) over `repeats` calls, the functions taking turns
    call by call (CUDA events around one call, after a sync), so that each sees the same clocks and power state. Timed
    one after the other (505f879), kernlathe's layer, timed last, measured 14.061 ms at 16384 tokens, 2 ms above the
    sum of its steps; taking turns (81c2838), 11.812 and 11.747 ms in two runs (results/python/README.md)."""
    for function in functions:
        for _ in range(warmup):
            function()
    torch.cuda.synchronize()
    times = [[] for _ in functions]
    for _ in range(repeats):
        for index, function in enumerate(functions):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            function()
            stop.record()
            stop.synchronize()
            times[index].append(start.elapsed_time(stop))
    return [(statistics.median(each), (max(each) - min(each)) / statistics.median(each)) for each in times]


def time_back_to_back_ms(function, calls, warmup=3):
    """The mean time of one call among `calls` launched back to back between two CUDA events, after a warm-up: what
    a step costs inside a layer, where the GPU never idles between steps. (One call between events after a sync
    catches the clocks coming up from idle and the launch latency: at 4096 tokens the steps timed that way summed to
    0.45 ms more than PyTorch's whole layer measured, results/python/2026-11-29-h200-edcaae8/.)"""
    for _ in range(warmup):
        function()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        function()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / calls


def relative_error(output, expected):
    difference = output.float() - expected
    return (difference.norm() / expected.norm()).item()


def layer_section(tokens, sequence, repeats, results):
    weights = make_weights(torch.bfloat16, "cuda")
    weights32 = {name: tensor.float() for name, tensor in weights.items()}
    x = torch.randn(tokens, HIDDEN, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    x16 = x.to(torch.bfloat16)
    gate_up = interleaved(weights)
    with torch.no_grad():
        expected = torch_layer(x16.float(), weights32, sequence)
        eager_out = torch_layer(x16, weights, sequence)
        kernlathe_out = kernlathe_layer(x16, weights, sequence, gate_up)
        compiled = torch.compile(torch_layer)
        compiled_out = compiled(x16, weights, sequence)
        (eager_ms, eager_spread), (compile_ms, compile_spread), (kernlathe_ms, kernlathe_spread) = time_interleaved_ms(
            [lambda: torch_layer(x16, weights, sequence), lambda: compiled(x16, weights, sequence),
             lambda: kernlathe_layer(x16, weights, sequence, gate_up)], repeats)
    row = {"tokens": tokens, "sequence": sequence, "batch": tokens // sequence,
           "eager_ms": eager_ms, "compile_ms": compile_ms, "kernlathe_ms": kernlathe_ms,
           "spreads": {"eager": eager_spread, "compile": compile_spread, "kernlathe": kernlathe_spread},
           "speedup_over_eager": eager_ms / kernlathe_ms, "speedup_over_compile": compile_ms / kernlathe_ms,
           "relative_error": {"kernlathe": relative_error(kernlathe_out, expected),
                              "eager": relative_error(eager_out, expected),
                              "compile": relative_error(compiled_out, expected)}}
    results["layers"].append(row)
    print(f"tokens {tokens} (batch {row['batch']} x sequence {sequence}): eager {eager_ms:.3f} ms, "
          f"torch.compile {compile_ms:.3f} ms, kernlathe {kernlathe_ms:.3f} ms (spreads {eager_spread:.3f} "
          f"{compile_spread:.3f} {kernlathe_spread:.3f})")
    print(f"  kernlathe: {row['speedup_over_eager']:.3f}x eager (floor {FLOORS['speedup_over_eager']}), "
          f"{row['speedup_over_compile']:.3f}x torch.compile (floor {FLOORS['speedup_over_compile']})")
    errors = row["relative_error"]
    print(f"  relative L2 error vs the fp32 layer: kernlathe {errors['kernlathe']:.2e}, eager bf16 "
          f"{errors['eager']:.2e}, torch.compile bf16 {errors['compile']:.2e} (floor {FLOORS['relative_error']:.0e})")
    del weights, weights32, x, x16, gate_up, expected, eager_out, kernlathe_out, compiled_out
    torch.cuda.empty_cache()


def breakdown_section(tokens, sequence, repeats, results):
    """Each step of the layer alone, PyTorch's op against kernlathe's, on the same inputs: where the layer's time goes.
    Each figure is the mean of `repeats` calls launched back to back (time_back_to_back_ms)."""
    import kernlathe.torch as kt

    w = make_weights(torch.bfloat16, "cuda")
    batch = tokens // sequence
    generator = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(tokens, HIDDEN, device="cuda", generator=generator).to(torch.bfloat16)
    qkv = F.linear(x, w["qkv"]).view(batch, sequence, HEADS + 2 * KV_HEADS, HEAD_DIM)
    q, k, v = qkv.split([HEADS, KV_HEADS, KV_HEADS], dim=2)
    q_bhsd, k_bhsd, v_bhsd = (tensor.transpose(1, 2) for tensor in (q, k, v))
    attended = torch.randn(tokens, HIDDEN, device="cuda", generator=generator).to(torch.bfloat16)
    gate_up_weight = interleaved(w)
    gated = silu_gated(F.linear(x, w["gate_up"]))
    steps = [
        ("RMSNorm", lambda: F.rms_norm(x, (HIDDEN,), w["norm1"], EPS), lambda: kt.rms_norm(x, w["norm1"], EPS)),
        ("QKV projection", lambda: F.linear(x, w["qkv"]), lambda: kt.linear(x, w["qkv"])),
        ("attention (causal GQA)", lambda: F.scaled_dot_product_attention(q_bhsd, k_bhsd, v_bhsd, is_causal=True,
                                                                           enable_gqa=True),
         lambda: kt.attention(q, k, v, causal=True, layout="bshd")),
        ("O projection + residual", lambda: x + F.linear(attended, w["o"]), lambda: kt.linear(attended, w["o"], None, x)),
        ("gate/up + SiLU-gated product", lambda: silu_gated(F.linear(x, w["gate_up"])),
         lambda: kt.silu_gated_linear(x, gate_up_weight)),
        ("down projection + residual", lambda: x + F.linear(gated, w["down"]),
         lambda: kt.linear(gated, w["down"], None, x)),
    ]
    rows = []
    print(f"each step alone at {tokens} tokens (mean of {repeats} calls back to back): PyTorch eager, kernlathe, "
          "PyTorch / kernlathe")
    with torch.no_grad():
        for name, in_torch, in_kernlathe in steps:
            torch_ms = time_back_to_back_ms(in_torch, repeats)
            kernlathe_ms = time_back_to_back_ms(in_kernlathe, repeats)
            rows.append({"step": name, "torch_ms": torch_ms, "kernlathe_ms": kernlathe_ms})
            print(f"  {name:28s} {torch_ms:8.4f} ms {kernlathe_ms:8.4f} ms  {torch_ms / kernlathe_ms:6.3f}")
    total_torch = sum(row["torch_ms"] for row in rows)
    total_kernlathe = sum(row["kernlathe_ms"] for row in rows)
    print(f"  {'sum (RMSNorm counted once)':28s} {total_torch:8.4f} ms {total_kernlathe:8.4f} ms  "
          f"{total_torch / total_kernlathe:6.3f}")
    results.setdefault("breakdown", []).append({"tokens": tokens, "steps": rows})
    del w, x, qkv, q, k, v, attended, gate_up_weight, gated
    torch.cuda.empty_cache()


def overhead_section(results, calls=5000):
    """A kernlathe.torch op on a tiny problem against Kernel.time_launches (the same kernel and arguments launched
    from a C++ loop, Kernel::launch binding them by name each time): host time per call over `calls` calls, the
    stream synchronised at the end of each loop, the best of three loops; the GPU kept from being the limit by a tiny
    kernel. Also the C++ loop over a PreparedLaunch (what the op's native call does, without Python)."""
    import kernlathe.torch as kt

    x = torch.randn(1, HIDDEN, device="cuda").to(torch.bfloat16)
    weight = torch.ones(HIDDEN, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    kt.rms_norm(x, weight, EPS)
    kernel = kt.runtime(torch.cuda.current_device()).kernel("rmsnorm_bf16", ROWS=1, COLS=HIDDEN)
    arguments = dict(input=x, weight=weight, output=out, epsilon=EPS)
    stream = torch.cuda.current_stream().cuda_stream

    def per_call_us(function):
        function()
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            function()
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - start) / calls * 1e6)
        return best

    cpp_us = per_call_us(lambda: kernel.time_launches(calls, stream, **arguments))
    prepared_us = per_call_us(lambda: kernel.time_launches(calls, stream, prepared=True, **arguments))

    def op_loop():
        for _ in range(calls):
            kt.rms_norm(x, weight, EPS)

    def op_out_loop():
        for _ in range(calls):
            kt.rms_norm(x, weight, EPS, out=out)

    def allocation_loop():
        for _ in range(calls):
            torch.empty_like(x)

    def torch_loop():
        for _ in range(calls):
            F.rms_norm(x, (HIDDEN,), weight, EPS)

    def dispatched_loop():
        for _ in range(calls):
            torch.ops.kernlathe.rms_norm(x, weight, EPS)

    op_us = per_call_us(op_loop)
    op_out_us = per_call_us(op_out_loop)
    allocation_us = per_call_us(allocation_loop)
    dispatched_us = per_call_us(dispatched_loop)
    torch_us = per_call_us(torch_loop)
    print("where a kernlathe.torch.rms_norm call's host time goes (cProfile over the loop, own time per call; the "
          "profiler's own cost inflates every figure):")
    profile = cProfile.Profile()
    profile.runcall(op_loop)
    torch.cuda.synchronize()
    entries = sorted(pstats.Stats(profile).stats.items(), key=lambda item: -item[1][2])[:12]
    for (file, line, function), (_, calls_made, own, _, _) in entries:
        print(f"  {own / calls * 1e6:7.2f} us  {calls_made // calls:3d} call(s)  {function} ({Path(file).name}:{line})")
    # The floor compares like with like: the C++ loop launches into buffers that exist, as the op does with out=.
    # The allocating call's overhead adds PyTorch's allocation of the output (empty_like, timed alone beside it).
    results["overhead"] = {"cpp_launch_us": cpp_us, "cpp_prepared_launch_us": prepared_us, "op_call_us": op_out_us,
                           "overhead_us": op_out_us - cpp_us, "allocating_op_call_us": op_us,
                           "allocating_overhead_us": op_us - cpp_us, "empty_like_us": allocation_us,
                           "dispatched_op_call_us": dispatched_us, "dispatched_overhead_us": dispatched_us - cpp_us,
                           "torch_rms_norm_us": torch_us, "calls": calls, "kernel": "rmsnorm_bf16 ROWS=1,COLS=4096"}
    verdict = "met" if op_out_us - cpp_us <= FLOORS["overhead_us"] else "MISSED"
    print(f"per call (rmsnorm_bf16 at 1 x {HIDDEN}, {calls} calls): C++ Kernel::launch {cpp_us:.2f} us "
          f"(PreparedLaunch::launch {prepared_us:.2f} us), kernlathe.torch.rms_norm(..., out=) {op_out_us:.2f} us: "
          f"overhead {op_out_us - cpp_us:.2f} us (floor {FLOORS['overhead_us']}: {verdict}); allocating its output "
          f"{op_us:.2f} us: {op_us - cpp_us:.2f} us (torch.empty_like alone {allocation_us:.2f} us); "
          f"through the dispatcher (torch.ops.kernlathe.rms_norm, as under torch.compile) {dispatched_us:.2f} us: "
          f"{dispatched_us - cpp_us:.2f} us; torch's own F.rms_norm {torch_us:.2f} us")


def first_call_section(results):
    """Each kernel of the layer from a fresh Runtime (this process's CUDA context already up, as in a PyTorch
    program): the runtime's first-use time and where the binary came from."""
    import kernlathe

    runtime = kernlathe.Runtime(os.environ.get("KERNLATHE_EXPORT") or None)
    problems = [("rmsnorm_bf16", dict(ROWS=4096, COLS=HIDDEN)),
                ("gemm_bf16", dict(M=4096, N=6144, K=HIDDEN, B_LAYOUT=1)),
                ("gemm_bf16_bias_residual", dict(M=4096, N=HIDDEN, K=INTERMEDIATE, B_LAYOUT=1))]
    rows = []
    for name, problem in problems:
        start = time.perf_counter()
        kernel = runtime.kernel(name, **problem)
        wall_ms = (time.perf_counter() - start) * 1e3
        rows.append({"kernel": name, "binary_source": kernel.binary_source, "first_use_ms": kernel.first_use["total_ms"],
                     "wall_ms": wall_ms, "first_use": kernel.first_use})
        print(f"first call {name}: {kernel.first_use['total_ms']:.2f} ms (binary: {kernel.binary_source}; "
              f"plan {kernel.first_use['plan_ms']:.2f}, binary {kernel.first_use['binary_ms']:.2f}, module load "
              f"{kernel.first_use['module_load_ms']:.2f} ms), {wall_ms:.2f} ms from Python")
    results["first_call"] = rows


def check_floors(results):
    failures = []
    for row in results["layers"]:
        for key in ("speedup_over_eager", "speedup_over_compile"):
            if row[key] < FLOORS[key]:
                failures.append(f"tokens {row['tokens']}: {key} {row[key]:.3f} < {FLOORS[key]}")
        if row["relative_error"]["kernlathe"] > FLOORS["relative_error"]:
            failures.append(f"tokens {row['tokens']}: relative error {row['relative_error']['kernlathe']:.2e} > "
                            f"{FLOORS['relative_error']:.0e}")
    overhead = results.get("overhead")
    if overhead and overhead["overhead_us"] > FLOORS["overhead_us"]:
        failures.append(f"op overhead {overhead['overhead_us']:.2f} us > {FLOORS['overhead_us']} us")
    stored = [row for row in results.get("first_call", []) if row["binary_source"] != "NVRTC"]
    if results.get("first_call") and not stored:
        failures.append("first call: every binary came from NVRTC; set KERNLATHE_EXPORT to an export with cubins")
    for row in stored:
        if row["first_use_ms"] > FLOORS["first_call_ms"]:
            failures.append(f"first call {row['kernel']} ({row['binary_source']}): {row['first_use_ms']:.2f} ms > "
                            f"{FLOORS['first_call_ms']} ms")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", default="4096,16384")
    parser.add_argument("--sequence", type=int, default=4096, help="sequence length; batch = tokens / sequence")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", help="also write the results here")
    options = parser.parse_args()
    if not torch.cuda.is_available():
        print("llama_layer_bench: no CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 3
    import kernlathe
    import kernlathe.torch as kt

    workload = read_workload()
    properties = torch.cuda.get_device_properties(0)
    results = {"device": properties.name, "torch": torch.__version__, "kernlathe": kernlathe.__version__,
               "workload": workload, "export": os.environ.get("KERNLATHE_EXPORT") or "package databases",
               "layers": [], "floors": FLOORS, "notes": []}
    print(f"device {properties.name}, torch {torch.__version__}, kernlathe {kernlathe.__version__}, "
          f"workload {workload}, kernels from {results['export']}")
    for tokens in (int(text) for text in options.tokens.split(",")):
        if tokens % options.sequence:
            print(f"tokens {tokens} is not a multiple of the sequence {options.sequence}", file=sys.stderr)
            return 2
        layer_section(tokens, options.sequence, options.repeats, results)
        breakdown_section(tokens, options.sequence, options.repeats, results)
    print("how kernlathe's ops were chosen:")
    explanation = kernlathe.explain()
    print("\n".join("  " + choice.line() for choice in explanation))
    results["explain"] = [choice.line() for choice in explanation]
    overhead_section(results)
    first_call_section(results)
    failures = check_floors(results)
    results["failures"] = failures
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
    for failure in failures:
        print(f"FLOOR MISSED: {failure}")
    print("all floors met" if not failures else f"{len(failures)} floor(s) missed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
