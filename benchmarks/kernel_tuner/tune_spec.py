"""A kernel spec of this project (kernels/*.yaml) read in Python, instantiated the way `tune` instantiates it.

What `tune` does per configuration (tuner/compile/instantiate.cpp, tuner/nvrtc/compile_request.cpp), written out
again so that another tool can compile and launch exactly the same kernels:
  * the source NVRTC compiles: a `#define` for every parameter and derived value, `#line 1 "<file>"`, the template;
  * the name expression: the entry point with its template arguments (`transpose<32, 8, 1>`);
  * the launch geometry (block, grid, dynamic shared memory) and the kernel's arguments.
Expressions are the project's Python-spelled language (README "Expressions"), so they are evaluated with Python's
own evaluator over a namespace holding the parameters, derived values, problem symbols, device properties and the
language's functions. `cubin_cache_key` computes the key of tune's cubin cache (tuner/nvrtc/cubin_cache.cpp) for
a configuration, which lets a test prove that this module writes byte for byte the source tune compiles.

No GPU, CUDA or Kernel Tuner import here: only the standard library and PyYAML.
"""

from __future__ import annotations

import ast
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Device properties an expression may name, in tune's order (tuner/spec/model.cpp device_property_values).
DEVICE_PROPERTY_NAMES = (
    "max_threads_per_block", "max_shared_memory_per_block", "max_shared_memory_per_sm", "max_registers_per_block",
    "max_registers_per_sm", "max_threads_per_sm", "max_blocks_per_sm", "sm_count", "warp_size", "arch_major",
    "arch_minor", "arch",
)

# tune's built-in sm_90 profile (`--arch sm_90`, an H100 SXM: tuner/spec/model.cpp), for checks without a GPU.
SM90_PROFILE = {
    "max_threads_per_block": 1024, "max_shared_memory_per_block": 227 * 1024, "max_shared_memory_per_sm": 228 * 1024,
    "max_registers_per_block": 65536, "max_registers_per_sm": 65536, "max_threads_per_sm": 2048,
    "max_blocks_per_sm": 32, "sm_count": 132, "warp_size": 32, "arch_major": 9, "arch_minor": 0, "arch": 90,
}

# Default tolerances per dtype (relative, absolute), as tuner/spec/model.cpp.
DEFAULT_TOLERANCE = {
    "f16": (1e-2, 1e-3), "bf16": (2e-2, 1e-2), "f32": (1e-5, 1e-6), "f64": (1e-12, 1e-12),
    "i8": (0.0, 0.0), "u8": (0.0, 0.0), "i32": (0.0, 0.0), "u32": (0.0, 0.0), "i64": (0.0, 0.0),
}


class SpecError(Exception):
    """A spec this module cannot read or a construct it does not support; the message names the file."""


# ------------------------------------------------------------------------------------------- the expression language

def _ceil_div(numerator, denominator):
    if isinstance(numerator, int) and isinstance(denominator, int):
        return -((-numerator) // denominator)
    return int(math.ceil(numerator / denominator))


def _ilog2(value):
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"math domain error: ilog2 of {value}")
        return value.bit_length() - 1
    return int(math.floor(math.log2(value)))


def _is_pow2(value):
    if isinstance(value, float):
        if not (1 <= value < 2.0 ** 63) or value != math.floor(value):
            return False
        value = int(value)
    return value > 0 and (value & (value - 1)) == 0


# The functions of README "Expressions", with tune's semantics (tuner/expr/evaluator.cpp): floor, ceil and round
# give integers, int truncates, round halves to even (as Python's round does).
FUNCTIONS = {
    "min": min, "max": max, "abs": abs, "ceil_div": _ceil_div,
    "floor": lambda x: int(math.floor(x)), "ceil": lambda x: int(math.ceil(x)),
    "log2": lambda x: math.log2(x), "ilog2": _ilog2, "is_pow2": _is_pow2,
    "int": int, "float": float, "round": round, "sqrt": math.sqrt,
}


class Expression:
    """One expression of a spec, compiled once and evaluated over a namespace of names to values."""

    def __init__(self, text: Any, where: str):
        self.text = str(text).strip()
        self.where = where
        try:
            self.tree = ast.parse(self.text, mode="eval")
        except SyntaxError as error:
            raise SpecError(f"{where}: cannot parse '{self.text}': {error.msg}") from None
        self.code = compile(self.tree, where, "eval")
        self.names = {node.id for node in ast.walk(self.tree) if isinstance(node, ast.Name)}

    def evaluate(self, scope: dict[str, Any]) -> Any:
        try:
            return eval(self.code, {"__builtins__": {}}, {**FUNCTIONS, **scope})  # noqa: S307 (our own spec files)
        except NameError as error:
            raise SpecError(f"{self.where}: '{self.text}': {error}") from None

    def parameter_name(self) -> str | None:
        """The name when the expression is a bare name (`BLOCK_X`), else None."""
        return self.tree.body.id if isinstance(self.tree.body, ast.Name) else None


