"""torch tensors and other array producers in place of numpy arrays
(kvcache.arrays): CPUModule and EmulatedGPUModule take CPU torch tensors
(f32, f16, bf16 as themselves, fp8 codes as uint8), DLPack producers and
`__array_interface__` objects, with no copy: the outputs land in the
caller's tensors (data_ptr unchanged) and equal, bit for bit, what the
same call writes into numpy arrays. Bad tensors raise the exceptions bad
numpy arrays raise (wrong dtype, shape, strides, alignment), and memory
the host cannot use (meta, CUDA) a TypeError that says what to do."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import abi, builders, testing  # noqa: E402

TARGETS = {"cpu": kvcache.CPUModule, "emulated-gpu": kvcache.EmulatedGPUModule}
CACHE_LENGTHS, NEW = [3, 6], [2, 1]
FP8 = kvcache.CacheConfig("f8E4M3FN", num_heads=2, head_size=16, page_size=4,
                          num_layers=2, scales="token_head", rows_dtype="bf16")
MODULES = {}


def config_of(dtype):
    if dtype == "f8E4M3FN":
        return FP8
    return kvcache.CacheConfig(dtype, num_heads=2, head_size=16, page_size=4,
                               num_layers=2, q_heads=4)


def compiled(target, dtype):
    """decode_step (store_ragged for fp8), one module per target and dtype."""
    key = (target, dtype)
    if key not in MODULES:
        config = config_of(dtype)
        ir = builders.store_ragged(config) if config.is_quantized else \
            builders.decode_step(config)
        MODULES[key] = TARGETS[target](ir)
    return MODULES[key]


def to_torch(array):
    """A torch copy of a numpy array: bf16 bits (uint16) as torch.bfloat16,
    fp8 codes as torch.uint8."""
    if array.dtype == np.uint16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def to_numpy(tensor):
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16)
    return tensor.numpy()


class DLPackOnly:
    """A producer with nothing but the DLPack protocol."""

    def __init__(self, tensor, device=None):
        self.tensor, self.device = tensor, device

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__()

    def __dlpack_device__(self):
        return self.device or self.tensor.__dlpack_device__()


class InterfaceOnly:
    """A producer with nothing but `__array_interface__` (numpy's)."""

    def __init__(self, array):
        self.array = array
        self.__array_interface__ = array.__array_interface__


class CudaInterface:
    def __init__(self, array):
        self.__cuda_array_interface__ = array.__array_interface__


class Call:
    """The numpy arrays of one call of `dtype`'s function (a fresh copy each
    time), the numpy path's results, and the arrays it writes."""

    def __init__(self, dtype):
        config = config_of(dtype)
        rng = np.random.default_rng(35)
        cache = testing.random_cache(config, CACHE_LENGTHS, NEW, rng)
        rows, heads, dim = sum(NEW), config.num_heads, config.head_size
        element = config.rows_element
        self.quantized = config.is_quantized
        fields = list(cache.arguments())
        new = [testing.random_rows(rng, rows, heads, dim, element)
               for _ in range(2)]
        offsets = testing.row_offsets(NEW)
        if self.quantized:
            self.values = fields[:5] + [fields[5], 1, new[0], offsets]
            self.outputs = [0, 5]   # blocks and scales
        else:
            q = testing.random_rows(rng, rows, config.query_heads, dim, element)
            self.values = fields + [1, q, new[0], new[1], offsets,
                                    np.zeros_like(q)]
            self.outputs = [0, 10]  # blocks and out

    def arguments(self, convert=lambda array: array):
        """The call's arguments, each array through `convert`."""
        return [convert(v) if isinstance(v, np.ndarray) else v
                for v in self.values]

    def run(self, module, *arguments):
        name = "store_ragged" if self.quantized else "decode_step"
        module.call(name, *(arguments or self.arguments()))


def expected(target, dtype):
    call = Call(dtype)
    call.run(compiled(target, dtype))
    return [call.values[i] for i in call.outputs]


PRODUCERS = {
    "torch": lambda a: to_torch(a),
    "dlpack": lambda a: DLPackOnly(to_torch(a)),
    "array-interface": lambda a: InterfaceOnly(a.copy()),
}


def unwrap(value):
    """The numpy view of a producer's memory."""
    if isinstance(value, DLPackOnly):
        value = value.tensor
    if isinstance(value, InterfaceOnly):
        return value.array
    return to_numpy(value) if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "f8E4M3FN"])
