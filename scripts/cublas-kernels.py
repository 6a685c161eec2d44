#!/usr/bin/env python3
"""What cuBLAS runs on chosen GEMM shapes: each shape called through torch.mm (cuBLAS) under
torch.profiler, after a warm-up, and the GPU kernels of those calls listed with their mean time a
call. The kernel names tell the tile, the stages, the warp layout and whether k is split (the
split-K kernel or reduction beside the main one): what to compare our winners' tiles against where
they lose (docs/GEMM.md).

  scripts/cublas-kernels.py SHAPES [--calls N] [-o FILE]
      SHAPES: lines "DTYPE MxNxK:OP" (DTYPE f32 or f64; OP as ktune's, op(A) and op(B) of
      column-major matrices: n as stored, t transposed; blank lines, # comments and words after
      the shape ignored), as bench/shapes/*.txt and gpu-check.sh's shape files read them.
      f32 runs with TF32 off (cuBLAS's FP32 FFMA kernels, as `ktune bench gemm` times them).
  scripts/cublas-kernels.py --self-test   checks the mapping of ktune's op onto torch's row-major
                                          tensors on small matrices (pure Python; no GPU, no torch)

ktune's C (m x n, column-major) = op(A) op(B) is, read row-major, C^T (n x m) = op(B)^T op(A)^T:
torch.mm(left, right) with left = op(B)^T (n x k) and right = op(A)^T (k x m), each a contiguous
tensor where the operand is stored as op() uses it ("n") and a transposed view where it is not
("t"), so that cuBLAS receives the same operands, strides and ops as ktune's bench gives it.
"""
import argparse
import os
import random
import sys


def read_shapes(path):
    """[(dtype, m, n, k, op)] from a shape file."""
    shapes = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 2 or ":" not in words[1] or words[0] not in ("f32", "f64"):
                raise SystemExit(f"{path}:{number}: expected 'DTYPE MxNxK:OP', got {line.strip()!r}")
            dims, op = words[1].split(":", 1)
            try:
                m, n, k = (int(v) for v in dims.split("x"))
            except ValueError:
                raise SystemExit(f"{path}:{number}: expected MxNxK, got {dims!r}")
            if op not in ("nn", "nt", "tn", "tt") or min(m, n, k) < 1:
                raise SystemExit(f"{path}:{number}: bad op or size in {line.strip()!r}")
            shapes.append((words[0], m, n, k, op))
    return shapes


def operands(m, n, k, op, make):
    """torch.mm's (left, right) for ktune's problem m x n x k, op. make(rows, cols, stored_
    transposed) returns a rows x cols matrix: contiguous, or (stored_transposed) the transposed
    view of a contiguous cols x rows one."""
    ta, tb = op[0] == "t", op[1] == "t"
    # op(B)^T is n x k. B "n": B is k x n column-major, that is an n x k row-major array: as
    # stored. B "t": B is n x k column-major, a k x n row-major array: its transposed view.
    left = make(n, k, tb)
    # op(A)^T is k x m. A "n": m x k column-major = k x m row-major, as stored; A "t": the view.
    right = make(k, m, ta)
    return left, right


def profile(shapes, calls, emit):
    import torch
    from torch.profiler import ProfilerActivity, profile as torch_profile

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    emit(f"# cuBLAS kernels of torch.mm under torch.profiler, {calls} calls a shape after a "
         f"warm-up; {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA "
         f"{torch.version.cuda}; mean ms a call")
    for dtype, m, n, k, op in shapes:
        tdtype = torch.float32 if dtype == "f32" else torch.float64

        def make(rows, cols, transposed):
            if transposed:
                return torch.randn(cols, rows, dtype=tdtype, device=dev).t()
            return torch.randn(rows, cols, dtype=tdtype, device=dev)

        left, right = operands(m, n, k, op, make)
        for _ in range(3):
            torch.mm(left, right)
        torch.cuda.synchronize()
        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                torch.mm(left, right)
            torch.cuda.synchronize()
        kernels = {}
        for e in prof.events():
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            us = getattr(e, "device_time", None)
            if us is None:
                us = e.cuda_time
            count, total = kernels.get(e.name, (0, 0.0))
            kernels[e.name] = (count + 1, total + us)
        total_ms = sum(t for _, t in kernels.values()) / 1000 / calls
        emit(f"{dtype} {m}x{n}x{k}:{op} total {total_ms:.3f} ms")
        for name, (count, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1]):
            emit(f"    {us / 1000 / calls:.3f} ms x{count // calls}  {name[:200]}")
        del left, right
        torch.cuda.empty_cache()


class Matrix:
    """A row-major matrix of Python numbers with what the mapping uses of a torch tensor."""

    def __init__(self, rows):
        self.rows = rows

    def t(self):
        return Matrix([list(c) for c in zip(*self.rows)])

    def mm(self, other):
        cols = list(zip(*other.rows))
        return Matrix([[sum(a * b for a, b in zip(r, c)) for c in cols] for r in self.rows])


def self_test():
    rng = random.Random(5)
    m, n, k = 3, 5, 4
    for op in ("nn", "nt", "tn", "tt"):
        ta, tb = op[0] == "t", op[1] == "t"
        # ktune's operands as stored, column-major: A is m x k ("n") or k x m ("t"); B is k x n
        # or n x k. col[j][i] is element (i, j).
        a_rows, a_cols = (k, m) if ta else (m, k)
        b_rows, b_cols = (n, k) if tb else (k, n)
        a_col = [[rng.randint(-3, 3) for _ in range(a_rows)] for _ in range(a_cols)]
        b_col = [[rng.randint(-3, 3) for _ in range(b_rows)] for _ in range(b_cols)]

        def opa(i, p):  # op(A)[i][p]
            return a_col[i][p] if ta else a_col[p][i]

        def opb(p, j):  # op(B)[p][j]
            return b_col[p][j] if tb else b_col[j][p]

        expected = [[sum(opa(i, p) * opb(p, j) for p in range(k)) for j in range(n)]
                    for i in range(m)]
        # make() hands out the stored arrays, read row-major, in the order operands() asks.
        # Column-major storage of an r x c matrix is the row-major array of its transpose.
        stored = [b_col, a_col]

        def make(rows, cols, transposed):
            array = Matrix(stored.pop(0))
            got = (len(array.rows), len(array.rows[0]))
            want = (cols, rows) if transposed else (rows, cols)
            assert got == want, f"{op}: make({rows}, {cols}, {transposed}) on a {got} array"
            return array.t() if transposed else array

        left, right = operands(m, n, k, op, make)
        c_t = left.mm(right).rows  # C^T, n x m
        got = [[c_t[j][i] for j in range(n)] for i in range(m)]
        if got != expected:
            print(f"self-test: op {op}: torch.mm of the mapped operands is not op(A) op(B)")
            return 1
    print("self-test: the four ops map onto torch.mm as ktune's bench calls cuBLAS")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="?", help="a file of 'DTYPE MxNxK:OP' lines")
    ap.add_argument("--calls", type=int, default=5, help="calls profiled a shape (5)")
    ap.add_argument("-o", "--output", help="write the listing here too (else stdout only)")
    ap.add_argument("--self-test", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.shapes:
        ap.error("a shape file is needed (or --self-test)")
    if args.calls < 1:
        ap.error("--calls must be at least 1")
    shapes = read_shapes(args.shapes)
    with open(args.output or os.devnull, "w") as f:

        def emit(line):  # each line to stdout and the file as it comes (a long run stopped keeps it)
            for stream in (sys.stdout, f):
                print(line, file=stream, flush=True)

        profile(shapes, args.calls, emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
