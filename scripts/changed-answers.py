#!/usr/bin/env python3
"""The GEMM shapes of random draws whose runtime answer two builds give differently, from the
shipped presets (`ktune explain gemm --gpu GPU`, host): the shapes a change of the lookup is to be
judged on (scripts/gpu-check.sh lookup-ab times them with both builds against cuBLAS). Only the
tiled shapes (m and n over 16: the gemm family's); each with the alignment class the bench's
operands get (column-major, leading dimensions m or k for A and k or n for B).

  scripts/changed-answers.py --old BIN [--new BIN] GPU SEED [SEED ...]
      prints "DTYPE MxNxK:OP" lines (gpu-check's shape files), then a count on stderr
      --new   the build judged (build/ktune); --old  the build before it
      --dtypes "f32 f64"  the draws' dtypes
  scripts/changed-answers.py --self-test [--new BIN]
      a build against itself changes no answer, and the alignment classes read as the bench's
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ktune_explain import ranking


def draw(ktune, seed, dtype):
    """(op, m, n, k) of the tiled shapes of `bench gemm --random-shapes 64 --seed SEED`."""
    out = subprocess.run([ktune, "bench", "gemm", "--random-shapes", "64", "--seed", str(seed),
                          "--dtype", dtype, "--list-shapes"],
                         capture_output=True, text=True, check=True).stdout
    shapes = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == dtype and f[1].isdigit():
            op, m, n, k = f[2], int(f[3]), int(f[4]), int(f[5])
            if m > 16 and n > 16:
                shapes.append((op, m, n, k))
    return shapes


def align(dtype, op, m, n, k):
    """The alignment class of the bench's operands (gemm_alignment: 4 or 2 elements of at most 16
    bytes that divide both leading dimensions, else 1)."""
    lda = k if op[0] == "t" else m
    ldb = n if op[1] == "t" else k
    for v in (4, 2):
        if v * (4 if dtype == "f32" else 8) <= 16 and lda % v == 0 and ldb % v == 0:
            return v
    return 1


def problem(dtype, op, m, n, k):
    return f"align={align(dtype, op, m, n, k)};dtype={dtype};k={k};m={m};n={n};op={op}"


def changed(old, new, gpu, asks):
    """The (dtype, shape) of `asks` whose answers differ between the builds."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "none.db")
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            answers = {b: list(pool.map(lambda a: ranking(b, db, problem(*a), gpu, 1)[0], asks))
                       for b in (old, new)}
    return [a for a, x, y in zip(asks, answers[old], answers[new]) if x != y]


def self_test(new):
    assert align("f32", "nn", 1000, 30, 7) == 1 and align("f32", "tn", 1001, 30, 8) == 4
    assert align("f32", "nt", 1002, 30, 6) == 2 and align("f64", "nn", 1000, 30, 64) == 2
    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    asks = [("f32",) + s for s in draw(new, 20262978, "f32")[:12]]
    assert len(asks) == 12, asks
    assert changed(new, new, h100, asks) == []
    # A planted "old build": this one answering for the H200 whatever GPU it is asked for. Its
    # changes are the shapes whose answers differ between the two GPUs, found here directly.
    with tempfile.TemporaryDirectory() as tmp:
        other = os.path.join(tmp, "other-gpu")
        with open(other, "w") as f:
            f.write(f"#!{sys.executable}\nimport os, sys\n"
                    f"args = [{h200!r} if a == {h100!r} else a for a in sys.argv[1:]]\n"
                    f"os.execv({os.path.abspath(new)!r}, [{os.path.abspath(new)!r}] + args)\n")
        os.chmod(other, 0o755)
        db = os.path.join(tmp, "none.db")
        differ = [a for a in asks if ranking(new, db, problem(*a), h100, 1)[0] !=
                  ranking(new, db, problem(*a), h200, 1)[0]]
        found = changed(other, new, h100, asks)
    assert differ and found == differ, (found, differ)
    print(f"changed-answers self-test: ok ({len(found)} of {len(asks)} answers planted)")


def main(argv):
    old, new, dtypes, args, test = None, "build/ktune", "f32 f64", [], False
    it = iter(argv)
    for a in it:
        if a == "--old":
            old = next(it)
        elif a == "--new":
            new = next(it)
        elif a == "--dtypes":
            dtypes = next(it)
        elif a == "--self-test":
            test = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return
        else:
            args.append(a)
    if test:
        self_test(new)
        return
    if old is None or len(args) < 2:
        sys.exit(__doc__)
    gpu, seeds = args[0], args[1:]
    asks = [(d,) + s for seed in seeds for d in dtypes.split() for s in draw(new, seed, d)]
    found = changed(old, new, gpu, asks)
    for d, op, m, n, k in found:
        print(f"{d} {m}x{n}x{k}:{op}")
    print(f"changed-answers: {len(found)} of {len(asks)} tiled shapes answered differently",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
