"""Kernel.launch's side in Python, without a GPU: which objects are buffers and which scalars, the clear errors for
host memory, and the size check against what the kernel reads at its problem. The native kernel is a stand-in that
records what would reach the C++ launch."""

import pytest

import kernlathe
from kernlathe._arrays import buffer_of, stream_handle
from kernlathe.runtime import Kernel

torch = pytest.importorskip("torch")


class NativeKernelStandIn:
    name = "saxpy"
    problem = {"N": 1024}
    selection = {"configuration": {"BLOCK": 256}, "rung": "exact", "rung_text": "exact", "reason": "planted",
                 "problem_distance": 0.0, "entry": None}
    arguments = [
        {"name": "n", "kind": "scalar", "dtype": "i64", "role": "", "count": 0, "element_bytes": 0, "default": 1024},
        {"name": "a", "kind": "scalar", "dtype": "f32", "role": "", "count": 0, "element_bytes": 0, "default": 2.5},
        {"name": "x", "kind": "buffer", "dtype": "f32", "role": "in", "count": 1024, "element_bytes": 4, "default": None},
        {"name": "y", "kind": "buffer", "dtype": "f32", "role": "inout", "count": 1024, "element_bytes": 4, "default": None},
    ]

    def __init__(self):
        self.launches = []

    def launch(self, pointers, scalars, stream):
        self.launches.append((pointers, scalars, stream))


class DeviceArray:
    """A device array as CuPy or Numba show it: __cuda_array_interface__ only."""

    def __init__(self, address, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (address, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


def kernel():
    native = NativeKernelStandIn()
    return Kernel(native, runtime=None), native


def test_cuda_array_interface_buffers_and_number_scalars_reach_the_launch():
    wrapped, native = kernel()
    wrapped.launch(x=DeviceArray(0x7000, (1024,)), y=DeviceArray(0x9000, (32, 32)), a=3.0, stream=5)
    pointers, scalars, stream = native.launches[0]
    assert pointers == [("x", 0x7000), ("y", 0x9000)]
    assert scalars == [("a", 3.0)]
    assert stream == 5


def test_a_cpu_tensor_is_a_clear_error():
    wrapped, native = kernel()
    with pytest.raises(kernlathe.KernlatheError, match=r"argument x: a torch tensor on cpu.*CUDA device"):
        wrapped.launch(x=torch.zeros(1024), y=DeviceArray(0x9000, (1024,)))
    assert native.launches == []


def test_a_host_array_through_dlpack_is_a_clear_error():
    numpy = pytest.importorskip("numpy")
    with pytest.raises(kernlathe.KernlatheError, match=r"argument y: the array lives on CPU"):
        buffer_of("y", numpy.zeros(4, dtype=numpy.float32))


def test_something_that_is_no_array_is_named():
    with pytest.raises(kernlathe.KernlatheError, match=r"argument x: str is not an array"):
        buffer_of("x", "0x7000")


def test_a_buffer_smaller_than_the_problem_needs_is_refused():
    wrapped, native = kernel()
    with pytest.raises(kernlathe.KernlatheError, match=r"argument y holds 2048 bytes.*1024 elements of f32 \(4096 bytes\)"):
        wrapped.launch(x=DeviceArray(0x7000, (1024,)), y=DeviceArray(0x9000, (512,)))
    assert native.launches == []


def test_a_strided_device_array_is_refused():
    with pytest.raises(kernlathe.KernlatheError, match="not C-contiguous"):
        buffer_of("x", DeviceArray(0x7000, (32, 32), strides=(4, 128)))


def test_stream_handles():
    assert stream_handle(None) == 0
    assert stream_handle(17) == 17

    class TorchLikeStream:
        cuda_stream = 0x1234

    class CupyLikeStream:
        ptr = 0x5678

    assert stream_handle(TorchLikeStream()) == 0x1234
    assert stream_handle(CupyLikeStream()) == 0x5678
    with pytest.raises(TypeError, match="not a stream"):
        stream_handle("default")


def test_selection_of_a_kernel_reads_as_the_runtime_said():
    wrapped, _native = kernel()
    assert wrapped.selection.rung == "exact"
    assert wrapped.selection.configuration == {"BLOCK": 256}
    assert wrapped.selection.reason == "planted"
