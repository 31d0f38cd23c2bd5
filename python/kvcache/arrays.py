"""Arrays as the compiled functions see them: the address, shape, element
strides, element type and device of an array, read in place (nothing is
copied, so a function's outputs land in the caller's array), from

    numpy arrays                 their attributes
    torch tensors                tensor.data_ptr(), shape, stride(), dtype,
                                 device: bf16 (torch.bfloat16) as itself,
                                 fp8 codes as torch.uint8
    DLPack producers             the DLTensor of `__dlpack__()`'s capsule
                                 (`__dlpack_device__()` for the device)
    array interfaces             `__cuda_array_interface__`,
                                 `__array_interface__`

`array_info(array)` gives an `ArrayInfo`; kvcache.arguments checks it
against a memref type and packs its descriptor. torch is never imported
here: a tensor is recognized as an instance of `torch.Tensor` when the
caller has imported torch (it made the tensor), so `import kvcache` works
without torch. numpy has no dtype for bf16 (nor fp8): such elements are
named by their MLIR element type in `ArrayInfo.element`.
"""

import ctypes
import functools
import sys

import numpy as np

__all__ = ["ArrayInfo", "HOST_DEVICES", "NON_NUMPY_ELEMENTS", "array_info",
           "c_strides"]

# The devices whose memory the host reads and writes (DLPack's pinned host
# memory included): what CPUModule and EmulatedGPUModule take.
HOST_DEVICES = ("cpu", "cuda_host", "rocm_host")


class ArrayInfo:
    """Address, shape and element strides of an array; `itemsize` its
    element's bytes; `typestr` the array interface's element type ("<f4",
    ...) when numpy has one; `element` the MLIR element type ("bf16", ...)
    of elements numpy has no dtype for (or the producer's name of an
    unknown one, which no memref takes), else None; `device` where the
    memory is ("cpu", "cuda", "meta", ...; None: not known)."""

    def __init__(self, pointer, shape, strides, itemsize, typestr=None,
                 element=None, device=None):
        self.pointer = int(pointer)
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)  # in elements
        self.itemsize = int(itemsize)
        self.typestr = typestr
        self.element = element
        self.device = device

    @functools.cached_property
    def dtype(self):
        """The numpy dtype of the elements, None when `typestr` is."""
        return None if self.typestr is None else np.dtype(self.typestr)

    @property
    def type_name(self):
        """The elements' type, for messages: the numpy dtype's name, the
        element type, or their width."""
        if self.element is not None:
            return self.element
        if self.dtype is not None:
            return self.dtype.name
        return f"{self.itemsize}-byte elements"

    def with_layout(self, shape, strides):
        """The same memory and elements under another shape and strides."""
        view = ArrayInfo(self.pointer, shape, strides, self.itemsize,
                         self.typestr, self.element, self.device)
        view.dtype = self.dtype
        return view


