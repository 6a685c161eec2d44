#!/usr/bin/env python3
"""The summary of `scripts/gpu-check.sh compile-ab`'s compile-ab.txt (item 4 of issue 23: the GPU
waiting on compiles in short tunes): per arm, the tunes, their wall time summed, the GPU's wait
on compiles summed (and its share), the median tune's share, the tunes at 10% or less, the
compiles, the launch variants measured while compiles ran (and of them those in place of
proposals given up), and the waits for each tune's first compile. With two arms, each tune's best
(the tune table's metric, higher is better) of the second arm over the first's, shape by shape and
as a geometric mean.

  scripts/compile-ab-summary.py compile-ab.txt
  scripts/compile-ab-summary.py --self-test   summarises planted lines and fails unless the
                                              figures are right

The file's lines are "rROUND ARM DTYPE SHAPE:OP: " followed by a tune's summary line (ktune
tune's, on stderr) or its table row, as compile-ab writes them.
"""
import io
import math
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^(r\d+) (\S+) (\S+) (\S+): (.*)$")
TUNE = re.compile(
    r"; (?P<seconds>[\d.]+) s; (?P<compiles>\d+) compiles .*?(?P<variants>\d+) launch variants "
    r"measured while compiles ran(?: \((?P<given_up>\d+) in place of proposals given up\))?, "
    r"GPU waited on compiles (?P<wait>[\d.]+) s \((?P<share>\d+)% of the run, "
    r"(?P<first>[\d.]+) s of it")
BEST = re.compile(r"  (?P<value>[\d.]+) (?P<unit>TFLOPS|GFLOPS|GB/s)  ")


def summarise(lines, out):
    tunes = defaultdict(list)  # arm -> [dict of a tune's figures]
    best = {}  # (round, arm, dtype, shape) -> the tune's best
    arms = []
    for line in lines:
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        rnd, arm, dtype, shape, rest = m.groups()
        if arm not in arms:
            arms.append(arm)
        t = TUNE.search(rest)
        if t:
            f = {k: float(v) if v is not None else 0.0 for k, v in t.groupdict().items()}
            tunes[arm].append(f)
            continue
        b = BEST.search(rest)
        if b:
            best[(rnd, arm, dtype, shape)] = float(b.group("value"))
    print(f"{'arm':10} {'tunes':>5} {'wall s':>7} {'waited s':>8} {'share':>5} {'median':>6} "
          f"{'<=10%':>5} {'compiles':>8} {'variants':>8} {'given up':>8} {'first s':>7}", file=out)
    for arm in arms:
        v = tunes[arm]
        if not v:
            continue
        wall = sum(x["seconds"] for x in v)
        wait = sum(x["wait"] for x in v)
        print(f"{arm:10} {len(v):5} {wall:7.1f} {wait:8.1f} {100 * wait / wall if wall else 0:4.0f}% "
              f"{statistics.median(x['share'] for x in v):5.0f}% "
              f"{sum(x['share'] <= 10 for x in v):5} {sum(int(x['compiles']) for x in v):8} "
              f"{sum(int(x['variants']) for x in v):8} {sum(int(x['given_up']) for x in v):8} "
              f"{sum(x['first'] for x in v):7.1f}", file=out)
    if len(arms) == 2:
        a, b = arms
        ratios = []
        for (rnd, arm, dtype, shape), value in sorted(best.items()):
            other = best.get((rnd, b, dtype, shape))
            if arm == a and other and value > 0:
                ratios.append((other / value, rnd, dtype, shape, value, other))
        for r, rnd, dtype, shape, x, y in sorted(ratios):
            print(f"  best {b} / {a} {r:.3f}  {rnd} {dtype} {shape}  {x:g} -> {y:g}", file=out)
        if ratios:
            geomean = math.exp(sum(math.log(r[0]) for r in ratios) / len(ratios))
            print(f"best {b} / {a}: geomean {geomean:.3f} over {len(ratios)} tunes", file=out)
    return 0


def self_test():
    """Two arms, two shapes: the sums, the median, the tunes at 10% or less, a line without the
    given-up count (an older build's) read as none given up, and the best's ratios."""
    def tune(rnd, arm, shape, seconds, compiles, variants, given_up, wait, share, first):
        given = f" ({given_up} in place of proposals given up)" if given_up is not None else ""
        return (f"{rnd} {arm} f32 {shape}: ktune: gemm p: run 1, 40 evaluated (40 ok, 0 failed), 0 "
                f"from earlier runs; stopped: evaluation budget; {seconds} s; {compiles} compiles on "
                f"16 compiler processes (1.0 per s, 0.10 s each), 0 from the binary cache, 0 sharing "
                f"another candidate's compile, {variants} launch variants measured while compiles "
                f"ran{given}, GPU waited on compiles {wait} s ({share}% of the run, {first} s of it "
                f"for the first compile)\n")

    def row(rnd, arm, shape, value):
        return (f"{rnd} {arm} f32 {shape}:   0  gemm    p  model     1000         40  40       0"
                f"      1.0  {value} TFLOPS  BK=8\n")
    lines = [
        tune("r1", "old", "8x8x8:nn", 2.0, 30, 0, None, 1.0, 50, 0.2), row("r1", "old", "8x8x8:nn", 20),
        tune("r1", "new", "8x8x8:nn", 1.0, 20, 10, 9, 0.1, 10, 0.1), row("r1", "new", "8x8x8:nn", 22),
        tune("r1", "old", "9x9x9:tn", 4.0, 40, 2, None, 2.0, 50, 0.3), row("r1", "old", "9x9x9:tn", 10),
        tune("r1", "new", "9x9x9:tn", 3.0, 35, 5, 4, 0.6, 20, 0.2), row("r1", "new", "9x9x9:tn", 9),
        "a line of something else\n",
    ]
    out = io.StringIO()
    summarise(lines, out)
    got = [" ".join(line.split()) for line in out.getvalue().splitlines()[1:]]
    want = [
        "old 2 6.0 3.0 50% 50% 0 70 2 0 0.5",
        "new 2 4.0 0.7 18% 15% 1 55 15 13 0.3",
        "best new / old 0.900 r1 f32 9x9x9:tn 10 -> 9",
        "best new / old 1.100 r1 f32 8x8x8:nn 20 -> 22",
        f"best new / old: geomean {math.sqrt(0.9 * 1.1):.3f} over 2 tunes",
    ]
    if got != want:
        print("compile-ab-summary self-test FAILED:\n  want " + "\n       ".join(want)
              + "\n  got  " + "\n       ".join(got))
        return 1
    print("compile-ab-summary self-test: two planted arms summed, their bests compared")
    return 0


def main(args):
    if args == ["--self-test"]:
        return self_test()
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(args[0]) as f:
        return summarise(f.readlines(), sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
