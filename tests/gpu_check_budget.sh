#!/usr/bin/env bash
# scripts/gpu-check.sh past its budget (GPU_CHECK_SECONDS): the running step is stopped, no later
# step starts, and the logs are still packed with the summary saying so. A stand-in `ktune`
# (KTUNE_BIN) that sleeps plays the long step: no GPU is needed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/ktune" <<'SH'
#!/bin/sh
case "$1" in bench) echo "stand-in ktune $*"; exec sleep 60 ;; esac
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
echo "gpu_check_budget: stopped at the budget in ${took} s, logs packed"
