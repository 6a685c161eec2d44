"""ktune from Python: autotuned CUDA kernels on PyTorch tensors, CuPy arrays and any CUDA array.

    import torch, ktune
    a = torch.randn(4096, 1024, device="cuda")
    b = torch.randn(1024, 2048, device="cuda")
    c = ktune.gemm(a, b)            # a @ b, on a's device and torch's current stream
    c = ktune.gemm(a, b.t().contiguous().t())   # transposed views go in without a copy
    counts = ktune.histogram(torch.randint(0, 256, (1 << 20,), dtype=torch.uint8, device="cuda"))
    print(ktune.explain("elementwise", "align=16;dtype=f32;n=1048576;op=copy"))

A thin layer over libktune.so's C API (ctypes): set KTUNE_LIBRARY to the library's path unless
the package was installed with it. Errors are ktune.Error (the library's message, and `code`).
"""
import ctypes
import os
import shutil
import sqlite3
import subprocess
import sys
import threading

from ._arrays import _torch_stream, as_array, empty_like_kind
from ._lib import (ARG_INT, ARG_POINTER, ARG_REAL, ARG_UINT, OP_N, OP_T, ROW_MAJOR, Arg, Axis,
                   Error, RuntimeOptions, check, lib)

__version__ = "0.1.0"
__all__ = ["Error", "Runtime", "gemm", "histogram", "copy", "add", "launch", "explain", "tune",
           "query", "runtime", "library_version"]


def library_version():
    """libktune.so's version text, e.g. "0.1.0 (git abc1234)"."""
    return lib().ktune_version().decode()


