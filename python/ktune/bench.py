"""python -m ktune.bench [--csv FILE] [--device N]: ktune.gemm against torch.matmul (float32,
TF32 off) in the same process, and the host cost of a ktune call from Python.

Each GEMM is verified against torch's before it is timed (|ktune - torch| within 16 eps sqrt(k)
times the sum of the products' magnitudes, elementwise). Times: CUDA events around 20 runs,
the median, after 3 warm-ups. The overhead rows time 20000 back-to-back calls on the host:
ktune.copy on torch tensors (the whole Python path), the same C function through ctypes with
raw pointers, and torch's own copy_ for scale."""
import argparse
import csv
import ctypes
import statistics
import sys
import time

SHAPES = [  # m, n, k: squares, odd sizes, skinny and long-k shapes, as in ktune's GEMM suite
    (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (1000, 1000, 1000),
    (4096, 4096, 1024), (8192, 128, 8192), (128, 8192, 8192), (1760, 128, 1760),
    (64, 64, 262144), (3000, 2000, 777)]


def _time(fn, torch, repeats=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv=None):
    import torch

    import ktune
    from ktune import _lib

    p = argparse.ArgumentParser(prog="python -m ktune.bench", description=__doc__.splitlines()[0])
    p.add_argument("--csv", help="write the rows to this CSV file")
    p.add_argument("--device", type=int, default=0)
    args = p.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", args.device)
    name = torch.cuda.get_device_name(dev)
    rows = []
    failed = False
    for m, n, k in SHAPES:
        g = torch.Generator(device=dev).manual_seed(m * 7 + n * 13 + k)
        a = torch.rand(m, k, device=dev, generator=g) * 2 - 1
        b = torch.rand(k, n, device=dev, generator=g) * 2 - 1
        ours, theirs = torch.empty(m, n, device=dev), torch.empty(m, n, device=dev)
        ktune.gemm(a, b, out=ours)
        torch.matmul(a, b, out=theirs)
        bound = 16 * torch.finfo(torch.float32).eps * k ** 0.5 * (a.abs() @ b.abs())
        wrong = int(((ours - theirs).abs() > bound + 1e-30).sum())
        verified = wrong == 0
        failed |= not verified
        t_ours = _time(lambda: ktune.gemm(a, b, out=ours), torch)
        t_torch = _time(lambda: torch.matmul(a, b, out=theirs), torch)
        flops = 2.0 * m * n * k
        for variant, t, anchor in (("torch.matmul", t_torch, 1.0),
                                   ("ktune.gemm", t_ours, t_torch / t_ours)):
            rows.append({"device": name, "problem": f"{m}x{n}x{k}", "variant": variant,
                         "median_ms": f"{t:.4f}", "tflops": f"{flops / t / 1e9:.2f}",
                         "ratio": f"{anchor:.3f}", "anchor": "torch.matmul",
                         "verified": "yes" if verified else f"NO ({wrong} wrong)"})
        print(f"{m}x{n}x{k}: ktune {flops / t_ours / 1e9:.1f} TFLOPS, torch "
              f"{flops / t_torch / 1e9:.1f}, ratio {t_torch / t_ours:.3f}"
              f"{'' if verified else '  WRONG: ' + str(wrong)}", flush=True)

    # Host cost of one call: the Python layer over the C call.
    n = 1024
    src, dst = torch.rand(n, device=dev), torch.empty(n, device=dev)
    h, rt = _lib.lib(), ktune.runtime(args.device)
    stream = torch.cuda.current_stream(dev).cuda_stream
    raw = lambda: h.ktune_copy_f32(rt.handle, dst.data_ptr(), src.data_ptr(), n, stream)  # noqa
    calls = 20000
    results = {}
    for label, fn in (("ktune.copy (Python)", lambda: ktune.copy(dst, src)),
                      ("ktune_copy_f32 (ctypes, raw pointers)", raw),
                      ("torch copy_", lambda: dst.copy_(src))):
        for _ in range(200):
            fn()
        torch.cuda.synchronize(dev)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - t0) / calls * 1e6)
            torch.cuda.synchronize(dev)
        results[label] = best
    base = results["ktune_copy_f32 (ctypes, raw pointers)"]
    for label, us in results.items():
        rows.append({"device": name, "problem": f"copy n={n} host time per call", "variant": label,
                     "median_ms": f"{us / 1000:.6f}", "tflops": "", "ratio": f"{us - base:.2f}",
                     "anchor": "us above the ctypes call", "verified": "-"})
        print(f"{label}: {us:.2f} us per call", flush=True)
    torch.cuda.synchronize(dev)
    ok = torch.equal(dst, src)
    failed |= not ok
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    ratios = [float(r["ratio"]) for r in rows if r["variant"] == "ktune.gemm"]
    geo = 1.0
    for r in ratios:
        geo *= r
    print(f"geomean ktune.gemm / torch.matmul: {geo ** (1 / len(ratios)):.3f} over {len(ratios)} "
          f"shapes on {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
