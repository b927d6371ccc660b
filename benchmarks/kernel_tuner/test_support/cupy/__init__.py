"""A stand-in for CuPy, for testing the Kernel Tuner run of the benchmark on a machine without a GPU.

What Kernel Tuner's CuPy backend calls is here: device memory is NumPy arrays; RawModule compiles the source for
sm_90 with the real NVRTC (through ctypes, as CuPy does through its bindings), so a kernel string or name
expression NVRTC would refuse fails here too; a launch runs a NumPy model of the kernel, registered by the test in
KERNEL_MODELS under the entry point's name. Events time nothing (every launch "takes" 1 ms).
"""

import ctypes

import numpy

ndarray = numpy.ndarray
KERNEL_MODELS = {}   # entry point name -> function(grid, block, arguments, shared_mem)
COMPILED = []        # (name expression, lowered name) of every compilation, for the test to inspect
array = numpy.array
asarray = numpy.asarray
copyto = numpy.copyto


def asnumpy(value):
    return numpy.array(value)


def get_array_module(*_):
    return numpy


class _Nvrtc:
    library = None

    @classmethod
    def compile(cls, source, name_expression, options):
        if cls.library is None:
            cls.library = ctypes.CDLL("libnvrtc.so.13")
        library = cls.library
        program = ctypes.c_void_p()
        check = lambda result, what: result == 0 or (_ for _ in ()).throw(RuntimeError(f"{what}: NVRTC error {result}"))
        check(library.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None),
              "nvrtcCreateProgram")
        check(library.nvrtcAddNameExpression(program, name_expression.encode()), "nvrtcAddNameExpression")
        encoded = [option.encode() for option in options]
        result = library.nvrtcCompileProgram(program, len(encoded), (ctypes.c_char_p * len(encoded))(*encoded))
        if result != 0:
            size = ctypes.c_size_t()
            library.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            library.nvrtcGetProgramLog(program, log)
            raise RuntimeError(f"NVRTC compilation of {name_expression} failed:\n{log.value.decode()}")
        lowered = ctypes.c_char_p()
        check(library.nvrtcGetLoweredName(program, name_expression.encode(), ctypes.byref(lowered)),
              "nvrtcGetLoweredName")
        name = lowered.value.decode()
        library.nvrtcDestroyProgram(ctypes.byref(program))
        return name


class _Function:
    def __init__(self, name_expression):
        self.name_expression = name_expression
        self.num_regs = 32

    def __call__(self, grid, block, args, stream=None, shared_mem=0):
        KERNEL_MODELS[self.name_expression.split("<")[0]](grid, block, args, shared_mem)


class RawModule:
    def __init__(self, code, options=(), name_expressions=()):
        include = "-I/usr/local/cuda/include"
        for name_expression in name_expressions:
            lowered = _Nvrtc.compile(code, name_expression, list(options) + ["--gpu-architecture=sm_90", include])
            COMPILED.append((name_expression, lowered))

    def get_function(self, name):
        return _Function(name)


from . import cuda  # noqa: E402,F401
