#!/usr/bin/env python3
"""Our fused-epilogue GEMMs against PyTorch's unfused sequences, in one process, timed the same way (issue 19).

`tune run` and PyTorch time differently (tune: one launch per sample with the baseline interleaved; a batch of
back-to-back calls here), and on the power-capped H200 the same cuBLAS GEMM measured 1.42 ms one way and 1.62 ms
the other at 8192^3. So this script launches our kernels itself, beside PyTorch's, on the same buffers: each
configuration of templates/gemm.cu is compiled with nvcc for sm_90a (as probes/ builds it), loaded through the
driver API, given TMA descriptors encoded as the evaluation worker encodes them (tuner/driver/tensor_map.cpp), and
launched on PyTorch's stream. Every variant is timed in every round (a batch of back-to-back calls between two
events per variant and round, the variants in turn), so drift between rounds affects all alike; the report gives
each variant's median over the rounds and the median of the per-round ratios.

Each output is checked first, with the fused specs' tolerance (|ours - reference| <= 2e-3 + 1.6e-2 |reference|),
against PyTorch's sequence computed in fp32 from the same bf16 inputs (not against PyTorch's bf16 result: that one
rounds the addmm to bf16 before adding the residual, and where the sum cancels that rounding alone is outside the
tolerance; 2.6% of the elements at 8192^3 with the specs' ranges, H200 2026-11-24).

VERSUS_ROUNDS sets the number of rounds (15 by default). With VERSUS_PROFILE=1 the script stops after the checks and launches every variant and every PyTorch sequence once
more between cudaProfilerStart and Stop, for `ncu --profile-from-start off` to measure one launch of each.

Usage: fused_gemm_versus_torch.py LOG_DIR [PROBLEM [EPILOGUE:KEY=VALUE,... ...]]
  LOG_DIR holds the runs of benchmarks/fused_gemm_bench.sh (plain.json, bias_gelu.json, bias_residual.json): the
  best wgmma configuration of each is measured, and the fused epilogues also in the plain GEMM's best configuration.
  PROBLEM defaults to M=8192,N=8192,K=8192. Each further argument adds a variant: the plain GEMM's best
  configuration with the given parameters changed, with the named epilogue (plain, bias_gelu or bias_residual),
  e.g. bias_residual:WG_STAGES=3. A name that starts with GEMM_ is a template macro instead of a parameter of the
  space, e.g. bias_residual:GEMM_RESIDUAL_PREFETCH_BLOCKS=0 (gemm/wgmma.cuh).

Exits 1 when an output fails its check (every variant is still timed; the last line on stderr names it), 2 on bad
usage.
"""
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_outcome import Outcome  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

outcome = Outcome("fused_gemm_versus_torch")

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("VERSUS_ROUNDS", "15"))
CALLS_PER_SAMPLE = 10
EPILOGUES = {"plain": None, "bias_gelu": "GEMM_EPILOGUE_BIAS_GELU", "bias_residual": "GEMM_EPILOGUE_BIAS_RESIDUAL"}

# cuda.h enumerations used below.
CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9
CU_TENSOR_MAP_INTERLEAVE_NONE = 0
CU_TENSOR_MAP_SWIZZLE_128B = 3
CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2
CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

driver = ctypes.CDLL("libcuda.so.1")


def check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        driver.cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else result}")


