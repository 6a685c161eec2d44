"""torch.matmul in bf16 / fp16 on the shapes of a gemm_tc problem, for a first comparison.

ktune's gemm_tc problem m x n x k (column-major, op tn) is, in row-major terms,
C (n x m) = W (n x k) @ X (m x k)^T: the same flops, the same k-contiguous operands.
Usage: python3 bench/tc_torch.py MxNxK [MxNxK ...]   (TC_DTYPES=bf16,f16 in the environment)
"""
import os
import sys

import torch


def time_ms(fn, repeats=20):
    for _ in range(3):
        fn()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for i in range(repeats):
        flush.zero_()  # L2 flushed before each timed run, as ktune's tuner does
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(start, end))
    return times[len(times) // 2]


def main():
    dtypes = os.environ.get("TC_DTYPES", "bf16").replace(",", " ").split()
    print("torch", torch.__version__, "cuBLAS", torch.backends.cuda.preferred_blas_library(),
          torch.cuda.get_device_name())
    for shape in sys.argv[1:]:
        m, n, k = (int(v) for v in shape.split("x"))
        for d in dtypes:
            t = {"bf16": torch.bfloat16, "f16": torch.float16}[d]
            w = torch.rand(n, k, device="cuda", dtype=t) * 2 - 1
            x = torch.rand(m, k, device="cuda", dtype=t) * 2 - 1
            ms = time_ms(lambda: torch.matmul(w, x.t()))
            print(f"{shape} {d}: torch.matmul {ms:.4f} ms, {2 * m * n * k / ms / 1e9:.1f} TFLOPS")


if __name__ == "__main__":
    main()
