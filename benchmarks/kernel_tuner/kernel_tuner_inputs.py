"""A kernel spec of this project turned into Kernel Tuner's inputs, and the Kernel Tuner run the benchmark times.

How the spec maps onto Kernel Tuner 1.5 (CuPy backend), so that both tools tune the same kernels:
  * parameters: tunable parameters with the same values; an enumeration becomes its value's index and a boolean
    0 or 1 (Kernel Tuner has neither type, and substitutes values into the kernel name as text);
  * constraints: Kernel Tuner restriction strings, translated from the space (derived values written out, problem
    symbols and device properties replaced by their numbers, enumeration names by indices, a conditional
    parameter held at its default where its condition is false), or a restriction that admits exactly the
    configurations `tune space` lists (`membership`);
  * source: a code generator that returns, per configuration, the text tune compiles (tune_spec.Instantiator),
    with `defines={}` so Kernel Tuner adds nothing to it; the kernel name is the entry point with its template
    arguments written as parameter names, which Kernel Tuner replaces by values; with lang="cupy" the name goes
    to CuPy's RawModule as an NVRTC name expression, as tune's does;
  * geometry: block dimensions from the parameters the spec's launch.block names (block_size_names), the grid
    from the spec's grid expressions (a problem_size callable with grid divisors of 1), dynamic shared memory
    from launch.shared_memory (smem_args);
  * arguments: the same sizes, dtypes and contents (tune's counter-based generator written again in NumPy, so
    random buffers are bit for bit tune's); outputs filled with all-ones bytes (NaN) as tune poisons them; the
    answer is the spec's reference configuration run once with Kernel Tuner's run_kernel, and every configuration
    is checked against it with the spec's tolerance (|x - ref| <= absolute + relative * |ref|, NaN failing), as
    tune checks it.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import tune_spec
from tune_spec import Expression, KernelSpec, SpecError

# ------------------------------------------------------------------------------------------- parameter values

def kernel_tuner_value(parameter: tune_spec.Parameter, value: Any) -> Any:
    """tune's value -> Kernel Tuner's."""
    if parameter.type == "enum":
        return parameter.values.index(value)
    if parameter.type == "bool":
        return int(bool(value))
    return value


def tune_value(parameter: tune_spec.Parameter, value: Any) -> Any:
    """Kernel Tuner's value -> tune's."""
    if parameter.type == "enum":
        return parameter.values[int(value)]
    if parameter.type == "bool":
        return bool(value)
    return value


def tune_parameters(spec: KernelSpec) -> dict[str, list[Any]]:
    """Kernel Tuner's tune_params: every parameter of the space, in the space's order."""
    return {p.name: [kernel_tuner_value(p, v) for v in p.values] for p in spec.parameters}


def to_tune_configuration(spec: KernelSpec, params: dict[str, Any]) -> dict[str, Any]:
    return {p.name: tune_value(p, params[p.name]) for p in spec.parameters}


def to_kernel_tuner_configuration(spec: KernelSpec, configuration: dict[str, Any]) -> dict[str, Any]:
    return {p.name: kernel_tuner_value(p, configuration[p.name]) for p in spec.parameters}


# ------------------------------------------------------------------------------------------- restrictions

class _RestrictionWriter(ast.NodeTransformer):
    """Rewrites one expression of the space into a restriction over Kernel Tuner's parameter values."""

    def __init__(self, spec: KernelSpec, constants: dict[str, Any], where: str):
        self.spec = spec
        self.parameters = {p.name: p for p in spec.parameters}
        self.derived = dict(spec.derived)
        self.constants = constants
        self.where = where
        self.expanding: list[str] = []

    def fail(self, what: str):
        raise SpecError(f"{self.where}: {what}: no Kernel Tuner restriction for it (use --restrictions membership)")

    def visit_Name(self, node: ast.Name):
        if node.id in self.parameters:
            return node
        if node.id in self.derived:
            if node.id in self.expanding:
                self.fail(f"derived value '{node.id}' refers to itself")
            self.expanding.append(node.id)
            expanded = self.visit(ast.parse(self.derived[node.id].text, mode="eval").body)
            self.expanding.pop()
            return expanded
        if node.id in self.constants:
            value = self.constants[node.id]
            if not isinstance(value, (int, float)):
                self.fail(f"'{node.id}' is not a number")
            return ast.Constant(value)
        if node.id in ("True", "False"):
            return ast.Constant(node.id == "True")
        self.fail(f"unknown name '{node.id}'")

    def visit_Call(self, node: ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        arguments = [self.visit(argument) for argument in node.args]
        if name == "ceil_div" and len(arguments) == 2:
            # -((-a) // b): the ceiling of a / b for integers of any sign, as tune's ceil_div.
            negated = ast.UnaryOp(ast.USub(), arguments[0])
            return ast.UnaryOp(ast.USub(), ast.BinOp(negated, ast.FloorDiv(), arguments[1]))
        if name in ("min", "max", "abs", "int", "round"):
            return ast.Call(ast.Name(name, ast.Load()), arguments, [])
        self.fail(f"function '{name}'")

    def _enumeration_of(self, node: ast.AST) -> tune_spec.Parameter | None:
        if isinstance(node, ast.Name) and node.id in self.parameters and self.parameters[node.id].type == "enum":
            return self.parameters[node.id]
        return None

    def _index_of(self, parameter: tune_spec.Parameter, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value not in parameter.values:
                # tune compares a name with an unknown value as unequal: an index no value has does the same.
                return ast.Constant(-1)
            return ast.Constant(parameter.values.index(node.value))
        if isinstance(node, (ast.List, ast.Tuple)):
            return type(node)([self._index_of(parameter, element) for element in node.elts], ast.Load())
        self.fail(f"enumeration '{parameter.name}' compared with something other than its value names")

    def visit_Compare(self, node: ast.Compare):
        # Enumeration names become indices where an enumeration parameter is compared with string constants.
        operands = [node.left] + list(node.comparators)
        indices: dict[int, ast.AST] = {}
        for index in range(len(operands) - 1):
            left, right = operands[index], operands[index + 1]
            if (parameter := self._enumeration_of(left)) is not None:
                indices[index + 1] = self._index_of(parameter, right)
            elif (parameter := self._enumeration_of(right)) is not None:
                indices[index] = self._index_of(parameter, left)
        rewritten = [indices[index] if index in indices else self.visit(operand)
                     for index, operand in enumerate(operands)]
        return ast.Compare(rewritten[0], node.ops, rewritten[1:])

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, str):
            self.fail(f"string '{node.value}' outside a comparison with an enumeration parameter")
        return node

    def translate(self, expression: Expression) -> str:
        return ast.unparse(self.visit(ast.parse(expression.text, mode="eval").body))


def translated_restrictions(spec: KernelSpec, device: dict[str, Any]) -> list[str]:
    """The space's constraints (and conditions of conditional parameters) as Kernel Tuner restriction strings."""
    constants = {**spec.problem, **device}
    restrictions = []
    for constraint in spec.constraints:
        restrictions.append(_RestrictionWriter(spec, constants, constraint.where).translate(constraint))
    for parameter in spec.parameters:
        if parameter.when is not None:
            condition = _RestrictionWriter(spec, constants, parameter.when.where).translate(parameter.when)
            default = kernel_tuner_value(parameter, parameter.default)
            restrictions.append(f"({condition}) or {parameter.name} == {default!r}")
    return restrictions


def membership_restriction(spec: KernelSpec, valid_configurations: list[dict[str, Any]]):
    """A restriction admitting exactly tune's valid configurations (tune's values, as `tune space --list` gives)."""
    names = [p.name for p in spec.parameters]
    valid = {tuple(to_kernel_tuner_configuration(spec, c)[n] for n in names) for c in valid_configurations}

    def is_valid(params: dict[str, Any]) -> bool:
        return tuple(params[n] for n in names) in valid

    return is_valid


# ------------------------------------------------------------------------------------------- kernel name, geometry

_TOKEN = re.compile(r"[A-Za-z0-9_]+")


def kernel_name(spec: KernelSpec, written: str | None = None) -> str:
    """Kernel Tuner's kernel_name: the entry point with its template arguments as parameter names. `written`
    gives it by hand where a template argument is an expression (the check in kt_compare.py proves that it
    instantiates what tune instantiates, configuration by configuration)."""
    if written:
        return written
    if not spec.template_arguments:
        return spec.entry
    names = []
    for argument in spec.template_arguments:
        name = argument.parameter_name()
        if name is None or name not in {p.name for p in spec.parameters}:
            raise SpecError(f"{argument.where}: template argument '{argument.text}' is not a parameter name; "
                            "give the case a kernel_tuner_name")
        names.append(name)
    return f"{spec.entry}<{', '.join(names)}>"


def kernel_name_for(name: str, params: dict[str, Any]) -> str:
    """What Kernel Tuner makes of the kernel name for a configuration (kernel_tuner.util.replace_param_occurrences:
    every token that is a parameter name becomes the value's text)."""
    return _TOKEN.sub(lambda match: str(params[match.group(0)]) if match.group(0) in params else match.group(0), name)


def template_arguments_of(name_expression: str) -> list[str]:
    if "<" not in name_expression:
        return []
    inside = name_expression[name_expression.index("<") + 1:name_expression.rindex(">")]
    return [argument.strip() for argument in inside.split(",")] if inside else []


def same_instantiation(tune_name: str, kernel_tuner_name: str) -> bool:
    """Both names denote the same template specialisation: equal arguments, `true`/`false` equal to 1/0 (a bool
    template parameter converts both alike)."""
    def normal(argument: str) -> str:
        return {"true": "1", "false": "0"}.get(argument, argument)

    return (tune_name.split("<")[0] == kernel_tuner_name.split("<")[0]
            and [normal(a) for a in template_arguments_of(tune_name)]
            == [normal(a) for a in template_arguments_of(kernel_tuner_name)])


def block_size_names(spec: KernelSpec) -> list[str]:
    """Kernel Tuner reads the block's dimensions from tunable parameters: launch.block must name parameters."""
    names = []
    for expression in spec.block:
        name = expression.parameter_name()
        if name is None or name not in {p.name for p in spec.parameters}:
            raise SpecError(f"{expression.where}: block dimension '{expression.text}' is not a parameter: Kernel "
                            "Tuner takes thread-block dimensions from tunable parameters only")
        names.append(name)
    return names


# ------------------------------------------------------------------------------------------- arguments, verification

NUMPY_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "u8": "uint8", "i32": "int32",
                "u32": "uint32", "i64": "int64"}