class Variant:
    """One configuration of templates/gemm.cu's wgmma path with one epilogue, compiled and ready to launch."""

    def __init__(self, epilogue, configuration, problem, sm_count):
        self.epilogue, self.configuration, self.problem = epilogue, configuration, problem
        c = configuration
        self.block_m, self.block_n, self.block_k = c["WG_BM"], c["WG_BN"], c["WG_BK"]
        self.stages, self.consumers, self.cluster = c["WG_STAGES"], c["WG_CONSUMERS"], c["WG_CLUSTER"]
        self.pingpong = bool(c["WG_PINGPONG"])
        self.threads = 128 * (1 + self.consumers)
        # The space's derived values (spaces/gemm.yaml: WG_SHARED_BYTES, WG_GRID_X), for bf16.
        self.shared_bytes = self.stages * (self.block_m + self.block_n) * self.block_k * 2 + 1024 + \
            (2 * self.stages + self.consumers) * 8
        tiles = (problem["M"] // self.block_m) * (problem["N"] // self.block_n)
        self.grid = min(sm_count, tiles) // self.cluster * self.cluster if c["WG_PERSISTENT"] else tiles
        self.name = epilogue + " " + " ".join(f"{k}={v}" for k, v in c.items() if k.startswith(("WG_", "GEMM_")))

    def defines(self):
        c = self.configuration
        values = {"GEMM_INPUT_BF16": 1, "PATH_wgmma": 1, "THREADS": self.threads, "BLOCKS_PER_SM": 1}
        for key in ("WG_BM", "WG_BN", "WG_BK", "WG_STAGES", "WG_CONSUMERS", "WG_GROUP_M", "WG_PINGPONG",
                    "WG_CLUSTER", "WG_SPREAD", "WG_PERSISTENT"):
            values[key] = int(c.get(key, 0))
        # Template macros that are not parameters of the space (GEMM_RESIDUAL_PREFETCH_BLOCKS): given as overrides.
        values.update({key: int(value) for key, value in c.items() if key.startswith("GEMM_")})
        if EPILOGUES[self.epilogue]:
            values[EPILOGUES[self.epilogue]] = 1
        return [f"-D{key}={value}" for key, value in values.items()]

    def compile(self, directory):
        source = os.path.join(directory, f"gemm_{id(self)}.cu")
        with open(source, "w") as file:
            file.write('#include "gemm.cu"\n')
        self.cubin = source[:-3] + ".cubin"
        command = ["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-O3",
                   "-I" + os.path.join(REPOSITORY, "templates"), *self.defines(), "-o", self.cubin, source]
        built = subprocess.run(command, capture_output=True, text=True)
        if built.returncode != 0:
            raise RuntimeError(f"nvcc failed for {self.name}:\n{built.stderr}")

    def load(self):
        with open(self.cubin, "rb") as file:
            image = file.read()
        self.module = ctypes.c_void_p()
        check(driver.cuModuleLoadData(ctypes.byref(self.module), image), "cuModuleLoadData")
        self.function = ctypes.c_void_p()
        check(driver.cuModuleGetFunction(ctypes.byref(self.function), self.module, b"gemm"), "cuModuleGetFunction")
        check(driver.cuFuncSetAttribute(self.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        self.shared_bytes), "cuFuncSetAttribute")

    def bind(self, a, b, bias, residual, c):
        """The kernel's parameters for these buffers (kept alive on self)."""
        m, n, k = self.problem["M"], self.problem["N"], self.problem["K"]
        self.maps = [tensor_map(a, [k, m], [self.block_k, self.block_m]),
                     tensor_map(b, [n, k], [64, self.block_k])]
        values = [ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k), ctypes.c_float(1.0), ctypes.c_float(0.0),
                  ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr())]
        if self.epilogue != "plain":
            values.append(ctypes.c_void_p(bias.data_ptr()))
        if self.epilogue == "bias_residual":
            values.append(ctypes.c_void_p(residual.data_ptr()))
        values.append(ctypes.c_void_p(c.data_ptr()))
        self.values = values
        pointers = [ctypes.cast(ctypes.pointer(value), ctypes.c_void_p) for value in values]
        pointers += [ctypes.c_void_p(address) for _, address in self.maps]
        self.parameters = (ctypes.c_void_p * len(pointers))(*pointers)
        self.output = c

    def launch(self):
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(driver.cuLaunchKernel(self.function, self.grid, 1, 1, self.threads, 1, 1, self.shared_bytes, stream,
                                    self.parameters, None), "cuLaunchKernel")


