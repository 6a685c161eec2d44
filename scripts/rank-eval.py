#!/usr/bin/env python3
"""How the GEMM model's ranking holds against measurements: for each problem of exported JSON files
(`ktune db export`) that measure many configurations on it (scripts/gpu-check.sh cross-draw, or the
tails step's cross rows), the whole ranking that `ktune explain --candidates 0` gives from the
shipped presets for the GPU named, against the rows of that GPU. Per dtype: best measured / the
first ranked candidate measured there (geomean; how many problems fall below 0.8 and 0.9), how
many answers were themselves measured there, and the mean |log(measured / predicted)| of every
ranked candidate measured there. The host test PredictedOnFreshShapes holds the same figures for
the committed draws; this prints them for any file, and the worst problems.

  scripts/rank-eval.py [--ktune PATH] [--worst N] [--by] GPU A.json [B.json ...]
      GPU      the GPU's name as the database knows it ('NVIDIA H100 80GB HBM3')
      --ktune  the ktune binary (build/ktune); --worst N  list the N lowest problems a dtype
      --by     also the predictions' error by what they carried: measured / predicted (geomean)
               and mean |log| per dtype, by the nearest measurement's op (the problem's or
               another), by log2(k / its k), and by the candidate's place in the ranking
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
from concurrent.futures import ThreadPoolExecutor
from collections import defaultdict

from ktune_explain import ranking, ranking_rows, rankings


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


def split_problem(problem):
    return dict(p.split("=", 1) for p in problem.split(";"))


def errors_by(measured, gpu, ktune, out):
    """measured / predicted of every ranked candidate measured there, by what its prediction
    carried; {(dtype, kind, band): [log(measured / predicted), ...]} (printed to `out`)."""
    problems = sorted(measured)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "none.db")
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            found = list(pool.map(lambda p: ranking_rows(ktune, db, p, gpu), problems))
    groups = defaultdict(list)
    for problem, rows in zip(problems, found):
        times, at = measured[problem], split_problem(problem)
        for place, (predicted, tuned, config) in enumerate(rows):
            if config not in times or not predicted > 0:
                continue
            error = math.log(times[config] / predicted)
            was = split_problem(tuned)
            k_shift = max(-3, min(3, round(math.log2(int(at["k"]) / int(was["k"])))))
            place_band = ("1st" if place == 0 else "2nd-5th" if place < 5 else
                          "6th-20th" if place < 20 else "below 20th")
            for kind, band in (("op", "same op" if at["op"] == was["op"] else "another op"),
                               ("log2(k / its k)", f"{k_shift:+d}"),
                               ("place", place_band)):
                groups[(at["dtype"], kind, band)].append(error)
    print("dtype  carried by        band          predictions  measured/predicted  mean |log|",
          file=out)
    for (dtype, kind, band), errors in sorted(groups.items()):
        mean = sum(errors) / len(errors)
        print(f"{dtype:5}  {kind:16}  {band:12}  {len(errors):11}  {math.exp(mean):18.3f}  "
              f"{sum(abs(e) for e in errors) / len(errors):10.3f}", file=out)
    return groups


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
        groups = errors_by(read_measured([path], gpu), gpu, ktune, sink)
    n, geomean, below = figures.get("f32", (0, 0, 0))
    if n != 1 or abs(geomean - 0.5) > 1e-9 or below != 1:
        sys.exit(f"self-test: {figures}, want one f32 problem at 0.5")
    # Each of the two measured candidates once in each breakdown; the first's error its own.
    places = {band: e for (d, kind, band), e in groups.items() if kind == "place"}
    if sum(len(e) for e in places.values()) != 2 or len(places.get("1st", [])) != 1:
        sys.exit(f"self-test: --by read {places}, want the two candidates, one of them first")
    if abs(places["1st"][0] - math.log(2.0 / ranked[0][0])) > 1e-9:
        sys.exit(f"self-test: --by gave {places['1st']} for the first, want log(2 / predicted)")
    print("rank-eval self-test: ok")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--ktune", default="build/ktune", help="the ktune binary (build/ktune)")
    parser.add_argument("--worst", type=int, default=0, help="list the N lowest problems a dtype")
    parser.add_argument("--by", action="store_true",
                        help="also the predictions' error by what they carried")
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
    if args.by:
        print(file=sys.stdout)
        errors_by(measured, args.gpu, args.ktune, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
