#!/usr/bin/env python3
"""Two arms of a `ktune bench gemm` A/B (scripts/gpu-check.sh tails-ab, shapes-ab, presets-ab)
compared: per round and dtype, the shapes both arms timed, ktune's geometric mean against cuBLAS
in each arm, how many shapes fall below 0.80 and 0.90, how many answers moved by over 2% (better /
worse), the ktune rows that failed verification, and the largest moves.

  scripts/ab-summary.py BASE.csv NEW.csv [BASE2.csv NEW2.csv ...]   pairs of files (a round, a
                                                                    dtype), each compared alone
  scripts/ab-summary.py --self-test   compares two planted arms and fails unless the figures are
                                      right

Each shape is measured against the lower of its two cuBLAS times (cuBLAS's time of one shape can
differ between two processes by more than the change judged). A shape that only one arm timed, or
whose ktune row failed verification in either arm, is left out of the figures (and the unverified
ones counted).
"""
import csv
import io
import math
import os
import sys
import tempfile
from collections import defaultdict


def read_arm(path):
    """dtype -> problem -> (ktune ms, cuBLAS ms, verified, config), from one bench CSV."""
    ktune, cublas = {}, {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            problem, variant = row["problem"], row["variant"]
            try:
                ms = float(row["median_ms"])
            except ValueError:
                continue
            if ms <= 0 or "dtype=" not in problem or ";m=" not in problem:
                continue
            if variant.startswith("ktune gemm") and row.get("lookup_step"):
                ktune[problem] = (ms, row["verified"] == "yes", row.get("config", ""))
            elif variant.lower().startswith("cublas"):
                cublas[problem] = min(ms, cublas.get(problem, math.inf))
    arm = defaultdict(dict)
    for problem, (ms, ok, config) in ktune.items():
        if problem in cublas:
            dtype = dict(p.split("=", 1) for p in problem.split(";")).get("dtype", "?")
            arm[dtype][problem] = (ms, cublas[problem], ok, config)
    return arm


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def compare(pairs, out, moves=5):
    print(f"{'pair':5} {'dtype':5} {'shapes':>6} {'geomean base -> new':>20} {'< 0.80':>9} "
          f"{'< 0.90':>9} {'moved >2% +/-':>13} {'unverified':>10}", file=out)
    for number, (base_path, new_path) in enumerate(pairs, 1):
        base, new = read_arm(base_path), read_arm(new_path)
        for dtype in sorted(set(base) | set(new)):
            b, n = base.get(dtype, {}), new.get(dtype, {})
            common = sorted(set(b) & set(n))
            if not common:
                continue
            unverified = sum(not b[p][2] or not n[p][2] for p in common)
            rb, rn = {}, {}
            for p in common:
                if not (b[p][2] and n[p][2]):
                    continue
                anchor = min(b[p][1], n[p][1])
                rb[p], rn[p] = anchor / b[p][0], anchor / n[p][0]
            better = sum(rn[p] > rb[p] * 1.02 for p in rb)
            worse = sum(rn[p] < rb[p] / 1.02 for p in rb)
            below = lambda r, t: sum(v < t for v in r.values())
            print(f"{number:5} {dtype:5} {len(rb):6} "
                  f"{geomean(list(rb.values())):9.3f} -> {geomean(list(rn.values())):6.3f} "
                  f"{below(rb, 0.8):4} -> {below(rn, 0.8):2} {below(rb, 0.9):4} -> {below(rn, 0.9):2} "
                  f"{better:6} / {worse:<4} {unverified:10}", file=out)
            for p in sorted(rb, key=lambda p: -abs(math.log(rn[p] / rb[p])))[:moves]:
                if abs(math.log(rn[p] / rb[p])) <= math.log(1.02):
                    break
                print(f"      {rb[p]:.3f} -> {rn[p]:.3f}  {p}", file=out)
    return 0


HEADER = "problem,variant,median_ms,lookup_step,verified,config\n"


def self_test():
    """Two planted arms of three f32 shapes and one f64: the figures, the lower cuBLAS time taken,
    an unverified row left out and counted, a shape of one arm alone left out."""
    base = ("\"dtype=f32;m=1\",ktune gemm,2.0,predicted,yes,a\n"
            "\"dtype=f32;m=1\",cublasSgemm,1.0,,yes,\n"
            "\"dtype=f32;m=2\",ktune gemm,1.0,predicted,yes,a\n"
            "\"dtype=f32;m=2\",cublasSgemm,1.0,,yes,\n"
            "\"dtype=f32;m=3\",ktune gemm,1.0,predicted,no,a\n"
            "\"dtype=f32;m=3\",cublasSgemm,1.0,,yes,\n"
            "\"dtype=f64;m=1\",ktune gemm,1.0,predicted,yes,a\n"
            "\"dtype=f64;m=1\",cublasDgemm,1.0,,yes,\n")
    new = ("\"dtype=f32;m=1\",ktune gemm,1.0,predicted,yes,b\n"
           "\"dtype=f32;m=1\",cublasSgemm,0.5,,yes,\n"
           "\"dtype=f32;m=2\",ktune gemm,1.0,predicted,yes,a\n"
           "\"dtype=f32;m=2\",cublasSgemm,2.0,,yes,\n"
           "\"dtype=f32;m=3\",ktune gemm,1.0,predicted,yes,a\n"
           "\"dtype=f32;m=3\",cublasSgemm,1.0,,yes,\n")
    with tempfile.TemporaryDirectory() as root:
        a, b = os.path.join(root, "base.csv"), os.path.join(root, "new.csv")
        for path, rows in ((a, base), (b, new)):
            with open(path, "w") as f:
                f.write(HEADER + rows)
        out = io.StringIO()
        compare([(a, b)], out)
    got = [" ".join(line.split()) for line in out.getvalue().splitlines()[1:]]
    # f32 m=1: cuBLAS 0.5 (the lower), 0.5 / 2.0 = 0.25 -> 0.5 / 1.0 = 0.5; m=2: 1.0 -> 1.0;
    # m=3 unverified in base: left out, counted. f64: only base timed it.
    want = [f"1 f32 2 {math.sqrt(0.25):.3f} -> {math.sqrt(0.5):.3f} 1 -> 1 1 -> 1 1 / 0 1",
            "0.250 -> 0.500 dtype=f32;m=1"]
    if got != want:
        print("ab-summary self-test FAILED:\n  want " + "\n       ".join(want) + "\n  got  "
              + "\n       ".join(got))
        return 1
    print("ab-summary self-test: two planted arms compared")
    return 0


def main(args):
    if args == ["--self-test"]:
        return self_test()
    if not args or len(args) % 2 or any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return compare(list(zip(args[::2], args[1::2])), sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
