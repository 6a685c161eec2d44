"""CUDA arrays from PyTorch, CuPy, anything with __cuda_array_interface__ or DLPack: their
pointer, shape, strides (in elements), dtype, device and the stream to run on."""
import ctypes
import sys

from ._lib import Error

# ktune's dtype names, from the typestr of __cuda_array_interface__ and torch's dtypes.
_TYPESTR = {"<f4": "f32", "<f8": "f64", "|u1": "u8", "<u2": "u16", "<i4": "i32", "<u4": "u32",
            "<i8": "i64", "<f2": "f16"}
_SIZE = {"f32": 4, "f64": 8, "u8": 1, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "f16": 2,
         "bf16": 2}


class Array:
    """What ktune needs of a CUDA array."""

    def __init__(self, obj, ptr, shape, strides, dtype, device, kind, stream=None):
        self.obj, self.ptr, self.shape, self.strides = obj, ptr, tuple(shape), tuple(strides)
        self.dtype, self.kind = dtype, kind
        # An ordinal or a stream handle, or a function that finds it at first use: asking the
        # driver or torch costs microseconds a call need not pay for an unused answer.
        self._device, self._stream = device, stream

    @property
    def device(self):
        if callable(self._device):
            self._device = self._device()
        return self._device

    @property
    def stream(self):
        if callable(self._stream):
            self._stream = self._stream()
        return self._stream

    @property
    def size(self):
        if self.kind == "torch":
            return self.obj.numel()
        n = 1
        for s in self.shape:
            n *= s
        return n

    def contiguous(self):
        if self.kind == "torch":
            return self.obj.is_contiguous()
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(self.strides)):
            if extent != 1 and stride != expected:
                return False
            expected *= extent
        return True


def _torch():
    return sys.modules.get("torch")


def _cupy():
    return sys.modules.get("cupy")


_torch_names = None


def _torch_dtype_name(t):
    global _torch_names
    if _torch_names is None:
        torch = _torch()
        names = {torch.float32: "f32", torch.float64: "f64", torch.uint8: "u8", torch.int32: "i32",
                 torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16"}
        for attr, name in (("uint16", "u16"), ("uint32", "u32")):
            if hasattr(torch, attr):
                names[getattr(torch, attr)] = name
        _torch_names = names
    return _torch_names.get(t.dtype) or str(t.dtype)


_raw_stream = None


def _torch_stream(torch, index):
    """The raw handle of torch's current stream on a device (the call Triton's launcher makes;
    the public torch.cuda.current_stream builds a Stream object, several microseconds)."""
    global _raw_stream
    if _raw_stream is None:
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
            (lambda i: torch.cuda.current_stream(i).cuda_stream)
    return _raw_stream(index)


_cuda = None


def _pointer_device(ptr):
    """The device ordinal of a device pointer, from the driver (for generic CUDA arrays)."""
    global _cuda
    if _cuda is None:
        try:
            _cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise Error(f"no CUDA driver (libcuda.so.1: {e})", code=2) from None
        _cuda.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
        _cuda.cuInit(0)
    ordinal = ctypes.c_int(-1)
    # CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
    if _cuda.cuPointerGetAttribute(ctypes.byref(ordinal), 9, ptr) != 0:
        raise Error(f"pointer 0x{ptr:x} is not device memory the CUDA driver knows", code=1)
    return ordinal.value


def as_array(obj, what):
    """An Array for obj, or TypeError naming `what`."""
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        if not obj.is_cuda:
            raise TypeError(f"{what}: a tensor on {obj.device}, not on a CUDA device")
        index = obj.get_device()
        return Array(obj, obj.data_ptr(), obj.shape, obj.stride(), _torch_dtype_name(obj), index,
                     "torch", lambda: _torch_stream(torch, index))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        ptr = cai["data"][0] or 0
        dtype = _TYPESTR.get(cai["typestr"], cai["typestr"])
        size = _SIZE.get(dtype)
        if size is None:
            raise TypeError(f"{what}: element type {cai['typestr']} is not one ktune takes")
        shape = cai["shape"]
        if cai.get("strides") is None:
            strides, acc = [], 1
            for extent in reversed(shape):
                strides.insert(0, acc)
                acc *= extent
        else:
            if any(s % size for s in cai["strides"]):
                raise TypeError(f"{what}: strides are not whole elements")
            strides = [s // size for s in cai["strides"]]
        cupy = _cupy()
        if cupy is not None and isinstance(obj, cupy.ndarray):
            return Array(obj, ptr, shape, strides, dtype, obj.device.id, "cupy",
                         lambda: cupy.cuda.get_current_stream().ptr)
        # The device is asked of the driver only when needed, after the arguments' checks.
        device = (lambda: _pointer_device(ptr)) if ptr else 0
        return Array(obj, ptr, shape, strides, dtype, device, "cai", cai.get("stream"))
    if hasattr(obj, "__dlpack__") and torch is not None:
        return as_array(torch.from_dlpack(obj), what)
    raise TypeError(f"{what}: {type(obj).__name__} is not a CUDA array (a torch tensor, a CuPy "
                    "array, or anything with __cuda_array_interface__ or __dlpack__)")


def empty_like_kind(array, shape, dtype):
    """A new array of the library `array` came from, on its device."""
    if array.kind == "torch":
        torch = _torch()
        # uint32 counts; a torch without uint32 gets int32 (the same bits, read modulo 2^32).
        t = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16,
             "f16": torch.float16, "u32": getattr(torch, "uint32", torch.int32)}[dtype]
        return torch.empty(shape, dtype=t, device=array.obj.device)
    if array.kind == "cupy":
        cupy = _cupy()
        with cupy.cuda.Device(array.device):
            return cupy.empty(shape, dtype={"f32": "float32", "f64": "float64", "f16": "float16",
                                            "u32": "uint32"}[dtype])
    raise TypeError("out: needed for arrays other than torch tensors and CuPy arrays")
