#!/usr/bin/env python3
"""How far the GEMM model's predictions are from what ran: for each verified `ktune gemm` row of
`ktune bench gemm` CSVs (the presets stage of `--random-shapes`, say), the prediction `ktune
explain` gives today for that row's configuration on that problem and GPU, against the row's
measured time. Per dtype and band of k: the answers found among the ranked candidates, the
geometric mean of measured / predicted (over 1: the model rated them too fast) and the mean
|log(measured / predicted)|. A row whose configuration the ranking no longer lists (the presets or
the model changed) is counted as not found. No GPU: the explain runs here, for the CSV's GPU.

  scripts/model-error.py [--ktune PATH] [--gpu NAME] A.csv [B.csv ...]
      --ktune  the ktune binary (build/ktune); --gpu  the GPU to answer for, as the database knows
      it (default: each row's own device, up to the first " |")
  scripts/model-error.py --self-test [--ktune PATH]
      plants two rows at 2 x and 0.5 x the prediction of explain's own answer and fails unless
      the figures say so

Answers a model rated fastest are the ones it rated most optimistically among those it ranked, so
part of an excess over 1 is selection; how it moves between two builds is what to read.
"""
import csv
import io
import math
import os
import sys
import tempfile
from collections import defaultdict

from ktune_explain import ranking, rankings

BANDS = [(128, "k < 128"), (512, "k < 512"), (4096, "k < 4096"), (32768, "k < 32768"),
         (math.inf, "k >= 32768")]


def band(k):
    return next(name for bound, name in BANDS if k < bound)


def first_predictions(ranked):
    """{config: predicted ms} of a ranking, each configuration at its first (fastest) place."""
    predicted = {}
    for ms, config in ranked:
        predicted.setdefault(config, ms)
    return predicted


def explain(ktune, db, problem, gpu):
    """(answer config, {config: predicted ms}) of `ktune explain gemm PROBLEM --gpu GPU`."""
    answer, ranked = ranking(ktune, db, problem, gpu)
    return answer, first_predictions(ranked)


def read_rows(paths, gpu):
    """(problem, config, gpu) -> the least median ms of the verified ktune gemm rows."""
    rows = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("family") != "gemm" or not r.get("variant", "").startswith("ktune gemm"):
                    continue
                if r.get("verified") != "yes" or not r.get("config"):
                    continue
                device = gpu or r["device"].split(" |")[0]
                key = (r["problem"], r["config"], device)
                rows[key] = min(float(r["median_ms"]), rows.get(key, math.inf))
    return rows


def summarize(rows, ktune, out):
    keys = list(rows)
    found = [first_predictions(ranked)
             for _, ranked in rankings(ktune, [(key[0], key[2]) for key in keys])]
    groups = defaultdict(list)
    missing = defaultdict(int)
    for (problem, config, device), predicted in zip(keys, found):
        attrs = dict(p.split("=", 1) for p in problem.split(";"))
        dtype, k = attrs.get("dtype", "?"), int(attrs.get("k", 0))
        if config not in predicted or not predicted[config] > 0:
            missing[dtype] += 1
            continue
        e = math.log(rows[(problem, config, device)] / predicted[config])
        groups[(dtype, band(k))].append(e)
        groups[(dtype, "all")].append(e)
    figures = {}
    print("dtype  k           answers  measured/predicted  mean |log|", file=out)
    for dtype in sorted({d for d, _ in groups}):
        for _, name in BANDS + [(None, "all")]:
            e = groups.get((dtype, name))
            if not e:
                continue
            ratio, spread = math.exp(sum(e) / len(e)), sum(map(abs, e)) / len(e)
            figures[(dtype, name)] = (len(e), ratio, spread)
            print(f"{dtype:5}  {name:10}  {len(e):7}  {ratio:18.3f}  {spread:10.3f}", file=out)
        print(f"{dtype:5}  not found   {missing[dtype]:7}", file=out)
    return figures


def self_test(ktune):
    problems = ["align=4;dtype=f32;k=74;m=681;n=11968;op=nt",
                "align=2;dtype=f64;k=3653;m=146;n=3350;op=nt"]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "none.db")
        path = os.path.join(tmp, "planted.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["family", "problem", "variant", "median_ms", "config", "verified",
                        "device"])
            for problem, factor in zip(problems, (2.0, 0.5)):
                answer, predicted = explain(ktune, db, problem, "NVIDIA H200")
                assert answer in predicted, (problem, answer)
                w.writerow(["gemm", problem, "ktune gemm", predicted[answer] * factor, answer,
                            "yes", "NVIDIA H200 | sm_90 | 132 SMs"])
            # Neither read: a row that failed verification, and cuBLAS's.
            w.writerow(["gemm", problems[0], "ktune gemm", 1e-9, answer, "no", "NVIDIA H200"])
            w.writerow(["gemm", problems[0], "cublasSgemm", 1e-9, "", "yes", "NVIDIA H200"])
        figures = summarize(read_rows([path], None), ktune, io.StringIO())
    checks = {("f32", "k < 128"): 2.0, ("f32", "all"): 2.0, ("f64", "k < 4096"): 0.5}
    for key, want in checks.items():
        n, ratio, spread = figures[key]
        if n != 1 or abs(ratio / want - 1) > 1e-3 or abs(spread - abs(math.log(want))) > 1e-3:
            sys.exit(f"self-test: {key}: {figures[key]}, want 1 answer at {want}")
    print("model-error self-test: ok")


def main(argv):
    ktune, gpu, paths, test = "build/ktune", None, [], False
    it = iter(argv)
    for a in it:
        if a == "--ktune":
            ktune = next(it)
        elif a == "--gpu":
            gpu = next(it)
        elif a == "--self-test":
            test = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return
        else:
            paths.append(a)
    if test:
        self_test(ktune)
        return
    if not paths:
        sys.exit(__doc__)
    summarize(read_rows(paths, gpu), ktune, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
