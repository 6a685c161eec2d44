#!/usr/bin/env bash
# A/B of template variants on the GPU: this build's ktune against build/variants/ktune-* (other
# builds of the same tool), the same configurations into fresh databases, interleaved twice.
# Only rows measured here are printed (origin 'tuned'; a new database also holds the presets).
set -u
for round in 1 2; do
for v in cur ${VARIANTS:?name the builds in build/variants, e.g. VARIANTS=old}; do
  bin=build/ktune; [ $v != cur ] && bin=build/variants/ktune-$v
  db=/tmp/ab64/$v-$round.db; mkdir -p /tmp/ab64
  common=(--strategy exhaustive --max-evals 0 --only MINB=1 --only SPLITK=1 --only UNROLL=0 --only PREFETCH=0 --only SWIZZLE=1 --only TM=4 --only TN=4)
  $bin tune gemm --db $db --dtype f64 --shape 4096x4096x4096 "${common[@]}" --only MMA=2 --only BM=64 --only BN=128 --only BK=8 --only WM=32 --only WN=64 --only VEC=1 --only PAD=4 --only WNITER=1 --only STAGES=2,3,4 > /dev/null 2>&1
  $bin tune gemm --db $db --dtype f32 --shape 4096x4096x4096 --op nt "${common[@]}" --only MMA=0 --only BM=256 --only BN=128 --only BK=16 --only WM=64 --only WN=64 --only VEC=4 --only PAD=0 --only WNITER=2 --only STAGES=2,3 > /dev/null 2>&1
  $bin tune gemm --db $db --dtype f32 --shape 1000x1000x1000 "${common[@]}" --only MMA=0 --only BM=64 --only BN=64 --only BK=16 --only WM=32 --only WN=32 --only VEC=4 --only PAD=4 --only WNITER=2 --only STAGES=2,3 > /dev/null 2>&1
  echo "== $v round $round"
  python3 - $db <<'PY'
import sqlite3, sys
q = ("SELECT round(metric, 2), substr(problem, 1, 40), substr(config, instr(config, 'KCONTIG'), 9), "
     "substr(config, instr(config, 'STAGES'), 8) FROM results WHERE origin = 'tuned' ORDER BY problem, config")
for row in sqlite3.connect(sys.argv[1]).execute(q): print(*row, sep="  ")
PY
done
done
