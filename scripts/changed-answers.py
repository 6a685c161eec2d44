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
import argparse
import os
import subprocess
import sys
import tempfile

from ktune_explain import rankings


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


def answers(ktune, gpu, asks):
    """The answer `ktune` gives for each (dtype, op, m, n, k) of `asks` on `gpu`."""
    return [answer for answer, _ in rankings(ktune, [(problem(*a), gpu) for a in asks], 1)]


def changed(old, new, gpu, asks):
    """The (dtype, shape) of `asks` whose answers differ between the builds."""
    return [a for a, x, y in zip(asks, answers(old, gpu, asks), answers(new, gpu, asks)) if x != y]


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
        differ = [a for a, x, y in zip(asks, answers(new, h100, asks), answers(new, h200, asks))
                  if x != y]
        found = changed(other, new, h100, asks)
    assert differ and found == differ, (found, differ)
    print(f"changed-answers self-test: ok ({len(found)} of {len(asks)} answers planted)")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--old", help="the build before the change")
    parser.add_argument("--new", default="build/ktune", help="the build judged (build/ktune)")
    parser.add_argument("--dtypes", default="f32 f64", help="the draws' dtypes (\"f32 f64\")")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("gpu", nargs="?", help="the GPU's name as the database knows it")
    parser.add_argument("seeds", nargs="*", help="seeds of `bench gemm --random-shapes 64`")
    args = parser.parse_args(argv)
    if args.self_test:
        self_test(args.new)
        return
    if args.old is None or args.gpu is None or not args.seeds:
        parser.error("--old, a GPU and at least one seed are needed")
    asks = [(d,) + s for seed in args.seeds for d in args.dtypes.split()
            for s in draw(args.new, seed, d)]
    found = changed(args.old, args.new, args.gpu, asks)
    for d, op, m, n, k in found:
        print(f"{d} {m}x{n}x{k}:{op}")
    print(f"changed-answers: {len(found)} of {len(asks)} tiled shapes answered differently",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
