"""Runtime and Kernel: the C++ runtime library's classes (include/kernlathe/runtime.h) for Python callers."""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from kernlathe import _kernlathe
from kernlathe._arrays import buffer_of, current_stream_of, stream_handle
from kernlathe._kernlathe import KernlatheError


def bundled_data() -> Path:
    """The databases (data/database) and template sources (data/sources) installed with the package: the project's
    results/best and templates/ when the package was built."""
    return Path(__file__).parent / "data"


@dataclass(frozen=True)
class Selection:
    """Which configuration the ladder took, and why (kernlathe::Selection). rung is one of exact,
    same_arch_nearest_problem, same_arch_any_problem, same_major_arch, problem_default (the space's default for this
    problem, where no entry is near), default_configuration; rung_text the same in words; reason one sentence; entry
    the database entry taken (None on the last rungs)."""

    kernel: str
    problem: Dict[str, int]
    configuration: Dict[str, Any]
    rung: str
    rung_text: str
    reason: str
    problem_distance: float = 0.0
    entry: Optional[Dict[str, Any]] = None
    device: Optional[str] = None

    @classmethod
    def _from_native(cls, kernel, problem, native, device=None):
        return cls(kernel=kernel, problem=dict(problem), configuration=dict(native["configuration"]),
                   rung=native["rung"], rung_text=native["rung_text"], reason=native["reason"],
                   problem_distance=native["problem_distance"], entry=native["entry"], device=device)

    def __str__(self):
        return f"{self.kernel} [{self.rung_text}] {self.reason}"


def _ordered(problem, symbols):
    """A problem in the description's symbol order (the C++ side hands it over sorted by name), others after."""
    ordered = {symbol: problem[symbol] for symbol in symbols if symbol in problem}
    ordered.update((symbol, value) for symbol, value in problem.items() if symbol not in ordered)
    return ordered


def _is_number(value):
    return isinstance(value, (int, float)) and not hasattr(value, "__dlpack__")


class Kernel:
    """A kernel selected and loaded for one problem (kernlathe::Kernel). Launch it with launch(**arguments)."""

    def __init__(self, native, runtime):
        self._native = native
        self._runtime = runtime  # keeps the native Runtime, which owns the kernel, alive
        self.name = native.name
        symbols = runtime.problem_symbols(self.name) if runtime is not None else []
        self.problem = _ordered(native.problem, symbols)
        self.selection = Selection._from_native(self.name, self.problem, native.selection)
        self.arguments = {argument["name"]: argument for argument in native.arguments}

    @property
    def binary_source(self) -> str:
        """Where the binary came from on first use: embedded, exported, disk cache or NVRTC."""
        return self._native.binary_source

    @property
    def first_use(self) -> Dict[str, float]:
        return dict(self._native.first_use)

    @property
    def compile_ms(self) -> float:
        return self._native.compile_ms

    @property
    def shape(self):
        """(grid, block, dynamic shared bytes) of a launch."""
        return self._native.shape

    def _split(self, arguments):
        pointers, scalars, arrays = [], [], []
        for name, value in arguments.items():
            if _is_number(value):
                scalars.append((name, value))
                continue
            buffer = buffer_of(name, value)
            described = self.arguments.get(name)
            if described is not None and described["kind"] == "buffer":
                needed = described["count"] * described["element_bytes"]
                if buffer.bytes < needed:
                    raise KernlatheError(
                        f"{self.name}: argument {name} holds {buffer.bytes} bytes; the kernel reads or writes "
                        f"{described['count']} elements of {described['dtype']} ({needed} bytes) at "
                        f"{_problem_text(self.problem)}")
            pointers.append((name, buffer.address))
            arrays.append(value)
        return pointers, scalars, arrays

    def launch(self, stream=None, **arguments):
        """Launches asynchronously: buffers by name (any object with DLPack or __cuda_array_interface__, on the
        GPU), scalars as numbers (unset ones take the kernel's default). stream: an int, a torch.cuda.Stream or a CuPy
        stream; None takes the current stream of the first array's library (torch, CuPy), else the default stream."""
        pointers, scalars, arrays = self._split(arguments)
        handle = current_stream_of(arrays) if stream is None else stream_handle(stream)
        self._native.launch(pointers, scalars, handle)

    def prepare(self, pointer_names, scalar_names=()):
        """A launch prepared for a fixed set of names (kernlathe::PreparedLaunch): prepared(stream, *addresses,
        *scalars) with the stream and the addresses as ints and the values in the order of the names; the argument
        layout is resolved here, once, so a call converts ints and floats and launches, with no check of the buffers
        (the path kernlathe.torch takes). Raises KernlatheError for a name that is unknown, given twice or of the wrong
        kind, or a buffer left out."""
        return self._native.prepare(list(pointer_names), list(scalar_names))

    def time_launches(self, count=1000, stream=None, prepared=False, **arguments):
        """Seconds per launch of this kernel from a C++ loop (the baseline for a Python caller's overhead): each a
        Kernel::launch (the arguments bound by name every time), or with prepared=True a PreparedLaunch::launch."""
        pointers, scalars, arrays = self._split(arguments)
        handle = current_stream_of(arrays) if stream is None else stream_handle(stream)
        timed = self._native.time_prepared_launches if prepared else self._native.time_launches
        return timed(pointers, scalars, handle, count)

    def __repr__(self):
        return f"<kernlathe.Kernel {self.name} at {_problem_text(self.problem)}: {self.selection.rung_text}>"


