"""NumPy arrays and torch tensors as adm_tensor views: the caller's memory
with its strides, copied only where the library cannot read it as it lies
(a torch tensor on a GPU, a byte-swapped or unaligned array, strides that
are not whole elements). Internal to the package."""
import numpy as np

from ._lib import DTYPES, MAX_DIMS, Tensor

# what each admit dtype may be stored as in a NumPy array
_FLOAT_DTYPES = {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64"}


class Bits:
    """Raw encodings of an admit dtype: Bits(u16_array, "bf16").

    A NumPy array (or anything np.asarray takes, or a torch tensor) whose
    elements are the bit patterns of `dtype`, of that dtype's width: 2
    bytes for bf16 and fp16, 1 for fp8_e4m3, fp8_e5m2 and fp4_e2m1 (one
    pattern per byte, 0 to 15). A tuple (array, "bf16") means the same."""

    def __init__(self, array, dtype):
        if dtype not in DTYPES:
            raise ValueError(f"unknown admit dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
        self.array = array
        self.dtype = dtype

    def __repr__(self):
        return f"Bits({self.dtype}, shape {tuple(np.shape(self.array))})"


def _torch_array(t, what):
    """A torch tensor's bits as a NumPy array over the same memory (a host
    tensor) or over a host copy (any other device), and its admit dtype."""
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        try:
            t = t.to("cpu")
        except Exception as e:  # a meta tensor has no data to move
            raise ValueError(f"{what}: cannot bring a {t.device} tensor to the host: {e}") from None
    if t.is_sparse or t.is_quantized or t.is_complex():
        raise ValueError(f"{what}: a {t.layout} {t.dtype} tensor has no admit counterpart")
    if hasattr(t, "resolve_neg"):
        t = t.resolve_neg()
    table = {torch.bfloat16: ("bf16", torch.int16), torch.float16: ("fp16", torch.int16),
             torch.float32: ("fp32", None), torch.float64: ("fp64", None)}
    for name, dt in (("float8_e4m3fn", "fp8_e4m3"), ("float8_e5m2", "fp8_e5m2")):
        if hasattr(torch, name):
            table[getattr(torch, name)] = (dt, torch.int8)
    if t.dtype not in table:
        raise ValueError(f"{what}: torch dtype {t.dtype} has no admit counterpart "
                         f"(bfloat16, float16, float32, float64, float8_e4m3fn, float8_e5m2)")
    dtype, view = table[t.dtype]
    # view(int16) reinterprets the bits in place, strides kept
    return (t.view(view) if view is not None else t).numpy(), dtype


def _is_torch(value):
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def array_of(value, what):
    """(NumPy array over the data, admit dtype name) for a tensor argument."""
    a, dtype = _array_of(value, what)
    if a.ndim > MAX_DIMS:
        raise ValueError(f"{what}: rank {a.ndim} is above admit's {MAX_DIMS}")
    return a, dtype


def _array_of(value, what):
    dtype = None
    if isinstance(value, Bits):
        value, dtype = value.array, value.dtype
    elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
        if value[1] not in DTYPES:
            raise ValueError(f"{what}: unknown admit dtype {value[1]!r}; expected one of {', '.join(DTYPES)}")
        value, dtype = value
    if _is_torch(value):
        a, tdt = _torch_array(value, what)
        if dtype is None:
            return a, tdt
        if a.dtype.itemsize != DTYPES[dtype][1]:
            raise ValueError(f"{what}: {dtype} patterns are {DTYPES[dtype][1]}-byte elements, "
                             f"not a {value.dtype} tensor's {a.dtype.itemsize}")
        return a, dtype
    try:
        a = np.asarray(value)
    except Exception as e:  # a ragged list, an object that is not array-like
        raise ValueError(f"{what}: not an array: {e}") from None
    if dtype is not None:
        width = DTYPES[dtype][1]
        if a.dtype.kind not in "uif" or a.dtype.itemsize != width:
            raise ValueError(f"{what}: {dtype} patterns are {width}-byte integers "
                             f"({'uint16' if width == 2 else 'uint8'}), not {a.dtype}")
        if dtype == "fp4_e2m1" and a.size and int(a.view(np.uint8).max()) > 15:
            raise ValueError(f"{what}: fp4_e2m1 patterns are 0 to 15, one per byte")
        return a, dtype
    if a.dtype in _FLOAT_DTYPES:
        return a, _FLOAT_DTYPES[a.dtype]
    if a.dtype.name == "bfloat16":  # ml_dtypes
        return a, "bf16"
    if a.dtype == np.uint16:
        raise ValueError(f"{what}: a uint16 array needs its admit dtype named: admit.Bits(a, 'bf16') or (a, 'bf16') "
                         "(or 'fp16')")
    raise ValueError(f"{what}: cannot tell the admit dtype of a {a.dtype} array: give float16, float32 or float64, "
                     "a torch tensor, or bit patterns as admit.Bits(array, dtype)")


def describe(a, dtype, what):
    """An adm_tensor describing the array's memory as it lies, and the array
    it reads (a itself, or a copy where the library could not read a). The
    caller keeps that array alive while the library may read it."""
    code, width = DTYPES[dtype]
    if a.ndim > MAX_DIMS:
        raise ValueError(f"{what}: rank {a.ndim} is above admit's {MAX_DIMS}")
    if a.dtype.itemsize != width:
        raise ValueError(f"{what}: {a.dtype} elements for {dtype}, which takes {width} bytes")
    if (not a.dtype.isnative or not a.flags.aligned or any(s % width for s in a.strides)):
        # a fresh array (ascontiguousarray would keep a contiguous unaligned one)
        a = np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True)
    t = Tensor()
    t.dtype = code
    t.ndim = a.ndim
    lo = hi = 0
    empty = a.size == 0
    for d, (n, s) in enumerate(zip(a.shape, a.strides)):
        st = s // width
        t.shape[d] = n
        t.stride[d] = st
        if not empty:
            span = (n - 1) * st
            if span > 0:
                hi += span
            else:
                lo += span
    base = a.ctypes.data
    if empty:
        t.data = base or None
        t.offset = 0
        t.capacity = 0
    else:
        # storage from the lowest element the view reads to the highest
        t.data = base + lo * width
        t.offset = -lo
        t.capacity = hi - lo + 1
    t.owned = 0
    return t, a
