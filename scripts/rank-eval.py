#!/usr/bin/env python3
"""How the GEMM model's ranking holds against measurements: for each problem of exported JSON files
(`ktune db export`) that measure many configurations on it (scripts/gpu-check.sh cross-draw, or the
tails step's cross rows), the whole ranking that `ktune explain --candidates 0` gives from the
shipped presets for the GPU named, against the rows of that GPU. Per dtype: best measured / the
first ranked candidate measured there (geomean; how many problems fall below 0.8 and 0.9), how
many answers were themselves measured there, and the mean |log(measured / predicted)| of every
ranked candidate measured there. The host test PredictedOnFreshShapes holds the same figures for
the committed draws; this prints them for any file, and the worst problems.

  scripts/rank-eval.py [--ktune PATH] [--worst N] GPU A.json [B.json ...]
      GPU      the GPU's name as the database knows it ('NVIDIA H100 80GB HBM3')
      --ktune  the ktune binary (build/ktune); --worst N  list the N lowest problems a dtype
  scripts/rank-eval.py --self-test [--ktune PATH]
      plants two measurements of explain's first two candidates, the first twice as slow, and
      fails unless the figures say 0.5

A set chosen where the model ran slow (a tail) rewards almost any change by regression to the
mean: judge a change on a random draw (docs/GEMM.md).
"""
import argparse
import json
import math
import os
import sys
import tempfile
from collections import defaultdict

from ktune_explain import ranking, rankings


def read_measured(paths, gpu):
    """problem -> config -> the least median ms of the ok GEMM rows of `gpu`."""
    measured = defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["results"]:
                if r.get("family") != "gemm" or r.get("status") != "ok":
                    continue
                if r.get("device", {}).get("name") != gpu or not r.get("time_median_ms"):
                    continue
                times = measured[r["problem"]]
                times[r["config"]] = min(r["time_median_ms"], times.get(r["config"], math.inf))
    return measured


def evaluate(measured, gpu, ktune, worst, out):
    problems = sorted(measured)
    found = rankings(ktune, [(p, gpu) for p in problems], candidates=0)
    by_dtype = defaultdict(list)
    for problem, (answer, ranked) in zip(problems, found):
        times = measured[problem]
        hits = [(ms, c) for ms, c in ranked if c in times]
        if not hits:
            continue
        best = min(times.values())
        errors = [abs(math.log(times[c] / ms)) for ms, c in hits if ms > 0]
        dtype = dict(p.split("=", 1) for p in problem.split(";")).get("dtype", "?")
        by_dtype[dtype].append((best / times[hits[0][1]], answer in times,
                                sum(errors) / max(len(errors), 1), len(errors), problem))
    figures = {}
    print("dtype  problems  best/first  below 0.8  below 0.9  answer measured  mean |log|",
          file=out)
    for dtype, rows in sorted(by_dtype.items()):
        n = len(rows)
        geomean = math.exp(sum(math.log(r[0]) for r in rows) / n)
        below8, below9 = sum(r[0] < 0.8 for r in rows), sum(r[0] < 0.9 for r in rows)
        spread = sum(r[2] * r[3] for r in rows) / max(sum(r[3] for r in rows), 1)
        figures[dtype] = (n, geomean, below8)
        print(f"{dtype:5}  {n:8}  {geomean:10.3f}  {below8:9}  {below9:9}  "
              f"{sum(r[1] for r in rows):15}  {spread:10.3f}", file=out)
        for r in sorted(rows)[:worst]:
            print(f"       {r[0]:.3f}  {r[4]}", file=out)
    return figures


def self_test(ktune):
    gpu, problem = "NVIDIA H200", "align=4;dtype=f32;k=91;m=2394;n=1364;op=nn"
    with tempfile.TemporaryDirectory() as tmp:
        _, ranked = ranking(ktune, os.path.join(tmp, "none.db"), problem, gpu, candidates=0)
        assert len(ranked) >= 2, ranked
        first, second = ranked[0][1], ranked[1][1]
        row = {"device": {"name": gpu}, "family": "gemm", "problem": problem, "status": "ok"}
        rows = [dict(row, config=first, time_median_ms=2.0),
                dict(row, config=second, time_median_ms=1.0),
                # Neither read: a failed row, another GPU's.
                dict(row, config=second, time_median_ms=0.001, status="failed"),
                dict(row, config=first, time_median_ms=0.001, device={"name": "NVIDIA H100"})]
        path = os.path.join(tmp, "planted.json")
        with open(path, "w") as f:
            json.dump({"results": rows}, f)
        sink = open(os.devnull, "w")
        figures = evaluate(read_measured([path], gpu), gpu, ktune, 0, sink)
    n, geomean, below = figures.get("f32", (0, 0, 0))
    if n != 1 or abs(geomean - 0.5) > 1e-9 or below != 1:
        sys.exit(f"self-test: {figures}, want one f32 problem at 0.5")
    print("rank-eval self-test: ok")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--ktune", default="build/ktune", help="the ktune binary (build/ktune)")
    parser.add_argument("--worst", type=int, default=0, help="list the N lowest problems a dtype")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("gpu", nargs="?", help="the GPU's name as the database knows it")
    parser.add_argument("files", nargs="*", help="exported JSON files (ktune db export)")
    args = parser.parse_args(argv)
    if args.self_test:
        self_test(args.ktune)
        return
    if args.gpu is None or not args.files:
        parser.error("a GPU and at least one file are needed")
    measured = read_measured(args.files, args.gpu)
    if not measured:
        sys.exit(f"rank-eval: no ok GEMM rows of {args.gpu!r} in {', '.join(args.files)}")
    evaluate(measured, args.gpu, args.ktune, args.worst, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
