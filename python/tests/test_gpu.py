"""GPU tests of the Python package with PyTorch: ktune.gemm equals torch.matmul (TF32 off) with
transposed and non-contiguous views, on torch's current stream and on another one; histogram,
copy, add; a user's family launched from Python; errors as exceptions. With CuPy arrays: gemm
(f32, f64, f16 on the tensor cores), copy and histogram, on CuPy's current stream. Skipped without
a GPU (or without CuPy, for its test)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ktune  # noqa: E402
from _support import raises, skip  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _torch():
    try:
        import torch
    except ImportError:
        skip("no PyTorch")
    if not torch.cuda.is_available():
        skip("no CUDA device for PyTorch")
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def _close(torch, ours, a, b, alpha=1.0, beta=0.0, c0=None):
    want = alpha * (a.double() @ b.double())
    if c0 is not None:
        want += beta * c0.double()
    k = a.shape[1]
    eps = torch.finfo(a.dtype).eps
    bound = 16 * eps * max(k, 1) ** 0.5 * (abs(alpha) * (a.double().abs() @ b.double().abs()) +
                                           (abs(beta) * c0.double().abs() if c0 is not None else 0))
    bad = int(((ours.double() - want).abs() > bound + 1e-300).sum())
    assert bad == 0, f"{bad} of {ours.numel()} elements outside the bound"


def test_gemm_equals_matmul_for_views_and_dtypes():
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        for m, n, k in ((64, 48, 32), (1000, 777, 333), (1, 513, 1025), (4096, 16, 2048)):
            a = torch.rand(m, k, device="cuda", dtype=dtype, generator=g) - 0.5
            b = torch.rand(k, n, device="cuda", dtype=dtype, generator=g) - 0.5
            _close(torch, ktune.gemm(a, b), a, b)
            # Transposed views (no copy), and a slice with a leading dimension above its width.
            at = (torch.rand(k, m, device="cuda", dtype=dtype, generator=g) - 0.5).t()
            wide = torch.rand(k, n + 37, device="cuda", dtype=dtype, generator=g) - 0.5
            bs = wide[:, 5:5 + n]
            assert not bs.is_contiguous() and (m == 1 or not at.is_contiguous())
            _close(torch, ktune.gemm(at, bs), at, bs)
            # A column-major out, alpha and beta.
            c0 = torch.rand(n, m, device="cuda", dtype=dtype, generator=g).t()
            c = c0.clone(memory_format=torch.preserve_format)
            ktune.gemm(a, b, out=c, alpha=-0.5, beta=2.0)
            _close(torch, c, a, b, alpha=-0.5, beta=2.0, c0=c0)


def test_gemm_bf16_and_f16_run_on_the_tensor_cores_for_every_layout():
    torch = _torch()
    if torch.cuda.get_device_capability() < (8, 0):
        skip("the tensor-core GEMM needs sm_80 or later")
    g = torch.Generator(device="cuda").manual_seed(3)
    for dtype in (torch.bfloat16, torch.float16):
        # Matrix-vector and skinny shapes first: the skinny kernels (m or n <= 16).
        for m, n, k in ((2000, 1, 1306), (7, 3000, 700), (64, 48, 32), (1000, 776, 336),
                        (4096, 1024, 2048)):
            x = torch.rand(m, k, device="cuda", dtype=dtype, generator=g) - 0.5
            w = torch.rand(n, k, device="cuda", dtype=dtype, generator=g) - 0.5
            want = x.double() @ w.double().t()
            mag = x.double().abs() @ w.double().abs().t()
            # Output rounding of the 16-bit type plus the fp32 accumulation (docs/GEMM_TC.md).
            rel = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
            acc = (1 + rel) * 16 * 5.96e-8 * k ** 0.5
            # x @ w.t() (both k-contiguous), and x @ v with v = w.t() stored k x n (MN-major).
            v = w.t().contiguous()
            for out in (ktune.gemm(x, w.t()),
                        ktune.gemm(x, w.t(), out=torch.empty(m, n, device="cuda")),
                        ktune.gemm(x, v), ktune.gemm(x.t().contiguous().t(), v)):
                err = (out.double() - want).abs()
                bad = int((err > rel * want.abs() + acc * mag + 1e-12).sum())
                assert bad == 0, f"{dtype} {m}x{n}x{k} {out.dtype}: {bad} elements off"


def test_gemm_tf32_runs_x_at_w_t_on_the_tensor_cores():
    torch = _torch()
    if torch.cuda.get_device_capability() < (8, 0):
        skip("the tensor-core GEMM needs sm_80 or later")
    g = torch.Generator(device="cuda").manual_seed(4)
    for m, n, k in ((64, 48, 32), (1000, 776, 336), (4096, 1024, 2048)):
        x = torch.rand(m, k, device="cuda", generator=g) - 0.5
        w = torch.rand(n, k, device="cuda", generator=g) - 0.5
        want = x.double() @ w.double().t()
        mag = x.double().abs() @ w.double().abs().t()
        # The fp32 accumulation plus each factor's loss to tf32's 10 bits (docs/GEMM_TC.md).
        bound = (16 * 5.96e-8 * k ** 0.5 + 2.0 ** -9 * (1 + 2.0 ** -11)) * mag
        out = ktune.gemm(x, w.t(), tf32=True)
        assert out.dtype == torch.float32
        bad = int(((out.double() - want).abs() > bound + 1e-12).sum())
        assert bad == 0, f"tf32 {m}x{n}x{k}: {bad} elements off"
    raises(TypeError, ktune.gemm, x.double(), w.double().t(), tf32=True, contains="float32")
    # Operands that are not k-contiguous (v = w.t() stored k x n, x.t() of a k x m array) are
    # transposed into scratch first: the same kernel on the same values, the same bits.
    want_bits = ktune.gemm(x, w.t(), tf32=True)
    v, xt = w.t().contiguous(), x.t().contiguous()
    for a, b in ((x, v), (xt.t(), w.t()), (xt.t(), v)):
        assert torch.equal(ktune.gemm(a, b, tf32=True), want_bits)


def test_gemm_batched_equals_bmm():
    torch = _torch()
    if torch.cuda.get_device_capability() < (8, 0):
        skip("the tensor-core GEMM needs sm_80 or later")
    g = torch.Generator(device="cuda").manual_seed(5)
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.rand(6, 300, 136, device="cuda", dtype=dtype, generator=g) - 0.5
        w = torch.rand(6, 520, 136, device="cuda", dtype=dtype, generator=g) - 0.5
        v = (torch.rand(136, 520, device="cuda", dtype=dtype, generator=g) - 0.5).expand(6, -1, -1)
        for a, b in ((x, w.transpose(1, 2)), (x, v), (x.transpose(1, 2).contiguous().transpose(1, 2), v)):
            want = torch.bmm(a.double(), b.double())
            mag = torch.bmm(a.double().abs(), b.double().abs())
            out = ktune.gemm(a, b, out=torch.empty(6, 300, 520, device="cuda"))
            bad = int(((out.double() - want).abs() > 16 * 5.96e-8 * 136 ** 0.5 * mag + 1e-12).sum())
            assert bad == 0, f"{dtype} batched: {bad} elements off"
        # C of the input type, made by ktune.
        out16 = ktune.gemm(x, w.transpose(1, 2))
        assert out16.dtype == dtype and tuple(out16.shape) == (6, 300, 520)
    # tf32 batches (k-contiguous operands).
    x = torch.rand(4, 256, 96, device="cuda", generator=g) - 0.5
    w = torch.rand(4, 128, 96, device="cuda", generator=g) - 0.5
    out = ktune.gemm(x, w.transpose(1, 2), tf32=True)
    want = torch.bmm(x.double(), w.double().transpose(1, 2))
    mag = torch.bmm(x.double().abs(), w.double().abs().transpose(1, 2))
    bound = (16 * 5.96e-8 * 96 ** 0.5 + 2.0 ** -9 * (1 + 2.0 ** -11)) * mag
    assert int(((out.double() - want).abs() > bound + 1e-12).sum()) == 0


def test_gemm_runs_on_the_current_stream():
    torch = _torch()
    a = torch.rand(2048, 2048, device="cuda")
    b = torch.rand(2048, 2048, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # the stream is busy: work on another stream would not wait
        out = ktune.gemm(a, b)
        total = out.sum()
    s.synchronize()
    ref = (a.double() @ b.double()).sum()
    assert abs(float(total) - float(ref)) <= 1e-3 * abs(float(ref))
    c = torch.empty(2048, 2048, device="cuda")
    ktune.gemm(a, b, out=c, stream=s)  # an explicit stream
    s.synchronize()
    _close(torch, c, a, b)


def test_histogram_copy_add():
    torch = _torch()
    x = torch.randint(0, 256, (1_000_003,), dtype=torch.uint8, device="cuda")
    counts = ktune.histogram(x)
    want = torch.bincount(x.long(), minlength=256)
    assert torch.equal(counts.long(), want)
    f = torch.rand(100_000, device="cuda") * 10
    even = ktune.histogram(f, bins=10, range=(0.0, 10.0))
    assert torch.equal(even.long(), torch.histc(f, bins=10, min=0, max=10).long()) or \
        int((even.long() - torch.histc(f, bins=10, min=0, max=10).long()).abs().sum()) <= 2
    src = torch.rand(12345, device="cuda")
    dst = torch.empty_like(src)
    ktune.copy(dst, src)
    assert torch.equal(dst, src)
    out = torch.empty_like(src)
    ktune.add(out, src, dst)
    assert torch.equal(out, src + dst)


def test_a_family_of_ones_own_from_python():
    torch = _torch()
    fam = os.path.join(ROOT, "examples", "transpose", "transpose.family.toml")
    rt = ktune.Runtime(family_files=[fam], use_database=False)
    x = torch.rand(300, 517, device="cuda")
    y = torch.empty(517, 300, device="cuda")
    ktune.launch("transpose", {"rows": 300, "cols": 517, "dtype": "f32"}, y, x, 300, 517, rt=rt)
    torch.cuda.synchronize()
    assert torch.equal(y, x.t())
    raises(ktune.Error, ktune.launch, "transpose", {"rows": 300, "cols": 517, "dtype": "f32"}, y,
           x, 300, rt=rt, contains="argument")
    rt.close()


def test_a_runtime_that_tunes_on_a_miss_stores_the_result():
    torch = _torch()
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "miss.db")
        rt = ktune.Runtime(database=db, tune_on_miss=True, tune_max_evals=6, tune_max_seconds=30)
        a = torch.rand(333, 555, device="cuda") - 0.5
        b = torch.rand(555, 444, device="cuda") - 0.5
        c = ktune.gemm(a, b, rt=rt)  # a miss: tuned now, within the budget, then run
        _close(torch, c, a, b)
        # The database also holds the shipped presets; the problem tuned here is the one of ours.
        ours = [r for r in ktune.query(family="gemm", db=db, status=None) if r["origin"] == "tuned"]
        assert ours and {r["problem"] for r in ours} == {ours[0]["problem"]}, ours[:3]
        assert any(r["status"] == "ok" for r in ours), ours[:3]
        assert "k=555" in ours[0]["problem"], ours[0]["problem"]
        # This runtime keeps the tuned entry (step "cache"); another process's finds it stored.
        assert rt.explain("gemm", ours[0]["problem"])["step"] == "cache"
        _close(torch, ktune.gemm(a, b, rt=rt), a, b)  # no second tune
        rt.close()
        again = ktune.Runtime(database=db)
        assert again.explain("gemm", ours[0]["problem"])["step"] == "exact"
        again.close()
        # In the background: the call is answered at once, the tuned result comes later.
        bg = ktune.Runtime(database=db, tune_on_miss=True, tune_max_evals=6, tune_max_seconds=30,
                           tune_in_background=True)
        x = torch.rand(222, 111, device="cuda") - 0.5
        y = torch.rand(111, 333, device="cuda") - 0.5
        _close(torch, ktune.gemm(x, y, rt=bg), x, y)
        bg.wait_for_tuning()
        _close(torch, ktune.gemm(x, y, rt=bg), x, y)
        tuned = {r["problem"] for r in ktune.query(family="gemm", db=db, status=None)
                 if r["origin"] == "tuned"}
        assert len(tuned) == 2 and any("k=111" in p for p in tuned), tuned
        bg.close()


def test_errors_are_exceptions():
    torch = _torch()
    raises(TypeError, ktune.gemm, torch.rand(4, 4), torch.rand(4, 4), contains="not on a CUDA")
    raises(ValueError, ktune.gemm, torch.rand(4, 3, device="cuda"), torch.rand(4, 3, device="cuda"),
           contains="inner dimensions")
    raises(TypeError, ktune.gemm, torch.ones(4, 4, device="cuda", dtype=torch.int32),
           torch.ones(4, 4, device="cuda", dtype=torch.int32),
           contains="float32, float64, bfloat16 or float16")
    e = raises(ktune.Error, ktune.explain, "gemm", "not a key")
    assert e.code == 1, e.code


if __name__ == "__main__":
    from _support import run
    sys.exit(run("test_gpu"))


def _cupy():
    try:
        import cupy
    except ImportError:
        skip("no CuPy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            skip("no CUDA device for CuPy")
    except cupy.cuda.runtime.CUDARuntimeError:
        skip("no CUDA device for CuPy")
    return cupy


def test_cupy_arrays_on_cupys_current_stream():
    cp = _cupy()
    rng = cp.random.default_rng(8)
    for dtype in (cp.float32, cp.float64):
        m, n, k = 300, 150, 200
        a = rng.random((m, k), dtype=dtype) - 0.5
        b = rng.random((k, n), dtype=dtype) - 0.5
        bt = (rng.random((n, k), dtype=dtype) - 0.5).T  # a transposed view (F order), no copy
        for bb in (b, bt):
            c = ktune.gemm(a, bb)
            assert isinstance(c, cp.ndarray) and c.dtype == dtype and c.shape == (m, n)
            want = a.astype(cp.float64) @ bb.astype(cp.float64)
            mag = cp.abs(a).astype(cp.float64) @ cp.abs(bb).astype(cp.float64)
            bound = 16 * float(cp.finfo(dtype).eps) * k ** 0.5 * mag
            bad = int((cp.abs(c.astype(cp.float64) - want) > bound + 1e-300).sum())
            assert bad == 0, f"{dtype} gemm: {bad} elements off"
    # fp16 on the tensor cores: x @ w.T, C of fp16 (its rounding, 2^-11, plus the accumulation).
    x = (rng.random((256, 96), dtype=cp.float32) - 0.5).astype(cp.float16)
    w = (rng.random((130, 96), dtype=cp.float32) - 0.5).astype(cp.float16)
    y = ktune.gemm(x, w.T)
    assert y.dtype == cp.float16 and y.shape == (256, 130)
    want = x.astype(cp.float64) @ w.astype(cp.float64).T
    mag = cp.abs(x).astype(cp.float64) @ cp.abs(w).astype(cp.float64).T
    bound = 2.0 ** -11 * cp.abs(want) + (1 + 2.0 ** -11) * 16 * 5.96e-8 * 96 ** 0.5 * mag
    assert int((cp.abs(y.astype(cp.float64) - want) > bound + 1e-12).sum()) == 0
    # On a non-blocking stream that is busy: a kernel spins about 30 ms, then fills `a` with ones.
    # ktune's calls must queue behind it on CuPy's current stream (elsewhere they read zeros).
    spin_fill = cp.RawKernel(r"""
    extern "C" __global__ void spin_fill(float* p, int n, long long cycles) {
      const long long start = clock64();
      while (clock64() - start < cycles) {}
      for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = 1.0f;
    }""", "spin_fill")
    # The same calls once first, so that no compile delays the launches below past the spin.
    warm = cp.ones((512, 512), dtype=cp.float32)
    ktune.gemm(warm, warm)
    ktune.copy(cp.empty_like(warm), warm)
    ktune.histogram(warm.astype(cp.uint8))
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        a = cp.zeros((512, 512), dtype=cp.float32)
        ones = cp.ones((512, 512), dtype=cp.float32)
        s.synchronize()
        spin_fill((64,), (256,), (a, cp.int32(a.size), cp.int64(50_000_000)))
        c = ktune.gemm(a, ones)
        copied = cp.empty_like(a)
        ktune.copy(copied, a)
        counts = ktune.histogram(a.astype(cp.uint8))  # CuPy's cast, then ktune's count, in order
        s.synchronize()
    assert bool((c == 512.0).all()), "gemm ran before the stream's earlier kernel"
    assert bool((copied == 1.0).all()), "copy ran before the stream's earlier kernel"
    assert int(counts[1]) == a.size and int(counts.sum()) == a.size
