#!/usr/bin/env python3
"""The summary of `ktune bench gemm --random-shapes` CSVs taken together: the shards of one draw
(--shard K/N) or whole runs. Per stage and dtype, as the bench prints it for one run: the shapes,
the geometric mean of ktune / cuBLAS, the worst shape, how many below 0.80 and 0.90, and how many
ktune rows failed verification.

  scripts/anyshape-summary.py bench/results/..._shard1of4.csv ..._shard2of4.csv ...

A problem timed twice in one stage (two runs of the same shard) is an error: pass one of them.
"""
import csv
import math
import sys
from collections import defaultdict


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    seeds = set()
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
                if problem in ratios[(stage, dtype)]:
                    print(f"{path}: {stage} {problem} is in an earlier file too", file=sys.stderr)
                    return 1
                ratios[(stage, dtype)][problem] = (float(row["ratio"]), row["verified"] == "yes")
    if len(seeds) > 1:
        print(f"note: the files hold more than one seed: {sorted(seeds)}", file=sys.stderr)
    print(f"seed {', '.join(sorted(seeds))}")
    print(f"{'stage':8} {'dtype':5} {'shapes':>6} {'geomean':>8} {'min':>6}  {'< 0.80':>6} "
          f"{'< 0.90':>6} {'wrong':>5}  min at")
    for (stage, dtype), by_problem in sorted(ratios.items()):
        timed = {p: r for p, (r, _) in by_problem.items() if r > 0}
        wrong = sum(not ok for _, ok in by_problem.values())
        if not timed:
            continue
        geomean = math.exp(sum(math.log(r) for r in timed.values()) / len(timed))
        worst = min(timed, key=timed.get)
        print(f"{stage:8} {dtype:5} {len(timed):6} {geomean:8.3f} {timed[worst]:6.3f}  "
              f"{sum(r < 0.80 for r in timed.values()):6} {sum(r < 0.90 for r in timed.values()):6} "
              f"{wrong:5}  {worst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
