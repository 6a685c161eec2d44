"""The GEMM model's ranking as `ktune explain` prints it, for the scripts that compare it with
measurements (model-error.py, rank-eval.py)."""
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor


def explain(ktune, db, problem, gpu, candidates=None):
    """(answer config, [(predicted ms, the tuned problem its nearest measurement is of, config)]
    fastest first) of `ktune explain gemm PROBLEM --gpu GPU --db DB`; `candidates`: its
    --candidates (None: explain's own first eight)."""
    command = [ktune, "explain", "gemm", problem, "--gpu", gpu, "--db", db, "-q"]
    if candidates is not None:
        command += ["--candidates", str(candidates)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    answer, rows = None, []
    for line in out.splitlines():
        if line.startswith("config "):
            answer = line.split(None, 1)[1].strip()
        fields = line.split()
        if len(fields) >= 5 and "=" in fields[-1]:
            try:
                rows.append((float(fields[0]), fields[2], fields[-1]))
            except ValueError:
                pass
    return answer, rows


def ranking(ktune, db, problem, gpu, candidates=None):
    """(answer config, [(predicted ms, config)] fastest first): explain() without the tuned
    problems."""
    answer, rows = explain(ktune, db, problem, gpu, candidates)
    return answer, [(ms, config) for ms, _, config in rows]


def ranking_rows(ktune, db, problem, gpu):
    """Every candidate of explain() (--candidates 0): (predicted ms, tuned problem, config)."""
    return explain(ktune, db, problem, gpu, 0)[1]


def rankings(ktune, asks, candidates=None):
    """ranking() of each (problem, gpu) of `asks`, in order, from the shipped presets alone (a
    database that does not exist yet), on as many threads as this machine has cores."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "none.db")
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            return list(pool.map(lambda a: ranking(ktune, db, a[0], a[1], candidates), asks))
