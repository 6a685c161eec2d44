#!/usr/bin/env bash
# Nsight Compute over one GEMM problem's candidates in the tuner's worker (a winner and its twins,
# named by --only options): per kernel, time, grid, registers, occupancy, DRAM and L2 traffic and
# the stall reasons. Usage: scripts/profile-candidates.sh SHAPE "--only NAME=V[,V] ..."
set -uo pipefail
cd "$(dirname "$0")/.."
shape=$1
only=$2
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
metrics='gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,regex:smsp__average_warps_issue_stalled_(long_scoreboard|short_scoreboard|wait|barrier|mio_throttle|dispatch_stall|not_selected|math_pipe_throttle|lg_throttle)_per_issue_active\.ratio'
# shellcheck disable=SC2086
"$NCU" --clock-control none --target-processes all -k 'regex:gemm_kernel|splitk_reduce' \
  --launch-skip 2 --launch-count 60 --metrics "$metrics" --print-summary per-kernel \
  "${KTUNE_BIN:-build/ktune}" tune gemm --db "$(mktemp -d)/p.db" --dtype "${PROFILE_DTYPE:-f32}" \
  --shape "$shape" --strategy exhaustive --max-evals 0 --repeats 5 --warmup 1 $only