@pytest.mark.parametrize("target", TARGETS)
def test_producers_are_written_in_place_as_numpy_arrays_are(target, dtype,
                                                            producer):
    call = Call(dtype)
    arguments = call.arguments(PRODUCERS[producer])
    memory = [unwrap(arguments[i]) for i in call.outputs]
    pointers = [m.ctypes.data for m in memory]
    if producer == "torch":  # the tensors' own addresses, as torch says
        assert pointers == [arguments[i].data_ptr() for i in call.outputs]
        if dtype == "bf16":
            assert arguments[6].dtype == torch.bfloat16
        if dtype == "f8E4M3FN":
            assert arguments[0].dtype == torch.uint8
    before = [m.copy() for m in memory]
    call.run(compiled(target, dtype), *arguments)
    for got, old, want in zip(memory, before, expected(target, dtype)):
        assert not np.array_equal(got, old)  # written...
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    assert pointers == [unwrap(arguments[i]).ctypes.data for i in call.outputs]


def test_torch_and_numpy_mixed_and_strided_blocks():
    """A call may mix tensors and arrays; blocks may be a strided view (its
    outer strides are dynamic): a torch slice of pages."""
    call = Call("f16")
    arguments = call.arguments(to_torch)
    big = torch.zeros((3,) + tuple(arguments[0].shape[1:]), dtype=torch.float16)
    blocks = torch.cat([big, arguments[0]])[3:]   # a view at page 3
    assert blocks.storage_offset() > 0
    arguments[0] = blocks
    arguments[1] = call.values[1]                 # cache_lengths: numpy
    call.run(compiled("cpu", "f16"), *arguments)
    want = expected("cpu", "f16")
    assert np.array_equal(blocks.numpy(), want[0])
    assert np.array_equal(arguments[10].numpy(), want[1])


def bad_torch_arguments():
    """(label, argument index, bad tensor of decode_step f32, exception,
    message)."""
    call = Call("f32")
    q = to_torch(call.values[6])
    blocks = to_torch(call.values[0])
    return [
        ("f64 q", 6, q.double(), kvcache.ArgumentTypeError,
         r"needs array of f32 elements \(float32\), got float64"),
        ("bf16 q", 6, q.bfloat16(), kvcache.ArgumentTypeError,
         r"f32 elements \(float32\), got bf16"),
        ("int64 offsets", 9, torch.tensor([0, 2, 3]), kvcache.ArgumentTypeError,
         "i32 elements .* got int64"),
        ("complex q", 6, q.to(torch.complex64), kvcache.ArgumentTypeError,
         "got complex64"),
        ("quantized q", 6, torch.quantize_per_tensor(q, 0.1, 0, torch.qint8),
         kvcache.ArgumentTypeError, "got torch.qint8"),
        ("q of 3 heads", 6, q[:, :3], ValueError,
         r"needs array of shape \[\?, 4, 16\], got \(3, 3, 16\)"),
        ("2-D q", 6, q[0], ValueError, "needs a 3-D array"),
        ("q transposed", 6, q.transpose(1, 2).contiguous().transpose(1, 2),
         ValueError, "must be contiguous .*the identity layout"),
        ("q every other element", 6,
         torch.zeros((3, 4, 32))[:, :, ::2], ValueError,
         "must be contiguous"),
        ("q one float off alignment", 6,
         torch.zeros(3 * 4 * 16 + 1)[1:].view(3, 4, 16), ValueError,
         "not 16-byte aligned"),
        ("blocks with strided heads", 0,
         torch.cat([blocks, blocks], dim=5)[..., ::2], ValueError,
         r"must be contiguous .*static strides \[\?, \?, \?, 32, 16, 1\]"),
        ("sparse q", 6, q.to_sparse(), TypeError, "to_dense"),
        ("meta q", 6, q.to("meta"), TypeError,
         r"in meta memory.*pass a CPU array \(tensor.cpu\(\)"),
        ("a CUDA DLPack producer", 6, DLPackOnly(q, device=(2, 0)), TypeError,
         "in cuda memory"),
        ("a CUDA array interface", 10, CudaInterface(call.values[10]),
         TypeError, "in cuda memory"),
        ("a list", 6, q.tolist(), TypeError, "list is not an array"),
    ]


