"""kernlathe: tuned GPU kernels from Python.

    import kernlathe
    runtime = kernlathe.Runtime("export")                  # `tune export -o export`, or database paths
    saxpy = runtime.kernel("saxpy", N=x.numel())
    print(saxpy.selection)                                 # the rung of the ladder, and why
    saxpy.launch(x=x, y=y, a=2.5)                           # torch, CuPy, JAX arrays; the current stream

`kernlathe.torch` registers the shipped kernels as torch custom ops; `kernlathe.records` reads a records file.
docs/python.md has the whole API.
"""

from kernlathe._kernlathe import DatabaseError, KernlatheError, known_archs, known_devices
from kernlathe._kernlathe import version as _library_version
from kernlathe._choices import Choice, Explanation, explain
from kernlathe.records import records
from kernlathe.runtime import Kernel, Runtime, Selection, bundled_data

__version__ = _library_version()

__all__ = [
    "Choice",
    "DatabaseError",
    "Explanation",
    "Kernel",
    "KernlatheError",
    "Runtime",
    "Selection",
    "bundled_data",
    "explain",
    "known_archs",
    "known_devices",
    "records",
]