# ---------------------------------------------------------------------------------------------- spec model

@dataclass
class Parameter:
    name: str
    type: str              # "int", "bool" or "enum" (tune space --json writes these); "float" where a space has reals
    values: list[Any]      # tune's values: ints, booleans, enumeration names
    default: Any
    when: Expression | None = None

    def enumeration_index(self, value: Any) -> int:
        return self.values.index(value) if self.type == "enum" else -1


@dataclass
class Argument:
    name: str
    dtype: str
    value: Expression | None = None   # scalars
    count: Expression | None = None   # buffers
    init: dict | None = None
    role: str = "in"
    scratch: bool = False
    tensor_map: bool = False

    @property
    def is_buffer(self) -> bool:
        return self.count is not None


@dataclass
class KernelSpec:
    file: Path
    name: str
    template_file: Path
    entry: str
    template_arguments: list[Expression]
    parameters: list[Parameter]
    derived: list[tuple[str, Expression]]
    constraints: list[Expression]
    problem: dict[str, Any]
    arguments: list[Argument]
    block: list[Expression]
    grid: list[Expression]
    shared_memory: Expression | None
    compile_options: list[str]
    arch_specific: bool
    reference: dict[str, Any] | str   # a configuration, or "baseline" (a library routine's output)
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)
    template_text: str = ""

    def tolerance_for(self, dtype: str) -> tuple[float, float]:
        return self.tolerance.get(dtype, DEFAULT_TOLERANCE[dtype])

    def parameter(self, name: str) -> Parameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        raise KeyError(name)

    def reference_configuration(self) -> dict[str, Any]:
        """The verification reference: the named values, the space defaults for the rest (as tune)."""
        if not isinstance(self.reference, dict):
            raise SpecError(f"{self.file}: the reference is a library baseline, which Kernel Tuner cannot run")
        return {p.name: self.reference.get(p.name, p.default) for p in self.parameters}


def parse_problem_overrides(text: str) -> dict[str, Any]:
    """`M=1024,N=2048` as tune's --problem takes it."""
    overrides: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        if "=" not in item:
            raise SpecError(f"--problem: '{item}' is not NAME=VALUE")
        name, value = (side.strip() for side in item.split("=", 1))
        overrides[name] = ast.literal_eval(value)
    return overrides


def problem_text(spec: KernelSpec) -> str:
    return ",".join(f"{name}={value}" for name, value in spec.problem.items())


