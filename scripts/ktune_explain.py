"""The GEMM model's ranking as `ktune explain` prints it, for the scripts that compare it with
measurements (model-error.py, rank-eval.py)."""
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor


def ranking(ktune, db, problem, gpu, candidates=None):
    """(answer config, [(predicted ms, config)] fastest first) of `ktune explain gemm PROBLEM
    --gpu GPU --db DB`; `candidates`: its --candidates (None: explain's own first eight)."""
    command = [ktune, "explain", "gemm", problem, "--gpu", gpu, "--db", db, "-q"]
    if candidates is not None:
        command += ["--candidates", str(candidates)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    answer, ranked = None, []
    for line in out.splitlines():
        if line.startswith("config "):
            answer = line.split(None, 1)[1].strip()
        fields = line.split()
        if len(fields) >= 5 and "=" in fields[-1]:
            try:
                ranked.append((float(fields[0]), fields[-1]))
            except ValueError:
                pass
    return answer, ranked


def ranking_rows(ktune, db, problem, gpu):
    """Every candidate of `ktune explain gemm PROBLEM --gpu GPU --db DB --candidates 0`, fastest
    first: (predicted ms, the tuned problem its nearest measurement is of, config)."""
    command = [ktune, "explain", "gemm", problem, "--gpu", gpu, "--db", db, "-q", "--candidates",
               "0"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 5 and "=" in fields[-1] and "=" in fields[2]:
            try:
                rows.append((float(fields[0]), fields[2], fields[-1]))
            except ValueError:
                pass
    return rows


def rankings(ktune, asks, candidates=None):
    """ranking() of each (problem, gpu) of `asks`, in order, from the shipped presets alone (a
    database that does not exist yet), on as many threads as this machine has cores."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "none.db")
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            return list(pool.map(lambda a: ranking(ktune, db, a[0], a[1], candidates), asks))
