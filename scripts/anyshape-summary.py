#!/usr/bin/env python3
"""The summary of `ktune bench gemm --random-shapes` CSVs taken together: the shards of one draw
(--shard K/N) or whole runs. Per stage and dtype, as the bench prints it for one run: the shapes,
the geometric mean of ktune / cuBLAS, the worst shape, how many below 0.80 and 0.90, and how many
ktune rows failed verification.

  scripts/anyshape-summary.py bench/results/..._shard1of4.csv ..._shard2of4.csv ...
  scripts/anyshape-summary.py --self-test   sums two planted shards and fails unless the figures
                                            and the refusal of a problem timed twice are right

A problem timed twice in one stage (two runs of the same shard) is an error: pass one of them.
The commits the rows were timed at are printed with the seed (shards of one draw may come from
different commits: the sum says so).
"""
import csv
import io
import math
import os
import sys
import tempfile
from collections import Counter, defaultdict


def summarise(paths, out, err=sys.stderr):
    seeds = set()
    commits = Counter()  # commit -> ktune rows timed at it
    ratios = defaultdict(dict)  # (stage, dtype) -> problem -> (ratio, verified)
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                # ktune's rows: those the runtime answered (the anchors' and the summaries' have
                # no lookup step).
                if not row.get("lookup_step"):
                    continue
                stage, problem = row["stage"], row["problem"]
                dtype = dict(p.split("=", 1) for p in problem.split(";") if "=" in p).get("dtype", "?")
                seeds.add(row.get("seed", ""))
                commits[row.get("commit", "") or "?"] += 1
                if problem in ratios[(stage, dtype)]:
                    print(f"{path}: {stage} {problem} is in an earlier file too", file=err)
                    return 1
                ratios[(stage, dtype)][problem] = (float(row["ratio"]), row["verified"] == "yes")
    if len(seeds) > 1:
        print(f"note: the files hold more than one seed: {sorted(seeds)}", file=err)
    print(f"seed {', '.join(sorted(seeds))}; commit "
          + ", ".join(f"{c} ({n} ktune rows)" for c, n in sorted(commits.items())), file=out)
    print(f"{'stage':8} {'dtype':5} {'shapes':>6} {'geomean':>8} {'min':>6}  {'< 0.80':>6} "
          f"{'< 0.90':>6} {'wrong':>5}  min at", file=out)
    for (stage, dtype), by_problem in sorted(ratios.items()):
        timed = {p: r for p, (r, _) in by_problem.items() if r > 0}
        wrong = sum(not ok for _, ok in by_problem.values())
        if not timed:
            continue
        geomean = math.exp(sum(math.log(r) for r in timed.values()) / len(timed))
        worst = min(timed, key=timed.get)
        print(f"{stage:8} {dtype:5} {len(timed):6} {geomean:8.3f} {timed[worst]:6.3f}  "
              f"{sum(r < 0.80 for r in timed.values()):6} {sum(r < 0.90 for r in timed.values()):6} "
              f"{wrong:5}  {worst}", file=out)
    return 0


HEADER = "date,commit,problem,variant,ratio,lookup_step,verified,stage,seed\n"


def self_test():
    """Two shards of one planted draw (three problems), from two commits: the sums, the commits,
    a wrong row counted and a problem timed twice refused."""
    rows_a = ("d,aaaa,\"dtype=f32;m=1\",ktune gemm,0.5,predicted,yes,presets,7\n"
              "d,aaaa,\"dtype=f32;m=1\",cublasSgemm,1,,yes,presets,7\n"
              "d,aaaa,\"dtype=f32;m=1\",ktune gemm,1.0,exact,yes,tuned,7\n")
    rows_b = ("d,bbbb,\"dtype=f32;m=2\",ktune gemm,2.0,predicted,yes,presets,7\n"
              "d,bbbb,\"dtype=f32;m=3\",ktune gemm,1.0,predicted,no,presets,7\n"
              "d,bbbb,\"dtype=f32;m=2\",ktune gemm,0.85,exact,yes,tuned,7\n")
    with tempfile.TemporaryDirectory() as root:
        a, b = os.path.join(root, "a.csv"), os.path.join(root, "b.csv")
        for path, rows in ((a, rows_a), (b, rows_b)):
            with open(path, "w") as f:
                f.write(HEADER + rows)
        out = io.StringIO()
        status = summarise([a, b], out)
        lines = out.getvalue().splitlines()
        want = [
            "seed 7; commit aaaa (2 ktune rows), bbbb (3 ktune rows)",
            # presets: 0.5, 2.0, 1.0 -> geomean 1.0, min 0.5; one below 0.80 and 0.90; one wrong
            "presets f32 3 1.000 0.500 1 1 1 dtype=f32;m=1",
            # tuned: 1.0, 0.85 -> geomean sqrt(0.85)
            f"tuned f32 2 {math.sqrt(0.85):.3f} 0.850 0 1 0 dtype=f32;m=2",
        ]
        got = [lines[0]] + [" ".join(line.split()) for line in lines[2:]]
        twice = summarise([a, a], io.StringIO(), io.StringIO())
    if status != 0 or got != want or twice != 1:
        print("anyshape-summary self-test FAILED:\n  want " + "\n       ".join(want) + "\n  got  "
              + "\n       ".join(got) + f"\n  status {status}, a file passed twice: {twice}")
        return 1
    print("anyshape-summary self-test: two planted shards summed, a problem timed twice refused")
    return 0


def main(paths):
    if paths == ["--self-test"]:
        return self_test()
    if not paths or any(p.startswith("-") for p in paths):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return summarise(paths, sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
