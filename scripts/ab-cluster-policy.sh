#!/usr/bin/env bash
# A/B of the cluster scheduling policy (this build: load balancing; build/variants/ktune-base: the
# default policy) on the shipped histogram winners at CLUSTER 1, 2 and 4, two interleaved rounds.
set -u
work=/tmp/hist-ab && rm -rf $work && mkdir -p $work
# One line per shipped histogram winner: dtype, bins, n, its configuration without CLUSTER.
mapfile -t specs < <(python3 - db/presets/*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        if r["family"] != "histogram" or r["status"] != "ok":
            continue
        p = dict(kv.split("=") for kv in r["problem"].split(";"))
        c = ",".join(f"{k}={v}" for k, v in sorted(r["parameters"].items()) if k != "CLUSTER")
        print(p["dtype"], p["bins"], p["n"], c)
PY
)
for round in 1 2; do
  for v in cur base; do
    bin=build/ktune; [ $v = base ] && bin=build/variants/ktune-base
    for spec in "${specs[@]}"; do
      read -r dt bins n cfg <<<"$spec"
      only=(); for kv in ${cfg//,/ }; do only+=(--only "$kv"); done
      $bin tune histogram --db $work/$v-$round.db --dtype $dt --bins $bins --n $n \
        --strategy exhaustive --max-evals 0 "${only[@]}" --only CLUSTER=1,2,4 > $work/$v-$round-$dt-$n.log 2>&1
    done
  done
done
python3 - $work <<'PY'
import sqlite3, sys
t = {}
for v in ("cur", "base"):
    for r in (1, 2):
        for prob, cfg, ms, st in sqlite3.connect(f"{sys.argv[1]}/{v}-{r}.db").execute(
                "SELECT problem, config, time_min_ms, status FROM results WHERE origin='tuned'"):
            c = dict(kv.split("=") for kv in cfg.split(","))
            t.setdefault((prob, c["CLUSTER"]), {}).setdefault(v, []).append(f"{ms*1000:.1f}" if st == "ok" else st)
print(f"{'problem':<44} {'CLUSTER':>7} {'load-balancing us':>22} {'default us':>22}")
for (prob, cl), d in sorted(t.items()):
    print(f"{prob:<44} {cl:>7} {' / '.join(d.get('cur', [])):>22} {' / '.join(d.get('base', [])):>22}")
PY
