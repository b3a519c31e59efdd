"""libadmit through ctypes: finding the library, the structs the Python
side fills in (adm_tensor, adm_op_shapes) and the prototypes of the public
C API it calls. Internal to the package."""
import ctypes
import ctypes.util
import os

# core/adm_core.h and oracle/adm_ops.h (tests/python/test_admit.py checks
# them against the installed headers)
MAX_DIMS = 8
OP_MAX_INPUTS = 6
# adm_dtype: name -> (enum value, bytes per element in memory)
DTYPES = {
    "bf16": (1, 2),
    "fp16": (2, 2),
    "fp32": (3, 4),
    "fp64": (4, 8),
    "fp8_e4m3": (5, 1),
    "fp8_e5m2": (6, 1),
    "fp4_e2m1": (7, 1),
}
SONAME = "libadmit.so.0"


class Tensor(ctypes.Structure):
    """adm_tensor: a view of storage the caller owns (owned = 0)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("stride", ctypes.c_int64 * MAX_DIMS),
        ("offset", ctypes.c_int64),
        ("data", ctypes.c_void_p),
        ("capacity", ctypes.c_int64),
        ("owned", ctypes.c_int),
    ]


class OpShapes(ctypes.Structure):
    """adm_op_shapes"""

    _fields_ = [
        ("present", ctypes.c_int * OP_MAX_INPUTS),
        ("ndim", ctypes.c_int * OP_MAX_INPUTS),
        ("shape", (ctypes.c_int64 * MAX_DIMS) * OP_MAX_INPUTS),
    ]


# adm_op_params is filled and read by the library only: room enough for it
# (about 80 bytes today), 8-byte aligned.
OP_PARAMS_WORDS = 128


class TableResult(ctypes.Structure):
    """adm_table_result: the count and the entries, read by the library only."""

    _fields_ = [("n", ctypes.c_int), ("entries", ctypes.c_void_p)]


def _candidates():
    """Where libadmit may be, in order: $ADMIT_LIBRARY, the library this
    package was built or installed with (_location.py, written by CMake),
    then the loader's search path."""
    env = os.environ.get("ADMIT_LIBRARY")
    if env:
        yield env
        return
    try:
        from . import _location
    except ImportError:
        _location = None
    if _location is not None:
        yield os.path.join(_location.LIBDIR, SONAME)
    yield SONAME
    found = ctypes.util.find_library("admit")
    if found:
        yield found


def load():
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        _prototypes(lib)
        return lib, path
    raise ImportError("admit: cannot load libadmit (" + "; ".join(tried) + "). Build it (cmake --build), then put "
                      "BUILD/python on PYTHONPATH, or cmake --install it, or name the library in ADMIT_LIBRARY")


def _proto(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


def _prototypes(lib):
    c_int, c_char_p, c_void_p, c_int64 = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64
    P = ctypes.POINTER
    _proto(lib, "adm_error_message", c_char_p)
    _proto(lib, "adm_error_clear", None)
    _proto(lib, "adm_status_name", c_char_p, c_int)
    _proto(lib, "adm_status_from_name", c_int, c_char_p, P(c_int))
    _proto(lib, "adm_name_check", c_int, c_char_p, c_char_p)
    _proto(lib, "adm_shape_numel", c_int, c_int, P(c_int64), P(c_int64))
    _proto(lib, "adm_op_find", c_void_p, c_char_p)
    _proto(lib, "adm_op_count", c_int)
    _proto(lib, "adm_op_at", c_void_p, c_int)
    _proto(lib, "adm_op_name", c_char_p, c_void_p)
    _proto(lib, "adm_op_input_count", c_int, c_void_p)
    _proto(lib, "adm_op_input_name", c_char_p, c_void_p, c_int)
    _proto(lib, "adm_op_input_optional", c_int, c_void_p, c_int)
    _proto(lib, "adm_op_input_index", c_int, c_void_p, c_char_p)
    _proto(lib, "adm_op_params_parse", c_int, c_void_p, c_char_p, c_void_p)
    _proto(lib, "adm_op_output_shape", c_int, c_void_p, c_void_p, P(OpShapes), P(c_int), P(c_int64))
    _proto(lib, "adm_capture_create_borrowed", c_int, c_char_p, c_char_p, P(c_void_p))
    _proto(lib, "adm_capture_free", None, c_void_p)
    _proto(lib, "adm_capture_set_provenance", c_int, c_void_p, c_char_p, c_char_p, c_int64, c_char_p)
    _proto(lib, "adm_capture_add_input", c_int, c_void_p, c_char_p, P(Tensor))
    _proto(lib, "adm_capture_set_reference", c_int, c_void_p, P(Tensor))
    _proto(lib, "adm_capture_add_candidate", c_int, c_void_p, c_char_p, P(Tensor))
    _proto(lib, "adm_capture_set_oracle", c_int, c_void_p, P(Tensor))
    _proto(lib, "adm_capture_add_special", c_int, c_void_p, c_char_p, P(c_int))
    _proto(lib, "adm_capture_special_add_input", c_int, c_void_p, c_int, c_char_p, P(Tensor))
    _proto(lib, "adm_capture_special_set_reference", c_int, c_void_p, c_int, P(Tensor))
    _proto(lib, "adm_capture_special_set_refusal", c_int, c_void_p, c_int, c_int)
    _proto(lib, "adm_capture_special_add_candidate", c_int, c_void_p, c_int, c_char_p, P(Tensor))
    _proto(lib, "adm_capture_validate", c_int, c_void_p)
    _proto(lib, "adm_capture_write", c_int, c_void_p, c_char_p, c_int)
    _proto(lib, "adm_report_create", c_int, c_char_p, P(c_void_p))
    _proto(lib, "adm_report_free", None, c_void_p)
    _proto(lib, "adm_report_set_strict", None, c_void_p, c_int)
    _proto(lib, "adm_report_add_replay", c_int, c_void_p, P(c_void_p), P(c_char_p), c_int)
    _proto(lib, "adm_report_add_table", c_int, c_void_p, P(TableResult))
    _proto(lib, "adm_report_json", c_int, c_void_p, P(c_char_p))
    _proto(lib, "adm_harness_table", c_int, c_char_p, c_void_p, c_void_p, P(TableResult))
    _proto(lib, "adm_table_result_free", None, P(TableResult))
