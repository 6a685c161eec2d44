export BUILD=build-carry KTUNE_COMMIT=ecf83ad ANYSHAPE_SEED=20261211 ANYSHAPE_STAGES=presets
for v in "a 1" "n 1" "a 2" "n 2"; do set -- $v
  name=$1$2; mkdir -p /tmp/o/$name; bin=build-carry/ktune; [ $1 = a ] && bin=build-carry/ktune-a
  KTUNE_DB=/tmp/$name.db KTUNE_BIN=$bin OUT=/tmp/o/$name bash scripts/gpu-check.sh anyshape 2>&1 | grep -E "rc=" | sed "s/^/$name /"
done
KTUNE_DB=/tmp/rt.db OUT=/tmp/o/rt bash scripts/gpu-check.sh bench-runtime 2>&1 | grep -E "first call|rc=" | cut -c1-120
cd /tmp/o && tar czf $OUT/exp.tgz */anyshape_*.csv rt/bench_runtime.csv
