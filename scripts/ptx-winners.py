#!/usr/bin/env python3
"""PTX of every shipped GEMM winner (db/presets/*.json), compiled with nvcc for sm_90, one file per
kernel into OUTDIR; with --compare, each kernel against the same file in another folder, virtual
registers renumbered in order of use first, so that only code changes count. Run it on the
templates before a change (--templates of a checkout of them) and after, to see without a GPU
which kernels the change touched.

  scripts/ptx-winners.py OUTDIR [--presets FILE] [--templates DIR] [--compare BASEDIR]
                         [--extra 'float, 0, 0, BM, ..., KCONTIG, SPLIT' ...]
"""
import argparse
import difflib
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# gemm_kernel's template arguments after T, OPA, OPB, in the order GemmFamily::name_expressions
# (families/gemm/gemm.cpp) writes them; SPLIT follows.
ORDER = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", "WNITER", "STAGES", "PREFETCH", "UNROLL", "VEC",
         "PAD", "MMA", "MINB", "KCONTIG"]


def template_args(row):
    c = row["parameters"]
    p = dict(kv.split("=") for kv in row["problem"].split(";"))
    t = "float" if p["dtype"] == "f32" else "double"
    args = [t, "1" if p["op"][0] == "t" else "0", "1" if p["op"][1] == "t" else "0"]
    args += [str(c[k]) for k in ORDER]
    split = 1 if c["SPLITK"] > 1 else 0
    return ", ".join(args + [str(split)])


def normalized(path):
    """The PTX's instructions with virtual registers renumbered by first use, per class."""
    names = {}

    def rename(m):
        seen = names.setdefault(m.group(1), {})
        return f"%{m.group(1)}#{seen.setdefault(m.group(2), len(seen))}"

    with open(path) as f:
        return [re.sub(r"%([a-z]+)(\d+)\b", rename, line) for line in f
                if not line.startswith("//") and ".reg " not in line]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--presets", default=None, help="one presets file ('' for none)")
    ap.add_argument("--extra", action="append", default=[])
    ap.add_argument("--templates", default=os.path.join(ROOT, "templates"),
                    help="folder with gemm.cuh (another checkout's, for a before/after diff)")
    ap.add_argument("--compare", default=None, help="a folder written by an earlier run")
    a = ap.parse_args()
    files = glob.glob(os.path.join(ROOT, "db/presets/*.json")) if a.presets is None else (
        [a.presets] if a.presets else [])
    kernels = set(a.extra)
    for f in files:
        for row in json.load(open(f))["results"]:
            if row["family"] == "gemm" and row["status"] == "ok":
                kernels.add(template_args(row))
    os.makedirs(a.outdir, exist_ok=True)

    def build(args):
        name = args.replace(", ", "_")
        t = args.split(",")[0]
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "k.cu")
            with open(src, "w") as f:
                f.write('#include "gemm.cuh"\nnamespace ktune {\n'
                        f"template __global__ void gemm_kernel<{args}>(GemmParams<{t}>);\n}}\n")
            out = os.path.join(a.outdir, name + ".ptx")
            # The language options NVRTC compiles the families with (runtime/nvrtc.cpp).
            r = subprocess.run(["nvcc", "-std=c++17", "-DKTUNE_NVRTC=1", "-arch=sm_90", "-ptx", "-I",
                                a.templates, src, "-o", out],
                               capture_output=True, text=True)
            return name, r.returncode, r.stderr[-2000:]

    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        failed = 0
        for name, rc, err in pool.map(build, sorted(kernels)):
            if rc:
                failed += 1
                print(f"FAILED {name}\n{err}", file=sys.stderr)
        print(f"{len(kernels) - failed} of {len(kernels)} kernels -> {a.outdir}")
    if a.compare:
        for args in sorted(kernels):
            name = args.replace(", ", "_") + ".ptx"
            before, after = os.path.join(a.compare, name), os.path.join(a.outdir, name)
            if not os.path.exists(before) or not os.path.exists(after):
                print(f"{name}: missing in one folder")
                continue
            changed = sum(1 for line in difflib.unified_diff(normalized(before), normalized(after), n=0)
                          if line[:1] in "+-" and line[:3] not in ("+++", "---"))
            print(f"{name}: " + ("same" if not changed else f"{changed} lines differ"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