def _numpy_info(array):
    """ArrayInfo of a numpy array, straight from its attributes (the CPU
    path calls this for every argument of every call)."""
    itemsize = array.itemsize
    if any(stride % itemsize for stride in array.strides):
        raise ValueError("array strides must be whole elements")
    info = ArrayInfo.__new__(ArrayInfo)
    info.pointer = array.ctypes.data
    info.shape = array.shape
    info.strides = tuple(stride // itemsize for stride in array.strides)
    info.itemsize = itemsize
    info.typestr = array.dtype.str
    info.dtype = array.dtype  # set, not computed: see cached_property
    info.element = None
    info.device = "cpu"
    return info


# torch dtypes (their names after "torch.") that numpy has under the same
# name, and those it has not, by MLIR element type.
_TORCH_NUMPY = frozenset(("float32", "float64", "float16", "uint8", "int8",
                          "int16", "int32", "int64", "bool", "complex64",
                          "complex128"))
_TORCH_ELEMENTS = {"bfloat16": "bf16", "float8_e4m3fn": "f8E4M3FN",
                   "float8_e5m2": "f8E5M2"}
# The element types that arrays can hold as themselves although numpy has
# no dtype for them (a memref of them takes their bits in numpy arrays).
NON_NUMPY_ELEMENTS = tuple(_TORCH_ELEMENTS.values())


def _torch_tensor_class():
    """torch.Tensor when torch is loaded, else None (no tensor exists)."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None)


def _torch_info(tensor, where):
    """ArrayInfo of a torch tensor, from its own attributes (numpy cannot
    import bf16 through DLPack); strides are in elements already."""
    if str(tensor.layout) != "torch.strided":
        raise TypeError(f"{where}a {tensor.layout} tensor is not an array in "
                        "memory: pass a dense one (tensor.to_dense())")
    name = str(tensor.dtype).rpartition(".")[2]
    typestr = np.dtype(name).str if name in _TORCH_NUMPY else None
    element = None if typestr else _TORCH_ELEMENTS.get(name, f"torch.{name}")
    return ArrayInfo(tensor.data_ptr(), tensor.shape, tensor.stride(),
                     tensor.element_size(), typestr, element,
                     tensor.device.type)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    """DLPack's DLTensor, the first member of the DLManagedTensor that a
    "dltensor" capsule points to."""
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


# Our own prototype: changing restype on ctypes.pythonapi's shared function
# object would change it for every other user in the process.
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object,
                                     ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

# DLDeviceType -> our device names (torch's where they have one).
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl",
                   7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                   11: "rocm_host", 12: "ext_dev", 13: "cuda_managed",
                   14: "oneapi", 15: "webgpu", 16: "hexagon"}
# DLDataTypeCode -> numpy kind letter; kDLBfloat (4) is bf16.
_DLPACK_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


def _dlpack_typestr(code, bits, lanes):
    """(typestr, element) of a DLDataType: a numpy typestr, or for bf16
    the element type, or for a type numpy and memrefs lack a name (no
    memref takes it)."""
    if lanes == 1 and code in _DLPACK_KINDS and bits % 8 == 0:
        try:
            return np.dtype(f"{_DLPACK_KINDS[code]}{bits // 8}").str, None
        except TypeError:
            pass
    if (code, bits, lanes) == (4, 16, 1):
        return None, "bf16"
    return None, f"DLPack type code {code} of {bits} bits x {lanes} lanes"


def _dlpack_info(array):
    """ArrayInfo of a DLPack producer from its capsule's DLTensor. The
    capsule is not consumed: the producer keeps the memory (it is the
    caller's array) and the capsule's destructor releases its reference."""
    device_type, _ = array.__dlpack_device__()
    device = _DLPACK_DEVICES.get(int(device_type), f"dlpack:{device_type}")
    capsule = array.__dlpack__()
    pointer = _capsule_pointer(capsule, b"dltensor")
    tensor = ctypes.cast(pointer, ctypes.POINTER(_DLTensor)).contents
    code, bits, lanes = (tensor.dtype.code, tensor.dtype.bits,
                         tensor.dtype.lanes)
    typestr, element = _dlpack_typestr(code, bits, lanes)
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    if tensor.strides:
        strides = [tensor.strides[i] for i in range(tensor.ndim)]
    else:  # NULL: compact row-major
        strides = c_strides(shape)
    data = (tensor.data or 0) + tensor.byte_offset
    return ArrayInfo(data, shape, strides, max(bits * lanes // 8, 1), typestr,
                     element, device)


def c_strides(shape):
    """The element strides of a C-contiguous (row-major) array of `shape`."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return strides


def _interface_info(interface, device, where):
    """ArrayInfo of an `__array_interface__` or `__cuda_array_interface__`
    dict (strides in bytes, None for C-contiguous)."""
    data = interface.get("data")
    if not isinstance(data, tuple):
        raise TypeError(f"{where}the array interface's data is not a "
                        "(pointer, read-only) pair: pass the array itself")
    itemsize = np.dtype(interface["typestr"]).itemsize
    shape = interface["shape"]
    byte_strides = interface.get("strides")
    if byte_strides is None:
        byte_strides = [s * itemsize for s in c_strides(shape)]
    if any(stride % itemsize for stride in byte_strides):
        raise ValueError(f"{where}array strides must be whole elements")
    return ArrayInfo(data[0] or 0, shape, [s // itemsize for s in byte_strides],
                     itemsize, interface["typestr"], device=device)


def array_info(array, where=None):
    """ArrayInfo of a numpy array, torch tensor, DLPack producer or object
    with an array interface, or an ArrayInfo unchanged; `where` (the
    argument) starts the messages of errors. TypeError for anything else."""
    if isinstance(array, ArrayInfo):
        return array
    if isinstance(array, np.ndarray):
        return _numpy_info(array)
    where = f"{where}: " if where else ""
    tensor_class = _torch_tensor_class()
    if tensor_class is not None and isinstance(array, tensor_class):
        return _torch_info(array, where)
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is not None:
        return _interface_info(interface, "cuda", where)
    interface = getattr(array, "__array_interface__", None)
    if interface is not None:
        return _interface_info(interface, "cpu", where)
    if hasattr(array, "__dlpack__") and hasattr(array, "__dlpack_device__"):
        return _dlpack_info(array)
    raise TypeError(
        f"{where}{type(array).__name__} is not an array: pass a numpy array, "
        "a torch tensor, an object with __dlpack__ or an array interface, or "
        "a kvcache.arguments.ArrayInfo")