def _load_yaml(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as stream:
            document = yaml.safe_load(stream)
    except OSError as error:
        raise SpecError(f"{path}: cannot read: {error.strerror}") from None
    if not isinstance(document, dict):
        raise SpecError(f"{path}: not a YAML mapping")
    return document


def load_spec(spec_file: str | Path, tune_parameters: list[dict], problem_overrides: dict[str, Any] | None = None
              ) -> KernelSpec:
    """Reads a kernel spec and its space. tune_parameters is the `parameters` list of `tune space SPEC --json`
    (names, types, values, defaults and conditions as tune resolved them: value lists, ranges and pow2 forms need
    not be parsed again here)."""
    spec_file = Path(spec_file)
    if spec_file.suffix == ".json":
        raise SpecError(f"{spec_file}: community T1 files are not supported by this benchmark")
    document = _load_yaml(spec_file)
    base = spec_file.parent
    where = str(spec_file)

    space_document = document.get("space")
    if isinstance(space_document, str):
        space_file = base / space_document
        space_document = _load_yaml(space_file)
        space_where = str(space_file)
    elif isinstance(space_document, dict):
        space_where = where + ": space"
    else:
        raise SpecError(f"{where}: 'space' is neither a file name nor a mapping")

    parameters = []
    for described in tune_parameters:
        when = described.get("when")
        parameters.append(Parameter(described["name"], described["type"], list(described["values"]),
                                    described["default"], Expression(when, f"{space_where}: when") if when else None))
    derived = [(name, Expression(text, f"{space_where}: derived.{name}"))
               for name, text in (space_document.get("derived") or {}).items()]
    constraints = [Expression(text, f"{space_where}: constraints[{index}]")
                   for index, text in enumerate(space_document.get("constraints") or [])]

    problem = dict(document.get("problem") or {})
    for name, value in (problem_overrides or {}).items():
        if name not in problem:
            raise SpecError(f"{where}: --problem names '{name}', which is not a problem symbol")
        problem[name] = value

    arguments = []
    for index, entry in enumerate(document.get("arguments") or []):
        argument_where = f"{where}: arguments[{index}]"
        dtype = entry.get("type")
        if dtype == "tensor_map":
            arguments.append(Argument(entry["name"], dtype, tensor_map=True))
            continue
        if dtype not in DEFAULT_TOLERANCE:
            raise SpecError(f"{argument_where}: unknown type '{dtype}'")
        arguments.append(Argument(
            name=entry["name"], dtype=dtype,
            value=Expression(entry["value"], argument_where + ".value") if "value" in entry else None,
            count=Expression(entry["count"], argument_where + ".count") if "count" in entry else None,
            init=entry.get("init"), role=entry.get("role", "in"), scratch=bool(entry.get("scratch", False))))

    launch = document.get("launch") or {}
    block = [Expression(text, f"{where}: launch.block[{i}]") for i, text in enumerate(launch.get("block") or [])]
    grid = [Expression(text, f"{where}: launch.grid[{i}]") for i, text in enumerate(launch.get("grid") or [])]
    shared = launch.get("shared_memory")

    verify = document.get("verify") or {}
    reference = verify.get("reference") or {}
    if not isinstance(reference, dict) and reference != "baseline":
        raise SpecError(f"{where}: verify.reference '{reference}' is neither a configuration nor 'baseline'")
    tolerance = {}
    for dtype, bounds in (verify.get("tolerance") or {}).items():
        relative, absolute = DEFAULT_TOLERANCE[dtype]
        tolerance[dtype] = (float(bounds.get("relative", relative)), float(bounds.get("absolute", absolute)))

    template_file = base / document["template"]
    try:
        template_text = template_file.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"{where}: template {template_file}: {error.strerror}") from None

    return KernelSpec(
        file=spec_file, name=document["name"], template_file=template_file, entry=document["entry"],
        template_arguments=[Expression(text, f"{where}: template_arguments[{i}]")
                            for i, text in enumerate(document.get("template_arguments") or [])],
        parameters=parameters, derived=derived, constraints=constraints, problem=problem, arguments=arguments,
        block=block, grid=grid,
        shared_memory=Expression(shared, f"{where}: launch.shared_memory") if shared is not None else None,
        compile_options=[str(option) for option in document.get("compile_options") or []],
        arch_specific=bool(document.get("arch_specific", False)), reference=reference, tolerance=tolerance,
        template_text=template_text)


# ---------------------------------------------------------------------------------------------- instantiation

def _decimal_text(value: int) -> str:
    return "(-9223372036854775807LL - 1)" if value == -(2 ** 63) else str(value)


def float_text(value: float) -> str:
    if math.isnan(value):
        return '__builtin_nan("")'
    if math.isinf(value):
        return "__builtin_huge_val()" if value > 0 else "(-__builtin_huge_val())"
    text = format(value, ".17g")
    # "%.17g" writes 2.0 as "2", which C++ would read as an int.
    return text if any(character in text for character in ".en") else text + ".0"


def define_line(name: str, value: Any, enumeration_index: int) -> str:
    """One macro as tune writes it (compile_request.cpp define_line)."""
    if isinstance(value, str):
        line = f"#define {name}_{re.sub(r'[^A-Za-z0-9_]', '_', value)} 1\n"
        return line + (f"#define {name} {enumeration_index}\n" if enumeration_index >= 0 else "")
    if isinstance(value, bool):
        return f"#define {name} {1 if value else 0}\n"
    if isinstance(value, float):
        return f"#define {name} {float_text(value)}\n"
    if -(2 ** 31) <= value < 2 ** 31:
        return f"#define {name} {value}\n"
    text = _decimal_text(value)
    return f"#define {name} {text if text.startswith('(') else text + 'LL'}\n"


def template_argument_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return float_text(value)
    return _decimal_text(value)


@dataclass
class Instance:
    """What tune compiles and launches for one configuration."""
    source: str
    name_expression: str
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    shared_memory: int


