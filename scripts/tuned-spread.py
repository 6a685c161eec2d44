#!/usr/bin/env python3
"""Why the tuned stage of one shape spreads between runs: the rounds of `scripts/gpu-check.sh
tuned-ab` compared from what its logs keep of each tune (TAG.csv, the bench of the tune's winner
against cuBLAS; TAG-rows.txt, `ktune query --all`: every candidate the tune evaluated).

Per shape and arm, each round's bench ratio and the cuBLAS time it was taken against, the best
candidate measured, the candidates and how many were refused after compiling (status invalid: no
GPU time, an evaluation of the budget), then across the rounds: the candidates two rounds share,
whether each round's best was visited by the others (and what it ran there), how a configuration
timed in two rounds repeats (the median and range of the later time over the earlier), and each
round's best tile shapes (BM x BN x BK and MMA: its best time and how many candidates it took).
A spread with same-configuration times that repeat and bests the other rounds never visited is
the search's, not the timing's.

  scripts/tuned-spread.py LOGS_DIR [--tiles N]
  scripts/tuned-spread.py --self-test   reads planted logs and fails unless the figures are right

LOGS_DIR holds tuned-ab's files: tuned-ab-DTYPE-MxNxK-OP-ARM-rROUND.csv and ...-rows.txt.
"""
import csv
import io
import os
import re
import statistics
import sys
import tempfile
from collections import defaultdict

NAME = re.compile(r"^tuned-ab-(?P<shape>.+)-(?P<arm>[^-]+)-r(?P<round>\d+)(?P<rows>-rows\.txt|\.csv)$")


def read_rows(path):
    """config -> (status, median ms or None) of a `ktune query --all` table."""
    rows = {}
    with open(path) as f:
        lines = f.read().splitlines()
    header = None
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        if header is None:
            if cells and cells[0] == "device":
                header = cells
            continue
        if len(cells) != len(header) or set(cells[0]) <= {"-"}:
            continue
        r = dict(zip(header, cells))
        ms = r.get("median ms", "-")
        rows[r["config"]] = (r["status"], float(ms) if r["status"] == "ok" and ms != "-" else None)
    return rows


def read_bench(path):
    """(ktune / cuBLAS ratio, cuBLAS median ms) of the bench CSV's first shape, or Nones."""
    ratio = anchor = None
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["variant"] == "ktune gemm" and ratio is None:
                ratio = float(r["ratio"])
            elif r["variant"] in ("cublasSgemm", "cublasDgemm") and anchor is None:
                anchor = float(r["median_ms"])
    return ratio, anchor


def tile_of(config):
    p = dict(kv.split("=") for kv in config.split(","))
    return f"{p.get('BM')}x{p.get('BN')}x{p.get('BK')} mma{p.get('MMA', '0')}"


def summarise(logs, out, tiles=4):
    runs = defaultdict(dict)  # (shape, arm) -> round -> {"rows": ..., "bench": ...}
    for name in sorted(os.listdir(logs)):
        m = NAME.match(name)
        if not m:
            continue
        slot = runs[(m["shape"], m["arm"])].setdefault(int(m["round"]), {})
        path = os.path.join(logs, name)
        if m["rows"] == ".csv":
            slot["bench"] = read_bench(path)
        else:
            slot["rows"] = read_rows(path)
    if not runs:
        raise SystemExit(f"tuned-spread: no tuned-ab CSVs or rows in {logs}")
    for (shape, arm), rounds in runs.items():
        print(f"== {shape} ({arm})", file=out)
        bests = {}
        for rnd in sorted(rounds):
            slot = rounds[rnd]
            rows = slot.get("rows", {})
            ok = {c: ms for c, (st, ms) in rows.items() if ms is not None}
            invalid = sum(1 for st, _ in rows.values() if st == "invalid")
            ratio, anchor = slot.get("bench", (None, None))
            best = min(ok.items(), key=lambda kv: kv[1]) if ok else None
            if best:
                bests[rnd] = best
            print(f"  r{rnd}: bench {ratio if ratio is not None else '-'} x cuBLAS "
                  f"(cuBLAS {anchor if anchor is not None else '-'} ms); {len(rows)} candidates, "
                  f"{invalid} invalid; best {best[1] if best else '-'} ms"
                  f"{' ' + best[0] if best else ''}", file=out)
            by_tile = defaultdict(list)
            for c, ms in ok.items():
                by_tile[tile_of(c)].append(ms)
            top = sorted((min(v), len(v), t) for t, v in by_tile.items())[:tiles]
            print(f"      {len(by_tile)} tile shapes measured; best: " +
                  "; ".join(f"{t} {b:.4g} ms ({n})" for b, n, t in top), file=out)
        order = sorted(rounds)
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                ra, rb = rounds[a].get("rows", {}), rounds[b].get("rows", {})
                shared = set(ra) & set(rb)
                same = [rb[c][1] / ra[c][1] for c in shared if ra[c][1] and rb[c][1]]
                line = f"  r{a} and r{b}: {len(shared)} candidates shared"
                if same:
                    line += (f"; the same configuration r{b}/r{a}: median "
                             f"{statistics.median(same):.3f} ({min(same):.3f} to {max(same):.3f}, "
                             f"{len(same)} timed in both)")
                print(line, file=out)
                for x, y, rx, ry in ((a, b, ra, rb), (b, a, rb, ra)):
                    if x not in bests:
                        continue
                    c = bests[x][0]
                    seen = ry.get(c)
                    where = (f"visited by r{y} ({seen[0]}, {seen[1]} ms)" if seen
                             else f"never visited by r{y}")
                    print(f"    r{x}'s best {where}", file=out)