class Runtime:
    """One ktune runtime on one device: its lookup chain, compiled kernels and database.

    The module's functions use one per device (`runtime(device)`); make your own for another
    database, for family files of your own, or to tune on a miss, and pass it as `rt=`.
    tune_on_miss=True: a problem the database has no exact result for is tuned at its first call
    (tune_max_evals candidates, 32 if 0, within tune_max_seconds, 10 if 0), and the result is
    stored for later calls and processes; that first call waits for it, unless
    tune_in_background=True: then it is answered at once (as without tuning) while a thread of
    the runtime tunes the problem, and later calls run the tuned kernel once it is stored
    (wait_for_tuning() returns when every queued problem is done). strict_fp32=True: float32
    products compute every product and sum in FP32 on the FMA units, as cuBLAS's default math
    (torch's float32_matmul_precision "highest"); by default one with m or n of 9 to 16 may run
    on the tensor cores as 3xTF32 where that was faster (within FP32 GEMM's error bound)."""

    def __init__(self, device=0, database=None, family_files=(), use_database=True,
                 tune_on_miss=False, tune_max_evals=0, tune_max_seconds=0.0,
                 tune_in_background=False, strict_fp32=False):
        h = lib()
        options = RuntimeOptions()
        options.size = ctypes.sizeof(RuntimeOptions)
        options.database = database.encode() if database else None
        options.device = int(device)
        options.no_database = 0 if use_database else 1
        files = [os.fspath(f) for f in family_files]
        if any(":" in f for f in files):
            raise ValueError("family_files: a path with ':' cannot be passed")
        options.family_files = ":".join(files).encode() if files else None
        if isinstance(tune_max_evals, bool) or not isinstance(tune_max_evals, int) or \
                not 0 <= tune_max_evals <= 0xFFFFFFFF:
            raise ValueError(f"tune_max_evals: a count >= 0, got {tune_max_evals!r}")
        options.tune_on_miss = 1 if tune_on_miss else 0
        options.tune_max_evals = tune_max_evals
        options.tune_max_seconds = float(tune_max_seconds)
        options.tune_in_background = 1 if tune_in_background else 0
        options.strict_fp32 = 1 if strict_fp32 else 0
        handle = ctypes.c_void_p()
        check(h.ktune_runtime_create(ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        self.device = int(device)

    def close(self):
        if getattr(self, "_handle", None):
            lib().ktune_runtime_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    @property
    def handle(self):
        if not self._handle:
            raise Error("this Runtime was closed", code=1)
        return self._handle

    def wait_for_tuning(self):
        """Returns once the problems queued for tuning in the background are tuned and in use."""
        check(lib().ktune_wait_for_tuning(self.handle))

    def compile_count(self):
        n = ctypes.c_uint64()
        check(lib().ktune_compile_count(self.handle, ctypes.byref(n)))
        return n.value

    def explain(self, family, problem):
        text = ctypes.create_string_buffer(1024)
        needed = ctypes.c_size_t()
        check(lib().ktune_explain(self.handle, family.encode(), problem.encode(), text,
                                  ctypes.sizeof(text), ctypes.byref(needed)))
        if needed.value > ctypes.sizeof(text):
            text = ctypes.create_string_buffer(needed.value)
            check(lib().ktune_explain(self.handle, family.encode(), problem.encode(), text,
                                      ctypes.sizeof(text), ctypes.byref(needed)))
        out = {}
        line = text.value.decode()
        # "step=exact config=A=1,B=2 tuned_problem=... measured=1.5 unit=GB/s device=NAME..."
        keys = ["step", "config", "tuned_problem", "measured", "unit", "predicted_ms", "device"]
        rest = line
        for i, key in enumerate(keys):
            if not rest.startswith(key + "="):
                continue
            rest = rest[len(key) + 1:]
            ends = [rest.find(" " + k + "=") for k in keys[i + 1:] if rest.find(" " + k + "=") >= 0]
            end = min(ends) if ends else len(rest)
            out[key] = rest[:end]
            rest = rest[end + 1:]
        for key in ("measured", "predicted_ms"):
            if key in out:
                out[key] = float(out[key])
        return out


_runtimes = {}
_lock = threading.Lock()


def runtime(device=0):
    """The module's runtime for a device (made at first use, with the default database)."""
    rt = _runtimes.get(device)  # the common case, without the lock
    if rt is not None:
        return rt
    with _lock:
        rt = _runtimes.get(device)
        if rt is None:
            rt = _runtimes[device] = Runtime(device)
        return rt


def _one_device(arrays, what):
    devices = {a.device for a in arrays}
    if len(devices) != 1:
        raise ValueError(f"{what}: the arrays are on different devices {sorted(devices)}")
    return devices.pop()


def _check_rt(rt, what):
    if rt is not None and not isinstance(rt, Runtime):
        raise TypeError(f"{what}: rt must be a ktune.Runtime, got {type(rt).__name__}")


def _runtime_for(rt, device, what):
    """`rt` (a Runtime of the arrays' device) or the module's runtime of that device."""
    if rt is None:
        return runtime(device)
    if rt.device != device:
        raise ValueError(f"{what}: rt runs on device {rt.device}, the arrays are on {device}")
    return rt


def _matrix(arr, what):
    """(op, leading dimension) of a 2-D array read as row-major: op N for rows of unit stride,
    op T for a transposed view (columns of unit stride)."""
    if len(arr.shape) != 2:
        raise ValueError(f"{what}: a matrix has 2 dimensions, this has {len(arr.shape)}")
    rows, cols = arr.shape
    s0, s1 = arr.strides
    if cols == 1 or s1 == 1:
        ld = s0 if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return OP_N, ld
    if rows == 1 or s0 == 1:
        ld = s1 if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return OP_T, ld
    raise ValueError(f"{what}: strides {arr.strides} are not those of a matrix or its transpose "
                     "(one of them must be 1); pass .contiguous()")


def _stream(arr, stream):
    if stream is None:
        return arr.stream or 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, cuda-python streams
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream: {type(stream).__name__} is not a CUDA stream")


_GEMM_EX_TYPES = {"f32": 0, "f64": 1, "bf16": 2, "f16": 3, "tf32": 4}


class _Last2:
    """The last two dimensions of an array, for _matrix."""

    def __init__(self, arr):
        self.shape, self.strides = tuple(arr.shape[1:]), tuple(arr.strides[1:])


def _gemm_batched(A, B, out, alpha, beta, stream, tf32, rt):
    """gemm of 3-D arrays: out[i] = alpha * a[i] @ b[i] + beta * out[i] (torch.bmm), every
    product in one launch on the tensor cores."""
    if tf32 and A.dtype != "f32":
        raise TypeError(f"gemm: tf32=True takes float32 a and b (got {A.dtype})")
    for arr, what in ((A, "a"), (B, "b")):
        if len(arr.shape) != 3:
            raise ValueError(f"gemm: batched: {what} must have 3 dimensions (batch, rows, columns) "
                             f"as the other one, this has {len(arr.shape)}")
    if A.dtype != B.dtype or not (A.dtype in ("bf16", "f16") or (tf32 and A.dtype == "f32")):
        raise TypeError(f"gemm: batched products take bfloat16 or float16 a and b, or float32 with "
                        f"tf32=True, so far (got {A.dtype}, {B.dtype})")
    (nb, m, k), (nb2, k2, n) = A.shape, B.shape
    if nb != nb2 or k != k2:
        raise ValueError(f"gemm: a is {nb}x{m}x{k} and b is {nb2}x{k2}x{n}: batch or inner "
                         f"dimensions differ")
    op_a, lda = _matrix(_Last2(A), "a")
    op_b, ldb = _matrix(_Last2(B), "b")
    if out is None:
        if beta != 0:
            raise ValueError("gemm: beta is not 0 but there is no out to read")
        out = empty_like_kind(A, (nb, m, n), "f32" if tf32 else A.dtype)
    C = as_array(out, "out")
    out_types = ("f32",) if tf32 else (A.dtype, "f32")
    if C.dtype not in out_types or tuple(C.shape) != (nb, m, n):
        raise ValueError(f"gemm: out must be {' or '.join(out_types)} {nb}x{m}x{n} (got {C.dtype} "
                         f"{'x'.join(map(str, C.shape))})")
    device = _one_device([A, B, C], "gemm")
    op_c, ldc = _matrix(_Last2(C), "out")
    sa, sb, sc = A.strides[0], B.strides[0], C.strides[0]
    h, rt = lib(), _runtime_for(rt, device, "gemm")
    s = _stream(A, stream)
    ab, ct = _GEMM_EX_TYPES["tf32" if tf32 else A.dtype], _GEMM_EX_TYPES[C.dtype]
    if op_c == OP_N:
        check(h.ktune_gemm_strided_batched_ex(rt.handle, ROW_MAJOR, op_a, op_b, m, n, k, alpha, ab,
                                              A.ptr, lda, sa, B.ptr, ldb, sb, beta, ct, C.ptr,
                                              ldc, sc, nb, s))
    else:
        # out's matrices are column-major: out[i]^T (n x m, row-major) = b[i]^T a[i]^T.
        flip = {OP_N: OP_T, OP_T: OP_N}
        check(h.ktune_gemm_strided_batched_ex(rt.handle, ROW_MAJOR, flip[op_b], flip[op_a], n, m,
                                              k, alpha, ab, B.ptr, ldb, sb, A.ptr, lda, sa, beta,
                                              ct, C.ptr, ldc, sc, nb, s))
    return out


def gemm(a, b, out=None, alpha=1.0, beta=0.0, stream=None, tf32=False, rt=None):
    """out = alpha * a @ b + beta * out for 2-D float32, float64, bfloat16 or float16 arrays on
    one device.

    Transposed views (a.t(), b.T) go in without a copy; out is made when not given (beta must
    then be 0). Runs on the arrays' device, on `stream` or the array library's current stream.
    bfloat16 and float16 run on the tensor cores (sm_80 and later) with float32
    accumulation, out of the same type or float32, any layout (rows or columns not aligned to
    16 bytes are copied to aligned scratch first).
    tf32=True multiplies float32 arrays as TF32 on the tensor cores (10 bits of mantissa, as
    torch.backends.cuda.matmul.allow_tf32), float32 out, any layout: the tensor cores read
    tf32 operands k-contiguous only, so x @ w.t() (as torch.nn.Linear computes) goes straight in
    and an operand stored the other way is first transposed into scratch memory.
    3-D a (batch, m, k) and b (batch, k, n) of those tensor-core types: out[i] = a[i] @ b[i] as
    torch.bmm, every product in one launch (a stride of 0, as from expand(), repeats a matrix).
    rt: a Runtime of your own (another database, tune on a miss) instead of the module's."""
    _check_rt(rt, "gemm")
    A, B = as_array(a, "a"), as_array(b, "b")
    if len(A.shape) == 3 or len(B.shape) == 3:
        return _gemm_batched(A, B, out, alpha, beta, stream, tf32, rt)
    if A.dtype != B.dtype or A.dtype not in ("f32", "f64", "bf16", "f16"):
        raise TypeError(f"gemm: a and b must both be float32, float64, bfloat16 or float16 (got "
                        f"{A.dtype}, {B.dtype})")
    if tf32 and A.dtype != "f32":
        raise TypeError(f"gemm: tf32=True takes float32 a and b (got {A.dtype})")
    for arr, what in ((A, "a"), (B, "b")):
        if len(arr.shape) != 2:
            raise ValueError(f"gemm: {what}: a matrix has 2 dimensions, this has {len(arr.shape)}")
    (m, k), (k2, n) = A.shape, B.shape
    if k != k2:
        raise ValueError(f"gemm: a is {m}x{k} and b is {k2}x{n}: inner dimensions differ")
    op_a, lda = _matrix(A, "a")
    op_b, ldb = _matrix(B, "b")
    if out is None:
        if beta != 0:
            raise ValueError("gemm: beta is not 0 but there is no out to read")
        out = empty_like_kind(A, (m, n), A.dtype)
    C = as_array(out, "out")
    sixteen = A.dtype in ("bf16", "f16")
    out_types = (A.dtype, "f32") if sixteen else (A.dtype,)
    if C.dtype not in out_types or tuple(C.shape) != (m, n):
        raise ValueError(f"gemm: out must be {' or '.join(out_types)} {m}x{n} (got {C.dtype} "
                         f"{'x'.join(map(str, C.shape))})")
    device = _one_device([A, B, C], "gemm")
    op_c, ldc = _matrix(C, "out")
    h, rt = lib(), _runtime_for(rt, device, "gemm")
    s = _stream(A, stream)
    if sixteen or tf32:
        ab, ct = _GEMM_EX_TYPES["tf32" if tf32 else A.dtype], _GEMM_EX_TYPES[C.dtype]
        fn = lambda oa, ob, mm, nn, pa, la, pb, lb: h.ktune_gemm_ex(  # noqa: E731
            rt.handle, ROW_MAJOR, oa, ob, mm, nn, k, alpha, ab, pa, la, pb, lb, beta, ct, C.ptr,
            ldc, s)
    else:
        gemm_fn = h.ktune_sgemm if A.dtype == "f32" else h.ktune_dgemm
        fn = lambda oa, ob, mm, nn, pa, la, pb, lb: gemm_fn(  # noqa: E731
            rt.handle, ROW_MAJOR, oa, ob, mm, nn, k, alpha, pa, la, pb, lb, beta, C.ptr, ldc, s)
    if op_c == OP_N:
        check(fn(op_a, op_b, m, n, A.ptr, lda, B.ptr, ldb))
    else:
        # out is column-major: out^T (n x m, row-major) = b^T a^T.
        flip = {OP_N: OP_T, OP_T: OP_N}
        check(fn(flip[op_b], flip[op_a], n, m, B.ptr, ldb, A.ptr, lda))
    return out


def histogram(x, bins=256, range=None, out=None, accumulate=False, stream=None, rt=None):
    """Counts (uint32) of a contiguous array's samples in `bins` equal bins over
    range = (lower, upper), upper excluded; uint8 samples with bins=256 and no range count each
    byte value. Samples: uint8, uint16, int32, float32."""
    _check_rt(rt, "histogram")
    X = as_array(x, "x")
    if not X.contiguous():
        raise ValueError("histogram: x must be contiguous")
    if out is None:
        out = empty_like_kind(X, (bins,), "u32")
    O = as_array(out, "out")
    if O.size != bins or O.dtype not in ("u32", "i32") or not O.contiguous():
        raise ValueError(f"histogram: out must be {bins} contiguous uint32 counts")
    device = _one_device([X, O], "histogram")
    h, rt, s = lib(), _runtime_for(rt, device, "histogram"), _stream(X, stream)
    acc = 1 if accumulate else 0
    if range is None:
        if X.dtype != "u8" or bins != 256:
            raise ValueError("histogram: give range=(lower, upper) unless x is uint8 with 256 bins")
        check(h.ktune_histogram_u8(rt.handle, X.ptr, X.size, O.ptr, acc, s))
        return out
    lower, upper = range
    fn = {"u8": h.ktune_histogram_even_u8, "u16": h.ktune_histogram_even_u16,
          "i32": h.ktune_histogram_even_i32, "f32": h.ktune_histogram_even_f32}.get(X.dtype)
    if fn is None:
        raise TypeError(f"histogram: samples of {X.dtype} are not supported")
    check(fn(rt.handle, X.ptr, X.size, bins, lower, upper, O.ptr, acc, s))
    return out


_copy_fast = None  # {torch dtype: C function} once torch is seen


def _copy_torch(dst, src):
    """copy() of two contiguous CUDA tensors of one float type, size and device on torch's
    current stream, with no Array built: the path of a tight loop (the general one checks the
    same and says what is wrong). None where it does not apply."""
    global _copy_fast
    torch = sys.modules.get("torch")
    if torch is None or type(dst) is not torch.Tensor or type(src) is not torch.Tensor:
        return None
    if _copy_fast is None:
        h = lib()
        _copy_fast = {torch.float32: h.ktune_copy_f32, torch.float64: h.ktune_copy_f64}
    fn = _copy_fast.get(dst.dtype)
    if fn is None or src.dtype is not dst.dtype or not (dst.is_cuda and src.is_cuda):
        return None
    n = dst.numel()
    if src.numel() != n or not (dst.is_contiguous() and src.is_contiguous()):
        return None
    device = dst.get_device()
    if src.get_device() != device:
        return None
    rt = runtime(device)
    check(fn(rt.handle, dst.data_ptr(), src.data_ptr(), n, _torch_stream(torch, device)))
    return dst


def copy(dst, src, stream=None, rt=None):
    """dst[:] = src for contiguous float32 or float64 arrays of the same size."""
    if stream is None and rt is None:
        done = _copy_torch(dst, src)
        if done is not None:
            return done
    _check_rt(rt, "copy")
    D, S = as_array(dst, "dst"), as_array(src, "src")
    if D.dtype != S.dtype or D.dtype not in ("f32", "f64") or D.size != S.size:
        raise ValueError("copy: dst and src must be float32 or float64 of one size")
    if not (D.contiguous() and S.contiguous()):
        raise ValueError("copy: dst and src must be contiguous")
    device = _one_device([D, S], "copy")
    h = lib()
    fn = h.ktune_copy_f32 if D.dtype == "f32" else h.ktune_copy_f64
    check(fn(_runtime_for(rt, device, "copy").handle, D.ptr, S.ptr, D.size, _stream(S, stream)))
    return dst


def add(out, a, b, stream=None, rt=None):
    """out[:] = a + b for contiguous float32 or float64 arrays of one size."""
    _check_rt(rt, "add")
    O, A, B = as_array(out, "out"), as_array(a, "a"), as_array(b, "b")
    if len({O.dtype, A.dtype, B.dtype}) != 1 or O.dtype not in ("f32", "f64") or \
            len({O.size, A.size, B.size}) != 1:
        raise ValueError("add: out, a and b must be float32 or float64 of one size")
    if not (O.contiguous() and A.contiguous() and B.contiguous()):
        raise ValueError("add: out, a and b must be contiguous")
    device = _one_device([O, A, B], "add")
    h = lib()
    fn = h.ktune_add_f32 if O.dtype == "f32" else h.ktune_add_f64
    check(fn(_runtime_for(rt, device, "add").handle, O.ptr, A.ptr, B.ptr, O.size,
             _stream(A, stream)))
    return out


def launch(family, problem, *args, stream=None, device=None, rt=None):
    """Runs a family file's kernel: `problem` maps its axes to values ({"rows": 8192,
    "dtype": "f32"}), `args` are its arguments in the file's order (CUDA arrays for buffers,
    numbers for scalars)."""
    axes = (Axis * max(len(problem), 1))()
    keep = []
    for i, (name, value) in enumerate(problem.items()):
        axes[i].name = name.encode()
        keep.append(axes[i].name)
        if isinstance(value, str):
            axes[i].text = value.encode()
        elif isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"problem[{name!r}]: an integer or a string")
        else:
            axes[i].integer = value
    c_args = (Arg * max(len(args), 1))()
    first = None
    for i, value in enumerate(args):
        if isinstance(value, bool):
            raise TypeError(f"args[{i}]: a bool is not a kernel argument (use 0 or 1)")
        if isinstance(value, int):
            if value > 0x7FFFFFFFFFFFFFFF:
                c_args[i].kind, c_args[i].uinteger = ARG_UINT, value
            else:
                c_args[i].kind, c_args[i].integer = ARG_INT, value
        elif isinstance(value, float):
            c_args[i].kind, c_args[i].real = ARG_REAL, value
        else:
            arr = as_array(value, f"args[{i}]")
            first = first or arr
            c_args[i].kind, c_args[i].pointer = ARG_POINTER, arr.ptr
    if rt is None:
        rt = runtime(device if device is not None else (first.device if first else 0))
    s = _stream(first, stream) if first else (stream or 0)
    check(lib().ktune_launch(rt.handle, family.encode(), axes, len(problem), c_args, len(args), s))


def explain(family, problem, device=0):
    """Which configuration a problem gets and why: a dict with step, config, tuned_problem,
    measured, unit, device, and predicted_ms where the step is "predicted"."""
    return runtime(device).explain(family, problem)


def _cli():
    path = os.environ.get("KTUNE_CLI") or shutil.which("ktune")
    if not path:
        raise Error("the ktune command was not found: put it on PATH or set KTUNE_CLI", code=None)
    return path


def tune(family, *options, db=None, check_output=True):
    """Runs the tuner (`ktune tune FAMILY OPTIONS...`) and returns its report as text, e.g.
    ktune.tune("gemm", "--shape", "4096x1024x2048", "--max-evals", "100")."""
    cmd = [_cli(), "tune", family, *map(str, options)]
    if db:
        cmd += ["--db", os.fspath(db)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if check_output and done.returncode != 0:
        raise Error(done.stderr.strip() or f"ktune tune exited with {done.returncode}",
                    code=done.returncode)
    return done.stdout


def _default_database():
    if os.environ.get("KTUNE_DB"):
        return os.environ["KTUNE_DB"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ktune", "tuning.db")


def query(family=None, problem=None, db=None, status="ok"):
    """Results of a tuning database as a list of dicts (device, family, problem, config, status,
    time_median_ms, metric, unit, origin), best first per problem. Read-only: the file is never
    changed. status=None lists every status."""
    path = os.fspath(db) if db else _default_database()
    if not os.path.isfile(path):
        raise Error(f"{path}: no such database", code=None)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sql = ("SELECT d.name, d.cc_major, d.cc_minor, d.sm_count, r.family, r.problem, r.config, "
               "r.status, r.time_median_ms, r.metric, r.unit, r.origin FROM results r "
               "JOIN devices d ON d.id = r.device_id WHERE 1=1")
        params = []
        for column, value in (("r.family", family), ("r.problem", problem), ("r.status", status)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        sql += " ORDER BY r.family, r.problem, r.time_median_ms IS NULL, r.time_median_ms"
        try:
            rows = con.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as e:
            raise Error(f"{path}: not a ktune database ({e})", code=None) from None
    finally:
        con.close()
    keys = ["device", "cc_major", "cc_minor", "sm_count", "family", "problem", "config", "status",
            "time_median_ms", "metric", "unit", "origin"]
    return [dict(zip(keys, r)) for r in rows]