def _problem_text(problem):
    return ",".join(f"{symbol}={value}" for symbol, value in problem.items())


class Runtime:
    """kernlathe::Runtime. Runtime(path) takes an export directory (`tune export -o DIR`: DIR/database, DIR/sources,
    DIR/cubins), a database file or a directory of them; Runtime() the databases and sources installed with the
    package. Keyword arguments set RuntimeOptions' fields."""

    def __init__(self, path=None, *, databases=None, sources=None, cubins=None, cubin_cache="", device=0,
                 nearest_problem_distance=2.0, use_stale_entries=False):
        if path is not None and databases is not None:
            raise ValueError("Runtime: give an export directory or database paths, not both")
        if path is None and databases is None:
            path = bundled_data()
        if path is not None:
            path = Path(path)
            if (path / "database").is_dir():
                databases = [path / "database"]
                sources = sources if sources is not None else path / "sources"
                cubins = cubins if cubins is not None else path / "cubins"
            else:
                databases = [path]
        elif isinstance(databases, (str, os.PathLike)):
            databases = [databases]
        for database in databases:
            if not Path(database).exists():
                raise KernlatheError(f"Runtime: {database}: no such database file or directory")
        self.options = dict(databases=[str(database) for database in databases], sources=str(sources or ""),
                            cubins=str(cubins or ""), cubin_cache=str(cubin_cache), device=int(device),
                            nearest_problem_distance=float(nearest_problem_distance),
                            use_stale_entries=bool(use_stale_entries))
        self._native = _kernlathe.Runtime(**self.options)
        self._kernels = {}

    def kernel(self, name, problem=None, **symbols) -> Kernel:
        """The kernel for a problem (symbols not named take the kernel's defaults): selected, compiled or loaded on
        first use, from memory afterwards. Raises KernlatheError with the runtime's message."""
        requested = dict(problem or {}, **symbols)
        key = (name, tuple(sorted(requested.items())))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = Kernel(self._native.kernel(name, requested), self)
            self._kernels[key] = kernel
        return kernel

    def select(self, name, problem=None, *, arch=None, device=None, **symbols) -> Selection:
        """What kernel() would take, compiling nothing. On this machine's GPU by default; with arch ("sm_90") or
        device (a board's name, "NVIDIA H100 PCIe") on a built-in profile of it, with no GPU needed."""
        requested = dict(problem or {}, **symbols)
        if arch is None and device is None:
            native = self._native.select(name, requested)
            completed = {symbol: requested.get(symbol, default) for symbol, default in self.description(name)["problem"]}
            return Selection._from_native(name, _ordered(completed, []), native, device=self._native.device()["name"])
        native = self._native.select_on(name, requested, arch or "", device or "",
                                        self.options["nearest_problem_distance"], self.options["use_stale_entries"])
        return Selection._from_native(name, _ordered(native["problem"], self.problem_symbols(name)), native,
                                      device=native["device"]["name"])

    def description(self, name) -> Dict[str, Any]:
        """The kernel's description from its database: problem symbols with defaults, arguments, parameters."""
        return self._native.description(name)

    def problem_symbols(self, name):
        return [symbol for symbol, _default in self.description(name)["problem"]]

    def kernels(self):
        return list(self._native.kernels())

    def device(self) -> Dict[str, Any]:
        return self._native.device()

    @property
    def warnings(self):
        return list(self._native.warnings())

    def __repr__(self):
        return f"<kernlathe.Runtime databases={self.options['databases']}>"