def self_test():
    header = ("device                                   family  problem  status   median ms  "
              "      figure  config  origin")
    dashes = "-------  ------  -------  ------  ---------  ------  ------  ------"
    dev = "NVIDIA H100 80GB HBM3 | sm_90 | 132 SMs"
    prob = "align=4;dtype=f32;k=64;m=100;n=100;op=nn"

    def cfg(bm, vec, split=1):
        return f"BK=8,BM={bm},BN=64,MMA=0,SPLITK={split},VEC={vec}"

    def row(config, status, ms):
        m = f"{ms:.4f}" if ms is not None else "-"
        return f"{dev}  gemm    {prob}  {status}  {m}  1.0 TFLOPS  {config}  tuned"

    rounds = {
        1: [(cfg(64, 1), "ok", 1.00), (cfg(64, 2), "ok", 0.90), (cfg(128, 1), "ok", 1.10),
            (cfg(128, 2, 2), "invalid", None)],
        2: [(cfg(64, 2), "ok", 0.99), (cfg(128, 2), "ok", 0.80), (cfg(128, 1), "ok", 1.10)],
    }
    csv_head = ("date,commit,device,driver,nvrtc,family,problem,variant,median_ms,min_ms,max_ms,"
                "repeats,figure,unit,ratio,anchor,lookup_step,config,verified,stage,seed\n")

    def bench(ratio, cublas):
        return (csv_head +
                f'x,c,"{dev}",1,1,gemm,"{prob}","cublasSgemm",{cublas},0,0,30,1,TFLOPS,1,cuBLAS,,"",yes,,\n'
                f'x,c,"{dev}",1,1,gemm,"{prob}","ktune gemm",1,0,0,30,1,TFLOPS,{ratio},cuBLAS,exact,'
                f'"{cfg(64, 2)}",yes,,\n')

    with tempfile.TemporaryDirectory() as d:
        for rnd, rows in rounds.items():
            base = os.path.join(d, f"tuned-ab-f32-100x100x64-nn-new-r{rnd}")
            with open(base + "-rows.txt", "w") as f:
                f.write("\n".join([header, dashes] + [row(*r) for r in rows]) + "\n")
            with open(base + ".csv", "w") as f:
                f.write(bench(0.9 if rnd == 1 else 0.95, 0.81 if rnd == 1 else 0.76))
        out = io.StringIO()
        summarise(d, out)
    text = out.getvalue()
    expected = [
        "== f32-100x100x64-nn (new)",
        "r1: bench 0.9 x cuBLAS (cuBLAS 0.81 ms); 4 candidates, 1 invalid; best 0.9 ms "
        + cfg(64, 2),
        "r2: bench 0.95 x cuBLAS (cuBLAS 0.76 ms); 3 candidates, 0 invalid; best 0.8 ms "
        + cfg(128, 2),
        "2 tile shapes measured; best: 64x64x8 mma0 0.9 ms (2); 128x64x8 mma0 1.1 ms (1)",
        "r1 and r2: 2 candidates shared; the same configuration r2/r1: median 1.050 "
        "(1.000 to 1.100, 2 timed in both)",
        "r1's best visited by r2 (ok, 0.99 ms)",
        "r2's best never visited by r1",
    ]
    missing = [e for e in expected if e not in text]
    if missing:
        print(text)
        print("tuned-spread self-test FAILED; missing:\n  " + "\n  ".join(missing))
        return 1
    print("tuned-spread self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip())
        return 2
    tiles = 4
    if "--tiles" in argv:
        tiles = int(argv[argv.index("--tiles") + 1])
    summarise(argv[1], sys.stdout, tiles)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