BAD = bad_torch_arguments()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", range(len(BAD)), ids=[b[0] for b in BAD])
def test_bad_tensors_raise_before_anything_is_written(target, case):
    _, index, bad, error, message = BAD[case]
    call = Call("f32")
    tensors = call.arguments(to_torch)
    before = [tensors[i].clone() for i in call.outputs]
    arguments = list(tensors)
    arguments[index] = bad
    with pytest.raises(error, match=message):
        call.run(compiled(target, "f32"), *arguments)
    for old, i in zip(before, call.outputs):
        assert torch.equal(old, tensors[i])
    call.run(compiled(target, "f32"), *tensors)  # the module goes on
    assert not torch.equal(before[1], tensors[10])


@pytest.mark.parametrize("target", TARGETS)
def test_check_errors_of_tensors(target):
    """The check routine sees a tensor's values: offsets past the rows."""
    call = Call("f32")
    arguments = call.arguments(to_torch)
    arguments[9] = torch.tensor([0, 2, 5], dtype=torch.int32)
    blocks = arguments[0].clone()
    with pytest.raises(kvcache.CheckError, match="row_offsets"):
        call.run(compiled(target, "f32"), *arguments)
    assert torch.equal(blocks, arguments[0])


def test_kernel_args_take_tensors():
    """kvcache.abi packs tensors as the numpy arrays over the same memory,
    bf16 blocks included."""
    call = Call("bf16")
    numpy_fields = call.values[:5]
    tensors = [to_torch(v) if isinstance(v, np.ndarray) else v
               for v in numpy_fields]
    shared = [unwrap(t) if isinstance(t, torch.Tensor) else t for t in tensors]
    assert all(a.ctypes.data == t.data_ptr() for a, t in zip(shared, tensors)
               if isinstance(t, torch.Tensor))
    for kind_params in (abi.paged_cache_params, abi.paged_collection_params):
        got = kind_params(*tensors)
        assert [int(v) for v in got] == [int(v) for v in kind_params(*shared)]
    launch = abi.KernelArgs().memref(tensors[1]).memref(DLPackOnly(tensors[2]))
    assert len(launch) == 5 + 7


def test_import_kvcache_without_torch():
    """torch stays optional: `import kvcache` neither needs nor imports it,
    and numpy calls work with torch unimportable."""
    script = ("import sys\n"
              "import kvcache, kvcache.serving, kvcache.arrays\n"
              "assert 'torch' not in sys.modules, 'kvcache imported torch'\n"
              "sys.modules['torch'] = None  # import torch now fails\n"
              "import numpy as np\n"
              "from kvcache import builders\n"
              "config = kvcache.CacheConfig('f32', 1, 4, 4)\n"
              "cpu = kvcache.CPUModule(builders.copy_pages(config), threads=1)\n"
              "blocks = np.arange(3 * 2 * 2 * 4 * 4, dtype=np.float32)"
              ".reshape(3, 2, 2, 4, 1, 4)\n"
              "cpu.copy_pages(blocks, np.zeros(1, np.int32), "
              "np.zeros((1, 1), np.int32), 0, 0, np.array([[1, 2]], np.int32))\n"
              "assert (blocks[2] == blocks[1]).all()\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, env=dict(os.environ,
                                             PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stderr
