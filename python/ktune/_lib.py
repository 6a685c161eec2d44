"""libktune.so through ctypes: finding it, the C API's prototypes, and errors as exceptions."""
import ctypes
import ctypes.util
import os


class Error(RuntimeError):
    """An error from ktune, with the library's message and its status code (`code`, `status`)."""

    def __init__(self, message, code=None, status=""):
        super().__init__(message)
        self.code = code
        self.status = status


# The statuses of include/ktune/ktune.h.
OK = 0
INVALID_ARGUMENT = 1
NO_DRIVER = 2
NO_DEVICE = 3

ROW_MAJOR = 1
OP_N, OP_T = 0, 1
ARG_POINTER, ARG_INT, ARG_UINT, ARG_REAL = 0, 1, 2, 3


class RuntimeOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("database", ctypes.c_char_p), ("device", ctypes.c_int),
                ("no_database", ctypes.c_int), ("family_files", ctypes.c_char_p),
                ("tune_on_miss", ctypes.c_int), ("tune_max_evals", ctypes.c_uint),
                ("tune_max_seconds", ctypes.c_double), ("tune_in_background", ctypes.c_int),
                ("strict_fp32", ctypes.c_int)]


class Axis(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("integer", ctypes.c_int64), ("text", ctypes.c_char_p)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("pointer", ctypes.c_void_p), ("integer", ctypes.c_int64),
                ("uinteger", ctypes.c_uint64), ("real", ctypes.c_double)]


def _candidates():
    env = os.environ.get("KTUNE_LIBRARY")
    if env:
        return [env]  # named explicitly: nothing else is tried
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "libktune.so")]
    system = ctypes.util.find_library("ktune")
    if system:
        found.append(system)
    return found


_lib = None


def lib():
    """The loaded library (loaded at first use, so that `import ktune` works without it)."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _declare(handle)
        _lib = handle
        return _lib
    raise Error("libktune.so not found: set KTUNE_LIBRARY to its path, or install ktune with "
                "KTUNE_LIBRARY set so that the package carries it. Tried: " + "; ".join(tried),
                code=None, status="not found")


def _declare(h):
    P, I64, U64, SZ, I, F, D = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t,
                                ctypes.c_int, ctypes.c_float, ctypes.c_double)
    sig = {
        "ktune_last_error": ([], ctypes.c_char_p),
        "ktune_status_name": ([I], ctypes.c_char_p),
        "ktune_version": ([], ctypes.c_char_p),
        "ktune_runtime_create": ([ctypes.POINTER(RuntimeOptions), ctypes.POINTER(P)], I),
        "ktune_runtime_destroy": ([P], None),
        "ktune_sgemm": ([P, I, I, I, I64, I64, I64, F, P, I64, P, I64, F, P, I64, P], I),
        "ktune_dgemm": ([P, I, I, I, I64, I64, I64, D, P, I64, P, I64, D, P, I64, P], I),
        "ktune_gemm_ex": ([P, I, I, I, I64, I64, I64, F, I, P, I64, P, I64, F, I, P, I64, P], I),
        "ktune_gemm_strided_batched_ex": ([P, I, I, I, I64, I64, I64, F, I, P, I64, I64, P, I64,
                                           I64, F, I, P, I64, I64, I64, P], I),
        "ktune_copy_f32": ([P, P, P, SZ, P], I),
        "ktune_copy_f64": ([P, P, P, SZ, P], I),
        "ktune_add_f32": ([P, P, P, P, SZ, P], I),
        "ktune_add_f64": ([P, P, P, P, SZ, P], I),
        "ktune_histogram_u8": ([P, P, SZ, P, I, P], I),
        "ktune_histogram_even_u8": ([P, P, SZ, I, ctypes.c_uint8, ctypes.c_uint8, P, I, P], I),
        "ktune_histogram_even_u16": ([P, P, SZ, I, ctypes.c_uint16, ctypes.c_uint16, P, I, P], I),
        "ktune_histogram_even_i32": ([P, P, SZ, I, ctypes.c_int32, ctypes.c_int32, P, I, P], I),
        "ktune_histogram_even_f32": ([P, P, SZ, I, F, F, P, I, P], I),
        "ktune_launch": ([P, ctypes.c_char_p, ctypes.POINTER(Axis), SZ, ctypes.POINTER(Arg), SZ, P],
                         I),
        "ktune_explain": ([P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, SZ,
                           ctypes.POINTER(SZ)], I),
        "ktune_compile_count": ([P, ctypes.POINTER(U64)], I),
        "ktune_wait_for_tuning": ([P], I),
    }
    for name, (args, result) in sig.items():
        f = getattr(h, name)
        f.argtypes = args
        f.restype = result


def check(status):
    """Raises Error with the library's message for a status other than OK."""
    if status == OK:
        return
    h = lib()
    message = (h.ktune_last_error() or b"").decode("utf-8", "replace")
    name = (h.ktune_status_name(status) or b"").decode()
    raise Error(message or name, code=status, status=name)
