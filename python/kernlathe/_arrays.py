"""Device addresses of array objects: torch tensors, anything with __cuda_array_interface__ (CuPy, Numba, PyTorch),
and anything with __dlpack__ (JAX, ...). Host memory is refused with an error that names the argument: the kernels
read device memory, and a host address would fault or read garbage."""

from kernlathe._kernlathe import KernlatheError, dlpack_buffer

_DLPACK_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 13: "CUDA managed"}
_DLPACK_CUDA = 2
_DLPACK_CUDA_MANAGED = 13


class Buffer:
    __slots__ = ("address", "bytes", "library")

    def __init__(self, address, size_bytes, library):
        self.address = address
        self.bytes = size_bytes
        self.library = library


def _torch_buffer(name, tensor):
    if tensor.device.type != "cuda":
        raise KernlatheError(
            f"argument {name}: a torch tensor on {tensor.device}; kernlathe launches on a CUDA device, so pass a tensor "
            f"on it (tensor.cuda())")
    if not tensor.is_contiguous():
        raise KernlatheError(f"argument {name}: the tensor is not contiguous (strides {tuple(tensor.stride())}); "
                             f"pass tensor.contiguous()")
    return Buffer(tensor.data_ptr(), tensor.numel() * tensor.element_size(), "torch")


def _interface_buffer(name, interface):
    address, _read_only = interface["data"]
    item_bytes = int(interface["typestr"][2:])
    elements = 1
    for extent in interface["shape"]:
        elements *= extent
    strides = interface.get("strides")
    if strides is not None:
        expected = item_bytes
        for extent, stride in reversed(list(zip(interface["shape"], strides))):
            if extent > 1 and stride != expected:
                raise KernlatheError(f"argument {name}: the array is not C-contiguous (strides {tuple(strides)})")
            expected *= extent
    return Buffer(address, elements * item_bytes, "cuda_array_interface")


def buffer_of(name, value):
    """The device buffer behind value, or a KernlatheError saying why there is none."""
    module = type(value).__module__
    if module.startswith("torch") and hasattr(value, "data_ptr"):
        return _torch_buffer(name, value)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _interface_buffer(name, interface)
    if hasattr(value, "__dlpack_device__"):
        device_type, _device_id = value.__dlpack_device__()
        if device_type not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            where = _DLPACK_DEVICE_NAMES.get(int(device_type), f"DLPack device type {int(device_type)}")
            raise KernlatheError(f"argument {name}: the array lives on {where}; kernlathe launches on a CUDA device")
        _device_type, _device_id, address, size_bytes = dlpack_buffer(value)
        return Buffer(address, size_bytes, "dlpack")
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        raise KernlatheError(f"argument {name}: a host array ({type(value).__name__}); kernlathe launches on a CUDA "
                             f"device, so pass a device array (torch, CuPy, JAX)")
    raise KernlatheError(f"argument {name}: {type(value).__name__} is not an array (no DLPack, no "
                         f"__cuda_array_interface__) nor a number")


def current_stream_of(values):
    """The caller's current stream for the library of the first array among values: torch's or CuPy's; 0 (the legacy
    default stream) for others, which have no notion of a current stream."""
    for value in values:
        module = type(value).__module__
        if module.startswith("torch") and hasattr(value, "data_ptr"):
            import torch

            return torch.cuda.current_stream(value.device).cuda_stream
        if module.startswith("cupy"):
            import cupy

            return cupy.cuda.get_current_stream().ptr
    return 0


def stream_handle(stream):
    """A stream as an address: an int, a torch.cuda.Stream (cuda_stream), a CuPy stream (ptr), or None (0)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    if hasattr(stream, "__cuda_stream__"):
        _version, handle = stream.__cuda_stream__()
        return handle
    raise TypeError(f"stream: {type(stream).__name__} is not a stream (an int, a torch.cuda.Stream, a CuPy stream)")
