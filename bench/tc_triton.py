"""A Triton matmul, autotuned over 12 usual Hopper configurations, on the shapes of a
`ktune bench gemm --dtype bf16|f16|tf32` CSV, in the same GPU visit: its rows are appended to that CSV
with `triton` in the anchor column (the Triton matmul itself, and ktune's row over it).

ktune's gemm_tc problem m x n x k (column-major, op tn) is, in row-major terms,
C (n x m) = W (n x k) @ X (m x k)^T: Triton computes that product, with X^T as a strided view.
Timing as ktune's bench: L2 flushed before each run, median of 30 after warm-up. Every result is
checked against torch.matmul in float32 (TF32 off) before it is timed.

tf32: float32 tensors, which tl.dot multiplies as tf32 (its default input precision for float32),
C float32.

Usage: python3 bench/tc_triton.py CSV   (the CSV of ktune bench gemm --dtype bf16, f16 or tf32)
"""
import csv
import datetime
import math
import os
import sys

import torch
import triton
import triton.language as tl

# The usual Hopper set: tiles 64..256, k-steps 32..128, 3 to 5 stages, 4 or 8 warps.
CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=8),
    triton.Config({"BM": 128, "BN": 128, "BK": 128, "GROUP": 8}, num_stages=3, num_warps=8),
    triton.Config({"BM": 128, "BN": 64, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 64, "BN": 64, "BK": 64, "GROUP": 8}, num_stages=5, num_warps=4),
    triton.Config({"BM": 128, "BN": 256, "BK": 32, "GROUP": 8}, num_stages=4, num_warps=8),
    triton.Config({"BM": 64, "BN": 256, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 256, "BN": 64, "BK": 64, "GROUP": 8}, num_stages=4, num_warps=4),
    triton.Config({"BM": 128, "BN": 64, "BK": 128, "GROUP": 8}, num_stages=3, num_warps=4),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    width = GROUP * tiles_n
    first = (pid // width) * GROUP
    rows = tl.minimum(tiles_m - first, GROUP)
    pm = first + (pid % width) % rows
    pn = (pid % width) // rows
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * sam + rk[None, :] * sak
    pb = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        left = K - k0 * BK
        x = tl.load(pa, mask=rk[None, :] < left, other=0.0)
        y = tl.load(pb, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BK * sak
        pb += BK * sbk
    cm = pm * BM + tl.arange(0, BM)
    cn = pn * BN + tl.arange(0, BN)
    pc = c + cm[:, None] * scm + cn[None, :] * scn
    tl.store(pc, acc.to(c.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


def run(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    matmul[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1))


def time_ms(fn, repeats=30):
    for _ in range(5):
        fn()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    start = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    for i in range(repeats):
        flush.zero_()
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(start, end))
    return times[len(times) // 2]


def main():
    path = sys.argv[1]
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0].keys())
    torch.backends.cuda.matmul.allow_tf32 = False
    out = []
    log_sum, count = 0.0, 0
    for r in rows:
        if r["variant"] != "ktune gemm_tc":
            continue
        key = dict(kv.split("=") for kv in r["problem"].split(";"))
        if key["op"] != "tn":
            print(f"{r['problem']}: skipped (this script lays out op tn only)", flush=True)
            continue
        m, n, k = int(key["m"]), int(key["n"]), int(key["k"])
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32}[key["dtype"]]
        g = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
        w = torch.rand(n, k, device="cuda", dtype=dtype, generator=g) * 2 - 1
        x = torch.rand(m, k, device="cuda", dtype=dtype, generator=g) * 2 - 1
        c = torch.empty(n, m, device="cuda", dtype=dtype)
        run(w, x.t(), c)  # autotunes at the first call
        torch.cuda.synchronize()
        want = w.float() @ x.float().t()
        err = (c.float() - want).abs()
        mag = w.float().abs() @ x.float().abs().t()
        rel = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 0.0}[dtype]
        # The output's rounding, and fp32 sums (Triton's and torch's reference) as ktune's bench;
        # for tf32 also each factor's loss to 10 bits of mantissa (docs/GEMM_TC.md).
        acc = 2 * (1 + rel) * 16 * 5.96e-8 * k ** 0.5
        if dtype == torch.float32:
            acc += 2.0 ** -9 * (1 + 2.0 ** -11)
        ok = bool((err <= rel * want.abs() + acc * mag + 1e-6).all())
        ms = time_ms(lambda: run(w, x.t(), c))
        tflops = 2.0 * m * n * k / ms / 1e9
        best = matmul.best_config
        base = {f: "" for f in fields}
        now = datetime.datetime.now(datetime.timezone.utc)
        base.update({"date": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                     "commit": os.environ.get("KTUNE_COMMIT", "unknown"), "device": r["device"],
                     "driver": r["driver"], "nvrtc": r["nvrtc"], "family": "gemm_tc",
                     "problem": r["problem"], "unit": "TFLOPS", "anchor": "triton",
                     "stage": r.get("stage", ""), "seed": r.get("seed", "")})
        tri = dict(base)
        tri.update({"variant": "triton matmul (autotuned, 12 configs)", "median_ms": f"{ms:.6f}",
                    "repeats": "30", "figure": f"{tflops:.3f}", "ratio": "1",
                    "config": f"BM={best.kwargs['BM']} BN={best.kwargs['BN']} "
                              f"BK={best.kwargs['BK']} stages={best.num_stages} "
                              f"warps={best.num_warps} triton {triton.__version__}",
                    "verified": "yes" if ok else "no"})
        ours = dict(base)
        ratio = float(r["figure"]) / tflops
        ours.update({"variant": "ktune gemm_tc / triton", "figure": r["figure"],
                     "ratio": f"{ratio:.6f}", "config": r["config"], "verified": r["verified"]})
        out += [tri, ours]
        log_sum += math.log(ratio)
        count += 1
        print(f"{r['problem']}: triton {tflops:.1f} TFLOPS ({'verified' if ok else 'WRONG'}), "
              f"ktune {float(r['figure']):.1f} (x{ratio:.3f})", flush=True)
    if count:
        g = {f: "" for f in fields}
        g.update({"family": "gemm_tc", "problem": f"{count} shapes", "variant": "geomean ratio",
                  "ratio": f"{math.exp(log_sum / count):.6f}", "anchor": "triton"})
        out.append(g)
    with open(path, "a", newline="") as f:
        csv.DictWriter(f, fieldnames=fields).writerows(out)
    return 0 if all(o.get("verified") != "no" for o in out) else 1


if __name__ == "__main__":
    sys.exit(main())
