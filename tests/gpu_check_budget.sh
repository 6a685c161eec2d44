#!/usr/bin/env bash
# scripts/gpu-check.sh past its budget (GPU_CHECK_SECONDS): the running step is stopped, no later
# step starts, and the logs are still packed with the summary saying so; what a stopped step
# stored is still exported. A stand-in `ktune` (KTUNE_BIN) that sleeps plays the long step: no
# GPU is needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The steps' own temporary folders (gpu-check.sh leaves them, on a machine that is discarded) go
# under $work, so that this test leaves none in /tmp.
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
cat >"$work/ktune" <<'SH'
#!/bin/sh
case "$1" in
  bench | tune) echo "stand-in ktune $*"; exec sleep 60 ;;
  db) # db export ... -o FILE: writes FILE
    while [ $# -gt 0 ]; do
      [ "$1" = -o ] && echo '{"results": []}' >"$2"
      shift
    done ;;
esac
SH
chmod +x "$work/ktune"
start=$(date +%s)
OUT="$work/out" KTUNE_DB="$work/state/tuning.db" KTUNE_BIN="$work/ktune" GPU_CHECK_SECONDS=7 \
  ANYSHAPE_DTYPES="f32 f64" bash "$root/scripts/gpu-check.sh" anyshape >"$work/log" 2>&1 || true
took=$(($(date +%s) - start))
cat "$work/log"
fail() { echo "gpu_check_budget: $*" >&2; exit 1; }
((took < 30)) || fail "the visit took ${took} s with a 7 s budget"
grep -Eq '^anyshape-f32 +rc=124' "$work/log" || fail "the running step was not stopped at the budget"
grep -Eq '^anyshape-f64 +not run: GPU_CHECK_SECONDS=7 spent' "$work/log" || fail "a step started past the budget"
tar -tzf "$work/out/logs.tar.gz" | grep -q 'logs/anyshape-f32.log' || fail "the logs were not packed"

# A grid tune stopped by the budget: its exports still run (they hold what the tune stored).
OUT="$work/out2" KTUNE_DB="$work/state/tuning.db" KTUNE_BIN="$work/ktune" GPU_CHECK_SECONDS=7 \
  GRID_DTYPES="f32 f64" bash "$root/scripts/gpu-check.sh" tune-grid >"$work/log2" 2>&1 || true
cat "$work/log2"
grep -Eq '^tune-grid-f32 +rc=124' "$work/log2" || fail "the grid tune was not stopped at the budget"
grep -Eq '^tune-grid-f64 +not run' "$work/log2" || fail "a grid tune started past the budget"
for f in gemm gemm_skinny; do
  grep -Eq "^grid-export-$f +rc=0" "$work/log2" || fail "the $f export did not run past the budget"
  [ -s "$work/out2/grid-presets-$f.json" ] || fail "no grid-presets-$f.json"
done
echo "gpu_check_budget: stopped at the budget in ${took} s, logs packed, exports kept"