class Instantiator:
    """Instances of one spec on one device (device properties by name)."""

    def __init__(self, spec: KernelSpec, device: dict[str, Any]):
        self.spec = spec
        self.device = dict(device)
        self.header = f'#line 1 "{spec.template_file.name}"\n'
        self.headers = included_files(spec.template_file)

    def scope(self, configuration: dict[str, Any]) -> dict[str, Any]:
        """Names an expression of this configuration can use: problem, device, parameters, derived values."""
        scope = {**self.spec.problem, **self.device, **configuration}
        for name, expression in self.spec.derived:
            scope[name] = expression.evaluate(scope)
        return scope

    def derived_values(self, scope: dict[str, Any]) -> list[tuple[str, Any]]:
        return [(name, scope[name]) for name, _ in self.spec.derived]

    def instantiate(self, configuration: dict[str, Any]) -> Instance:
        spec = self.spec
        scope = self.scope(configuration)
        prelude = "".join(define_line(p.name, configuration[p.name], p.enumeration_index(configuration[p.name]))
                          for p in spec.parameters)
        prelude += "".join(define_line(name, value, -1) for name, value in self.derived_values(scope))
        name_expression = spec.entry
        if spec.template_arguments:
            arguments = [template_argument_text(argument.evaluate(scope)) for argument in spec.template_arguments]
            name_expression += "<" + ", ".join(arguments) + ">"

        def dimensions(expressions: list[Expression]) -> tuple[int, int, int]:
            values = [int(expression.evaluate(scope)) for expression in expressions]
            return tuple(values + [1] * (3 - len(values)))  # type: ignore[return-value]

        shared = int(spec.shared_memory.evaluate(scope)) if spec.shared_memory is not None else 0
        return Instance(prelude + self.header + spec.template_text, name_expression, dimensions(spec.block),
                        dimensions(spec.grid), shared)

    def is_valid(self, configuration: dict[str, Any]) -> bool:
        """tune's validity on a canonical configuration: every constraint holds."""
        scope = self.scope(configuration)
        return all(bool(constraint.evaluate(scope)) for constraint in self.spec.constraints)

    def problem_value(self, expression: Expression) -> Any:
        """A scalar value or a buffer count: an expression of problem symbols (and device properties)."""
        return expression.evaluate({**self.spec.problem, **self.device})


# ------------------------------------------------------------------------------------------- tune's cubin cache key

_INCLUDE_DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*["<]([^">]+)[">]', re.MULTILINE)


def included_files(template_file: Path) -> list[tuple[str, str]]:
    """The project headers tune hands NVRTC in memory: includes found beside the template, recursively, in the
    order tune collects them (compile_request.cpp collect_included_files)."""
    headers: list[tuple[str, str]] = []
    seen: set[str] = set()
    search_directory = template_file.parent

    def collect(text: str, source_directory: Path) -> None:
        for match in _INCLUDE_DIRECTIVE.finditer(text):
            name = match.group(1)
            if name in seen:
                continue
            for directory in (source_directory, search_directory):
                candidate = directory / name
                if candidate.is_file():
                    seen.add(name)
                    contents = candidate.read_text(encoding="utf-8")
                    headers.append((name, contents))
                    collect(contents, candidate.parent)
                    break

    collect(template_file.read_text(encoding="utf-8"), template_file.parent)
    return headers


def cuda_include_directory() -> str:
    for candidate in ([os.path.join(os.environ["CUDA_HOME"], "include")] if os.environ.get("CUDA_HOME") else []) + [
            "/usr/local/cuda/include"]:
        if os.path.isdir(candidate):
            return candidate
    return ""


def tune_compile_options(spec: KernelSpec, arch: str) -> list[str]:
    """The NVRTC options of tune's compile request (compile_request.cpp make_compile_request)."""
    options = list(spec.compile_options)
    if not any(option.startswith("-std") or option.startswith("--std") for option in options):
        options.append("--std=c++17")
    if spec.arch_specific and int(arch[3:]) >= 90 and not arch.endswith("a"):
        arch += "a"
    options.append("--gpu-architecture=" + arch)
    include = cuda_include_directory()
    if include:
        options.append("-I" + include)
    return options


_FNV128_PRIME = (1 << 88) + 0x13B
_FNV128_OFFSET = (0x6C62272E07BB0142 << 64) | 0x62B821756295C58D
_MASK128 = (1 << 128) - 1


def _fnv1a_128_fields(fields: list[bytes]) -> str:
    state = _FNV128_OFFSET
    for field_bytes in fields:
        for byte in len(field_bytes).to_bytes(8, "little") + field_bytes:
            state = ((state ^ byte) * _FNV128_PRIME) & _MASK128
    return f"{state:032x}"


def cubin_cache_key(instance: Instance, headers: list[tuple[str, str]], options: list[str], arch: str,
                    nvrtc_version: str) -> str:
    """The file name (without .cubin) under which tune caches this instance's cubin (cubin_cache.cpp cache_key)."""
    fields = [b"tuner-cubin-v1", instance.source.encode(), str(len(headers)).encode()]
    for name, contents in headers:
        fields += [name.encode(), contents.encode()]
    fields.append(str(len(options)).encode())
    fields += [option.encode() for option in options]
    fields += [instance.name_expression.encode(), nvrtc_version.encode(), arch.encode()]
    return _fnv1a_128_fields(fields)