_MASK64 = (1 << 64) - 1
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def _mix(value: int) -> int:
    """SplitMix64's output function on a Python integer (tuner/run/element_values.cpp mix)."""
    value ^= value >> 30
    value = (value * 0xBF58476D1CE4E5B9) & _MASK64
    value ^= value >> 27
    value = (value * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


def _store(values, dtype, numpy):
    """Doubles to dtype as tune stores them: floats rounded to nearest (f16 through f32), integers floored and
    clamped to the type's range."""
    if dtype.kind == "f":
        return values.astype(numpy.float32).astype(dtype) if dtype.itemsize < 4 else values.astype(dtype)
    limits = numpy.iinfo(dtype)
    return numpy.clip(numpy.floor(values), limits.min, limits.max).astype(dtype)


def tune_random_values(seed: int, count: int, low: float, high: float, dtype, numpy, slice_elements: int = 1 << 22):
    """The contents tune gives a buffer with `init: {random: {seed, low, high}}`, bit for bit: element i is
    low + (high - low) * top53(mix(mix(seed) + (i + 1) * golden gamma)) / 2^53 (element_values.cpp
    random_element), computed in slices of 64-bit integers so memory stays bounded."""
    dtype = numpy.dtype(dtype)
    result = numpy.empty(count, dtype)
    base = numpy.uint64(_mix(seed & _MASK64))
    gamma = numpy.uint64(_GOLDEN_GAMMA)
    first, second = numpy.uint64(0xBF58476D1CE4E5B9), numpy.uint64(0x94D049BB133111EB)
    for begin in range(0, count, slice_elements):
        end = min(begin + slice_elements, count)
        draws = numpy.arange(begin + 1, end + 1, dtype=numpy.uint64)
        draws *= gamma
        draws += base
        draws ^= draws >> numpy.uint64(30)
        draws *= first
        draws ^= draws >> numpy.uint64(27)
        draws *= second
        draws ^= draws >> numpy.uint64(31)
        draws >>= numpy.uint64(11)
        values = draws.astype(numpy.float64)
        values *= 2.0 ** -53
        values *= high - low
        values += low
        result[begin:end] = _store(values, dtype, numpy)
    return result


def argument_values(spec: KernelSpec, instantiator: tune_spec.Instantiator, numpy) -> list[Any]:
    """The kernel's arguments as NumPy values: scalars as NumPy scalars, buffers with the contents tune gives them
    (random ones bit for bit, tune_random_values); outputs poisoned with all-ones bytes (NaN), as tune fills them
    before each verified run."""
    values = []
    for argument in spec.arguments:
        if argument.tensor_map:
            raise SpecError(f"{spec.file}: argument '{argument.name}': tensor maps cannot be passed to Kernel Tuner")
        if argument.dtype not in NUMPY_DTYPES:
            raise SpecError(f"{spec.file}: argument '{argument.name}': dtype {argument.dtype} has no NumPy type")
        dtype = numpy.dtype(NUMPY_DTYPES[argument.dtype])
        if not argument.is_buffer:
            values.append(dtype.type(instantiator.problem_value(argument.value)))
            continue
        count = int(instantiator.problem_value(argument.count))
        init = argument.init or {}
        if argument.role == "out":  # tune poisons outputs before every verified launch, whatever their init
            array = numpy.full(count * dtype.itemsize, 0xFF, dtype=numpy.uint8).view(dtype)
        elif "constant" in init:
            array = _store(numpy.full(count, float(init["constant"])), dtype, numpy)
        elif "sequence" in init:
            sequence = init["sequence"]
            array = _store(float(sequence.get("start", 0)) + numpy.arange(count, dtype=numpy.float64)
                           * float(sequence.get("step", 1)), dtype, numpy)
        else:  # random, tune's default init (seed 1, [-1, 1)) included
            random = init.get("random") or {}
            array = tune_random_values(int(random.get("seed", 1)), count, float(random.get("low", -1.0)),
                                       float(random.get("high", 1.0)), dtype, numpy)
        values.append(array)
    return values


def checked_outputs(spec: KernelSpec) -> list[bool]:
    """Which arguments the answer holds: outputs (out, inout), not scratch buffers."""
    return [a.is_buffer and a.role in ("out", "inout") and not a.scratch for a in spec.arguments]


def make_verify(spec: KernelSpec, numpy):
    """Kernel Tuner's verify function with tune's rule: |x - ref| <= absolute + relative * |ref|, NaN failing.
    The bound depends on the answer only, so it is computed once per output: with 64M-element outputs the check
    runs on the host for every configuration, and a wasteful one would slow Kernel Tuner down for nothing."""
    tolerances = [spec.tolerance_for(a.dtype) for a in spec.arguments]
    bounds: dict[int, Any] = {}

    def verify(answer, result_host, atol=None):
        for index, expected in enumerate(answer):
            if expected is None:
                continue
            got = result_host[index]
            relative, absolute = tolerances[index]
            if relative == 0 and absolute == 0:
                passed = numpy.array_equal(got, expected)  # NaN differs from everything, as in tune
            else:
                if index not in bounds:
                    bound = numpy.abs(expected)
                    bound *= relative
                    bound += absolute
                    bounds[index] = bound
                difference = numpy.subtract(got, expected)
                numpy.abs(difference, out=difference)
                passed = bool(numpy.all(difference <= bounds[index]))  # a NaN difference compares false
            if not passed:
                return False
        return True

    return verify


# ------------------------------------------------------------------------------------------- the Kernel Tuner run

_ATTRIBUTES = {  # cudaDeviceAttr values (driver_types.h), read through CuPy
    "max_threads_per_block": 1, "warp_size": 10, "max_registers_per_block": 12, "sm_count": 16,
    "max_threads_per_sm": 39, "arch_major": 75, "arch_minor": 76, "max_shared_memory_per_sm": 81,
    "max_registers_per_sm": 82, "max_shared_memory_per_block": 97, "max_blocks_per_sm": 106,
}


def device_properties(device_index: int = 0) -> dict[str, int]:
    """tune's device properties of a GPU, read through CuPy (the opt-in shared memory per block, as tune)."""
    import cupy

    properties = {name: int(cupy.cuda.runtime.deviceGetAttribute(attribute, device_index))
                  for name, attribute in _ATTRIBUTES.items()}
    properties["arch"] = 10 * properties["arch_major"] + properties["arch_minor"]
    return properties


def kernel_tuner_options(spec: KernelSpec) -> list[str]:
    """NVRTC options Kernel Tuner passes to CuPy: the spec's own (CuPy adds the architecture of the GPU and its
    own options); the template's folder on the include path, where tune hands the same headers in memory."""
    return list(spec.compile_options) + ["-I" + str(spec.template_file.parent.resolve())]


def run(plan: dict[str, Any]) -> dict[str, Any]:
    """One Kernel Tuner tuning run as a user's script does it: read the inputs, draw the arguments, compute the
    answer from the reference configuration, tune. plan: see kt_compare.py kernel_tuner_plan. The summary says
    where the time went: phases of this process (seconds) and Kernel Tuner's own totals (milliseconds)."""
    clock = time.perf_counter()
    phases = {}

    def phase(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phases[name] = now - clock
        clock = now

    import numpy
    import kernel_tuner
    phase("import_seconds")

    spec = tune_spec.load_spec(plan["spec"], plan["parameters"], plan["problem"])
    device = device_properties(plan.get("device_index", 0))
    instantiator = tune_spec.Instantiator(spec, device)
    instances: dict[tuple, tune_spec.Instance] = {}

    def instance(params: dict[str, Any]) -> tune_spec.Instance:
        key = tuple(params[p.name] for p in spec.parameters)
        if key not in instances:
            instances[key] = instantiator.instantiate(to_tune_configuration(spec, params))
        return instances[key]

    if plan["restrictions"] == "membership":
        restrictions = membership_restriction(spec, plan["valid_configurations"])
    else:
        restrictions = translated_restrictions(spec, device)

    arguments = argument_values(spec, instantiator, numpy)

    def common() -> dict[str, Any]:
        # Fresh lists per call: Kernel Tuner appends default names to block_size_names.
        return dict(
            kernel_name=kernel_name(spec, plan.get("kernel_tuner_name")),
            kernel_source=lambda params: instance(params).source,
            problem_size=lambda params: instance(params).grid,
            arguments=arguments,
            grid_div_x=1, grid_div_y=1, grid_div_z=1,
            lang="cupy", compiler_options=kernel_tuner_options(spec), defines={},
            block_size_names=block_size_names(spec),
            smem_args=({"size": lambda params: instance(params).shared_memory}
                       if spec.shared_memory is not None else None),
        )

    phase("inputs_seconds")
    reference = to_kernel_tuner_configuration(spec, spec.reference_configuration())
    outputs = kernel_tuner.run_kernel(params=reference, **common())
    answer = [output if checked else None for output, checked in zip(outputs, checked_outputs(spec))]
    del outputs
    phase("answer_seconds")

    strategy_options = {"max_fevals": plan["budget"]} if plan["strategy"] == "random_sample" else None
    if plan.get("seed") is not None:
        numpy.random.seed(plan["seed"])  # random_sample draws from NumPy's global generator
    results, environment = kernel_tuner.tune_kernel(
        tune_params=tune_parameters(spec), restrictions=restrictions, answer=answer, verify=make_verify(spec, numpy),
        strategy=plan["strategy"], strategy_options=strategy_options, **common())
    phase("tune_kernel_seconds")

    timed = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(timed, key=lambda r: r["time"]) if timed else None
    return {
        "evaluated": len(results),
        "timed": len(timed),
        "failed": len(results) - len(timed),
        "best_time_ms": best["time"] if best else None,
        "best_configuration": ({p.name: tune_value(p, best[p.name]) for p in spec.parameters} if best else None),
        "iterations": environment.get("iterations"),
        "device_name": environment.get("device_name"),
        "kernel_tuner_version": kernel_tuner.__version__ if hasattr(kernel_tuner, "__version__") else None,
        "phases": phases,
        "kernel_tuner_totals_ms": {key: environment.get(key) for key in (
            "total_compile_time", "total_verification_time", "total_benchmark_time", "total_framework_time",
            "total_strategy_time", "overhead_time")},
    }


def main(arguments: list[str]) -> int:
    """kernel_tuner_inputs.py PLAN.json RESULT.json: the process the benchmark times.
    kernel_tuner_inputs.py --device-properties: the GPU's properties as tune names them, as JSON."""
    if arguments == ["--device-properties"]:
        print(json.dumps(device_properties()))
        return 0
    started = time.time()
    plan = json.loads(Path(arguments[0]).read_text())
    summary = run(plan)
    summary["seconds_inside"] = time.time() - started
    Path(arguments[1]).write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