def tensor_map(tensor, dims, box):
    """A 2-D bf16 CUtensorMap over a dense row-major tensor, 128-byte swizzle: (buffer, 64-byte-aligned address)."""
    buffer = ctypes.create_string_buffer(128 + 64)
    address = (ctypes.addressof(buffer) + 63) // 64 * 64
    rank = len(dims)
    dims_array = (ctypes.c_uint64 * rank)(*dims)
    strides = (ctypes.c_uint64 * (rank - 1))(*[dims[0] * 2])
    box_array = (ctypes.c_uint32 * rank)(*box)
    element_strides = (ctypes.c_uint32 * rank)(*([1] * rank))
    check(driver.cuTensorMapEncodeTiled(ctypes.c_void_p(address), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank,
                                        ctypes.c_void_p(tensor.data_ptr()), dims_array, strides, box_array,
                                        element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
          "cuTensorMapEncodeTiled")
    return buffer, address


def best_configuration(log_dir, tag):
    run = json.load(open(os.path.join(log_dir, tag + ".json")))
    for result in run["best"]:
        if result["configuration"]["PATH"] == "wgmma":
            return result["configuration"]
    raise SystemExit(f"{tag}: no wgmma configuration among the run's best")


def main(arguments):
    if not arguments:
        outcome.usage("no LOG_DIR", __doc__)
    log_dir = arguments[0]
    problem_text = arguments[1] if len(arguments) > 1 else "M=8192,N=8192,K=8192"
    problem = {key: int(value) for key, value in (item.split("=") for item in problem_text.split(","))}
    m, n, k = problem["M"], problem["N"], problem["K"]
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context, current on this thread for the driver calls below
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count

    plain_best = best_configuration(log_dir, "plain")
    variants = [Variant("plain", plain_best, problem, sm_count)]
    for epilogue in ("bias_gelu", "bias_residual"):
        own = best_configuration(log_dir, epilogue)
        variants.append(Variant(epilogue, own, problem, sm_count))
        if own != plain_best:
            variants.append(Variant(epilogue, plain_best, problem, sm_count))
    for extra in arguments[2:]:
        epilogue, _, overrides = extra.partition(":")
        configuration = dict(plain_best)
        for item in filter(None, overrides.split(",")):
            key, value = item.split("=")
            configuration[key] = {"true": True, "false": False}.get(value.lower(), None)
            if configuration[key] is None:
                configuration[key] = int(value)
        if epilogue not in EPILOGUES:
            outcome.usage(f"unknown epilogue {epilogue}", __doc__)
        variants.append(Variant(epilogue, configuration, problem, sm_count))
    names = [variant.name for variant in variants]
    variants = [variant for index, variant in enumerate(variants) if variant.name not in names[:index]]
    with tempfile.TemporaryDirectory() as directory, ThreadPoolExecutor(len(variants)) as pool:
        list(pool.map(lambda variant: variant.compile(directory), variants))
        for variant in variants:
            variant.load()

    generator = torch.Generator(device="cuda").manual_seed(11)

    def uniform(shape, low, high):
        return (torch.rand(shape, device="cuda", generator=generator) * (high - low) + low).to(torch.bfloat16)

    a, b = uniform((m, k), -1, 1), uniform((k, n), -1, 1)
    bias, residual = uniform((n,), -8, 8), uniform((m, n), -32, 32)
    for variant in variants:
        variant.bind(a, b, bias, residual, torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16))

    # PyTorch's sequences, and the reference outputs.
    sequences = {
        "torch mm": lambda: torch.mm(a, b),
        "torch gelu(addmm)": lambda: F.gelu(torch.addmm(bias, a, b)),
        "torch addmm + r": lambda: torch.addmm(bias, a, b) + residual,
    }
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products: a reference of fp32 accuracy
    a32, b32, bias32, residual32 = a.float(), b.float(), bias.float(), residual.float()
    product = torch.addmm(bias32, a32, b32)
    references = {"plain": torch.mm(a32, b32), "bias_gelu": F.gelu(product), "bias_residual": product + residual32}
    del a32, b32, product
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    report = {"problem": problem_text, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "variants": {}, "checks": {}}
    for variant in variants:
        variant.launch()
        torch.cuda.synchronize()
        reference = references[variant.epilogue]
        difference = (variant.output.float() - reference).abs()
        allowed = 2e-3 + 1.6e-2 * reference.abs()
        failing = int((difference > allowed).sum().item()) + int(torch.isnan(variant.output).sum().item())
        report["checks"][variant.name] = {"failing": failing, "largest_difference": difference.max().item()}
        if failing:
            outcome.failed(f"{variant.name}: {failing} elements outside the tolerance")
    calls = {variant.name: variant.launch for variant in variants}
    calls.update(sequences)
    if os.environ.get("VERSUS_PROFILE") == "1":  # for ncu --profile-from-start off: one launch of each, in order
        print(json.dumps(report))
        print("profiled in this order: " + "; ".join(calls), file=sys.stderr)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for call in calls.values():
            call()
            torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        outcome.finish(sys.stderr)

    # Warm-up: every call in turn for at least two seconds, then the timed rounds.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    while True:
        for call in calls.values():
            call()
        end.record()
        end.synchronize()
        if start.elapsed_time(end) > 2000:
            break
    samples = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            start.record()
            for _ in range(CALLS_PER_SAMPLE):
                call()
            end.record()
            end.synchronize()
            samples[name].append(start.elapsed_time(end) / CALLS_PER_SAMPLE)
    flops = 2 * m * n * k
    for name, values in samples.items():
        median = statistics.median(values)
        report["variants"][name] = {"median_ms": median, "tflops": flops / (median * 1e-3) / 1e12,
                                    "spread": (max(values) - min(values)) / median, "rounds_ms": values}

    def ratio(first, second):  # median over the rounds of first / second in the same round
        return statistics.median(x / y for x, y in zip(samples[first], samples[second]))

    plain = variants[0].name
    comparisons = {}
    for variant in variants[1:]:
        torch_name = "torch gelu(addmm)" if variant.epilogue == "bias_gelu" else "torch addmm + r"
        if variant.epilogue == "plain":
            comparisons[variant.name] = {"over ours plain": ratio(variant.name, plain)}
            continue
        comparisons[variant.name] = {"over ours plain": ratio(variant.name, plain),
                                     "over " + torch_name: ratio(variant.name, torch_name)}
    comparisons["torch gelu(addmm)"] = {"over torch mm": ratio("torch gelu(addmm)", "torch mm")}
    comparisons["torch addmm + r"] = {"over torch mm": ratio("torch addmm + r", "torch mm")}
    comparisons[plain] = {"over torch mm": ratio(plain, "torch mm")}
    report["comparisons"] = comparisons
    print(json.dumps(report))

    print(f"{report['device']}, PyTorch {report['torch']}, bf16 {problem_text}: {ROUNDS} rounds, "
          f"{CALLS_PER_SAMPLE} back-to-back calls per sample", file=sys.stderr)
    for name, timing in report["variants"].items():
        check_text = ""
        if name in report["checks"]:
            check_text = f"  check: {report['checks'][name]['failing']} failing"
        print(f"  {timing['median_ms']:.4f} ms  {timing['tflops']:6.1f} TFLOPS  spread {100 * timing['spread']:4.1f}%"
              f"  {name}{check_text}", file=sys.stderr)
    for name, ratios in comparisons.items():
        text = ", ".join(f"{key} {100 * (value - 1):+.2f}%" for key, value in ratios.items())
        print(f"  {name}: {text}", file=sys.stderr)
    outcome.finish(sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
