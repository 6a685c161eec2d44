#!/usr/bin/env bash
# A/B of builds on the GPU: the shipped winners (best row per GEMM problem in $KTUNE_DB, or
# .gpu-state/tuning.db) timed by this build's ktune and by build/variants/ktune-<name> for each
# name in VARIANTS, into fresh databases, interleaved over two rounds. DTYPES (default f32)
# picks the problems; the FMA-unit f64 winner of 4096^3 comes along with f64. WINNERS names a
# list made beforehand instead (dtype shape op config per line).
# Without VARIANTS only this build times them (configurations compared with each other).
#   VARIANTS=old scripts/ab-winners.sh
set -u
db=${KTUNE_DB:-.gpu-state/tuning.db}
work=/tmp/ab-winners && rm -rf $work && mkdir -p $work
if [ -n "${WINNERS:-}" ]; then  # a list made elsewhere (dtype shape op config per line)
  cp "$WINNERS" $work/winners.txt
else
python3 - "$db" "${DTYPES:-f32}" > $work/winners.txt <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
dtypes = sys.argv[2].split(",")
hash_ = db.execute("SELECT template_hash FROM results WHERE family='gemm' ORDER BY created_at DESC LIMIT 1").fetchone()[0]
q = ("SELECT problem, config, max(metric) FROM results WHERE family='gemm' AND status='ok' AND "
     "template_hash=? AND origin='tuned' {} GROUP BY problem")
for extra in ("", "AND config LIKE '%MMA=0%'"):
    for prob, cfg, _ in db.execute(q.format(extra), (hash_,)):
        d = dict(kv.split("=") for kv in prob.split(";"))
        if d["dtype"] not in dtypes: continue
        if extra and not (d["dtype"] == "f64" and d["m"] == d["n"] == d["k"] == "4096" and d["op"] == "nn"): continue
        print(d["dtype"], f'{d["m"]}x{d["n"]}x{d["k"]}', d["op"], cfg)
PY
fi
for round in 1 2; do
  for v in cur ${VARIANTS:-}; do
    bin=build/ktune
    [ "$v" != cur ] && bin=build/variants/ktune-$v
    while read -r dtype shape op cfg; do
      only=()
      for kv in ${cfg//,/ }; do only+=(--only "$kv"); done
      $bin tune gemm --db $work/$v-$round.db --dtype "$dtype" --shape "$shape" --op "$op" \
        --strategy exhaustive --max-evals 0 "${only[@]}" > /dev/null 2>&1
    done < $work/winners.txt
  done
done
python3 - $work ${VARIANTS:-} <<'PY'
import sqlite3, sys, os
work, names = sys.argv[1], ["cur"] + sys.argv[2:]
t = {}
for n in names:
    for r in (1, 2):
        path = f"{work}/{n}-{r}.db"
        if not os.path.exists(path): continue
        for prob, cfg, ms in sqlite3.connect(path).execute(
                "SELECT problem, config, time_min_ms FROM results WHERE origin='tuned' AND status='ok'"):
            t.setdefault((prob, cfg), {}).setdefault(n, []).append(ms * 1000)
# Where a problem was timed in several configurations, the parameters that tell them apart.
params = {}
for prob, cfg in t:
    params.setdefault(prob, []).append(dict(kv.split("=") for kv in cfg.split(",")))
def label(prob, cfg):
    c = dict(kv.split("=") for kv in cfg.split(","))
    diff = [k for k in sorted(c) if len({p.get(k) for p in params[prob]}) > 1]
    return (prob + " " + ",".join(f"{k}={c[k]}" for k in diff)).strip()
print(f"{'problem':<60} " + " ".join(f"{n + ' us (2 rounds)':>24}" for n in names) + "  cur/first")
for (prob, cfg), d in sorted(t.items()):
    cells = [" / ".join(f"{x:.1f}" for x in d.get(n, [])) or "-" for n in names]
    ratio = (min(d[names[1]]) / min(d["cur"])) if len(names) > 1 and names[1] in d and "cur" in d else float("nan")
    print(f"{label(prob, cfg)[:60]:<60} " + " ".join(f"{c:>24}" for c in cells) + f"  {ratio:.3f}x")
PY
