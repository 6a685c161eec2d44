#!/usr/bin/env bash
# One visit to the GPU machine: GPU tests, tuning and benchmarks from a build folder brought along,
# with logs and CSVs under $OUT and a short table printed last.
#   scripts/gpu-check.sh [step...]   steps: see the case below (default: info tests
#                                    tune-elementwise bench-elementwise tune-histogram
#                                    bench-histogram)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/ktune-gpu-check}
# Logs go to one folder that is packed at the end: the device tool returns at most 8 files.
LOGS=$OUT/logs
mkdir -p "$OUT" "$LOGS"
# The database persists between visits in .gpu-state/ (carried there and back through $OUT).
export KTUNE_DB=${KTUNE_DB:-$PWD/.gpu-state/tuning.db}
mkdir -p "$(dirname "$KTUNE_DB")"
# The commit CSV rows name where a build recorded none of its own (one made outside git).
export KTUNE_COMMIT=${KTUNE_COMMIT:-unknown}
KTUNE=${KTUNE_BIN:-$BUILD/ktune}  # another build's binary for A/B runs of a template
steps=("$@")
((${#steps[@]})) || steps=(info tests tune-elementwise bench-elementwise tune-histogram bench-histogram)
summary=()
note() { summary+=("$1"); }

# One call of the device tool may run 10 minutes, and only what is under $OUT comes back: past
# GPU_CHECK_SECONDS (570 by default; 0: no limit) the running step is stopped and no other starts,
# so the logs are still packed and the summary printed.
budget=${GPU_CHECK_SECONDS:-570}
run_step() {
  local name=$1
  shift
  local start=$SECONDS limit=()
  if ((budget > 0)); then
    local left=$((budget - SECONDS))
    if ((left < 5)); then
      note "$(printf '%-22s not run: GPU_CHECK_SECONDS=%s spent' "$name" "$budget")"
      return 124
    fi
    limit=(timeout --kill-after=5 "$left")
  fi
  echo "=== $name: $*"
  "${limit[@]}" "$@" 2>&1 | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  note "$(printf '%-22s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - start))")"
  return "$rc"
}

# What a step made, kept past the budget: an export of what a stopped tune stored takes seconds,
# and skipping it loses every result of the step (its database lives in a temporary folder).
# run_step with no budget (bash's locals are seen by the functions called).
run_export() {
  local budget=0
  run_step "$@"
}

# Step $1: every GEMM winner of this architecture in database $2 measured on the shapes of dtype $3
# that the rest of the arguments name to ktune tune gemm (--grid tiled, --shape MxNxK --op OP, ...),
# $4 seconds a shape at most (ktune tune --measure-winners).
measure_winners() {
  local name=$1 db=$2 d=$3 seconds=$4
  shift 4
  run_step "$name" "$KTUNE" tune gemm "$@" --dtype "$d" --db "$db" --measure-winners \
    --max-evals 0 --max-seconds "$seconds" --repeats 5 --warmup 1 < /dev/null
}

# Every GEMM winner of this architecture in database $2 measured on each tiled grid and suite shape
# of dtype $3, $4 seconds a shape at most; steps named $1-grid-$3 and $1-suite-$3.
cross_measure() {
  local name=$1 db=$2 d=$3 seconds=$4 what shapes
  for what in grid suite; do
    shapes=(--suite)
    [ "$what" = grid ] && shapes=(--grid tiled)
    measure_winners "$name-$what-$d" "$db" "$d" "$seconds" "${shapes[@]}"
  done
}

# Each line "DTYPE MxNxK:OP [TUNE OPTION...]" of stdin (as tuned-ab and shapes-ab read; blank
# lines and # comments skipped; the options passed to `ktune tune`, e.g. --only BM=48) tuned into
# database $2 ($3 evaluations, $4 s at most a shape; steps
# $1-DTYPE-MxNxK-OP), then its winners of both GEMM families exported for db/presets
# ($OUT/$1-gemm.json, $OUT/$1-gemm_skinny.json).
tune_shapes() {
  local tag=$1 db=$2 evals=$3 seconds=$4 d spec rest f
  local -a extra
  while read -r d spec rest; do
    [[ -z "$d" || "$d" == \#* ]] && continue
    read -r -a extra <<< "${rest%%#*}"
    run_step "$tag-$d-${spec/:/-}" "$KTUNE" tune gemm --db "$db" --dtype "$d" \
      --shape "${spec%%:*}" --op "${spec##*:}" --max-evals "$evals" --max-seconds "$seconds" \
      "${extra[@]}" < /dev/null
  done
  for f in gemm gemm_skinny; do
    run_export "$tag-export-$f" "$KTUNE" db export --db "$db" --best --own --family "$f" \
      -o "$OUT/$tag-$f.json"
  done
}

# Every GEMM winner of this architecture in the shipped presets measured on the shapes $5...
# (MxNxK:OP) of dtype $3, CROSS_SECONDS (3) a shape, into the database $2 (steps $1-SHAPE); this
# GPU's measurements exported to $4.
cross_shapes() {
  local tag=$1 db=$2 d=$3 json=$4 spec
  shift 4
  for spec in "$@"; do
    measure_winners "$tag-${spec/:/-}" "$db" "$d" "${CROSS_SECONDS:-3}" \
      --shape "${spec%%:*}" --op "${spec##*:}"
  done
  run_export "$tag-export" "$KTUNE" db export --db "$db" --family gemm --own --compact -o "$json"
}

# The shapes of dtype $1 in the file $2 (lines "DTYPE MxNxK:OP"; others skipped), one a line.
dtype_shapes() {
  awk -v d="$1" '$1 == d { print $2 }' "$2"
}

# Two arms of one bench, base then new: shapes $5... (MxNxK:OP) of dtype $4 timed against cuBLAS
# (bench gemm --shape, every row verified) in a new database of the shipped presets alone (base)
# and in one with the files $3 imported --shipped (new); steps $1-base and $1-new, CSVs $2 with
# ARM replaced by the arm.
bench_arms() {
  local tag=$1 csv=$2 jsons=$3 d=$4 arm adir j
  shift 4
  for arm in base new; do
    adir=$(mktemp -d)
    if [ "$arm" = new ]; then
      for j in $jsons; do "$KTUNE" db import --db "$adir/ab.db" --shipped "$j" -q; done
    fi
    run_step "$tag-$arm" "$KTUNE" bench gemm --db "$adir/ab.db" --dtype "$d" --shape "$@" \
      --csv "${csv/ARM/$arm}"
  done
}

for step in "${steps[@]}"; do
  case "$step" in
    info)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
        --format=csv 2>&1 | tee "$LOGS/info.log"
      "$KTUNE" devices | tee -a "$LOGS/info.log"
      ;;
    tests)
      # From a copy of the build in another folder, as a build carried to a machine is: the tests
      # find the ktune executable beside them, not at the path they were built in.
      moved=$(mktemp -d)/moved-build
      mkdir -p "$moved/tests"
      cp "$BUILD/ktune" "$moved/" && cp "$BUILD/tests/ktune_gpu_tests" "$moved/tests/"
      cp -r "$BUILD/tests/families" "$moved/tests/"  # the tests' own family files (faults)
      # Each test is logged as it ends, so a run stopped by the budget still tells what passed.
      # On a fresh machine the whole suite takes longer than one call (each test compiles its
      # kernels): GPU_TESTS_FILTER='GemmGpu.*' in one call and '-GemmGpu.*' in another.
      run_step gpu-tests "$moved/tests/ktune_gpu_tests" --gtest_filter="${GPU_TESTS_FILTER:-*}"
      ;;
    anyshape)
      # GEMM shapes nobody tuned (docs/GEMM.md): the runtime from the shipped presets with the
      # model's ranking (presets) and without it (nearest), against cuBLAS, verified.
      seed=${ANYSHAPE_SEED:-20261125}
      for d in ${ANYSHAPE_DTYPES:-f32 f64}; do
        run_step "anyshape-$d" "$KTUNE" bench gemm --random-shapes "${ANYSHAPE_N:-64}" --seed "$seed" \
          --dtype "$d" --stages "${ANYSHAPE_STAGES:-presets,nearest}" --csv "$OUT/anyshape_$d.csv"
      done
      ;;
    tune-tc)
      # The tensor-core GEMM (family TC_FAMILY: gemm_tc, or gemm_tc80, the mma.sync fallback, or
      # gemm_tc_skinny): short tunes of TC_SHAPES (MxNxK, or MxNxK:op; without one the family's
      # default op, tn for gemm_tc), verified.
      tcf=${TC_FAMILY:-gemm_tc}
      for shape in ${TC_SHAPES:-4096x4096x4096 1000x3000x520}; do
        op=""
        case "$shape" in *:*) op=${shape#*:} shape=${shape%%:*} ;; esac
        IFS=x read -r m n k <<<"$shape"
        for d in ${TC_DTYPES:-bf16}; do
          # C of the input type (f32 for tf32) unless TC_OUT says.
          run_step "tune-tc-$d-$shape${op:+-$op}" "$KTUNE" tune "$tcf" --m "$m" --n "$n" --k "$k" \
            --dtype "$d" ${op:+--op "$op"} ${TC_OUT:+--out "$TC_OUT"} --max-evals "${TC_EVALS:-40}" \
            --strategy "${TC_STRATEGY:-auto}" --timeout-floor 2
        done
      done
      "$KTUNE" query --family "$tcf" > "$LOGS/tc-query.txt" 2>&1
      "$KTUNE" query --family "$tcf" --all --json > "$OUT/tc_all_$tcf.json" 2>/dev/null
      cat "$LOGS/tc-query.txt"
      ;;
    tc-export)
      # This GPU's tensor-core winners of the current templates, as db/presets/<gpu>-gemm-tc.json.
      run_export tc-export "$KTUNE" db export --best --own --family "${TC_FAMILY:-gemm_tc}" \
        -o "$OUT/tc-presets-${TC_FAMILY:-gemm_tc}.json"
      ;;
    bench-tc)
      # ktune's tensor-core GEMM (the runtime's choice; TC_FAMILY=gemm_tc80 times the fallback)
      # against cuBLASLt, verified: TC_BENCH_SHAPES, else the suite.
      for d in ${TC_DTYPES:-bf16}; do
        if [ -n "${TC_BENCH_SHAPES:-}" ]; then
          for shape in $TC_BENCH_SHAPES; do
            run_step "bench-tc-$d-$shape" "$KTUNE" bench gemm --dtype "$d" --shape "$shape" \
              ${TC_FAMILY:+--tc-family "$TC_FAMILY"} --csv "$OUT/bench_tc_${d}_$shape.csv"
          done
        else
          run_step "bench-tc-$d" "$KTUNE" bench gemm --dtype "$d" ${TC_FAMILY:+--tc-family "$TC_FAMILY"} \
            --csv "$OUT/bench_gemm_${d}${TC_FAMILY:+_$TC_FAMILY}.csv"
        fi
      done
      ;;
    triton-tc)
      # A Triton matmul autotuned over 12 Hopper configurations on the shapes of the bench-tc CSVs
      # of this visit: rows appended to them with `triton` in the anchor column (bench/tc_triton.py).
      for d in ${TC_DTYPES:-bf16}; do
        [ -f "$OUT/bench_gemm_${d}.csv" ] && run_step "triton-tc-$d" python3 bench/tc_triton.py "$OUT/bench_gemm_${d}.csv"
      done
      ;;
    ncu-tc)
      # Nsight Compute on the runtime's 4096^3 bf16 gemm_tc kernel (tensor pipe, stalls): the bench
      # with one timed run; only ktune's kernel is profiled.
      run_step ncu-tc ncu --target-processes all -k regex:gemm_tc -c 1 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active \
        "$KTUNE" bench gemm --dtype bf16 --shape 4096x4096x4096 --repeats 20
      cp "$LOGS/ncu-tc.log" "$OUT/ncu_gemm_tc_bf16_4096.txt"
      ;;
    tune-grid)
      # The preset grid (ktune tune gemm --grid; docs/GEMM.md, "The preset grid") for
      # GRID_DTYPES, into a database of its own; this GPU's winners exported as JSON for
      # db/presets (the database, holding binaries, is too large to bring back). GRID_CLASS:
      # any class of `ktune tune gemm --grid` (all; tiled; skinny, the shapes of
      # db/presets/nvidia-h100-gemm-skinny.json; huge-k, small-k and the other kinds).
      gdb=$(mktemp -d)/grid.db
      for d in ${GRID_DTYPES:-f32 f64}; do
        run_step "tune-grid-$d" "$KTUNE" tune gemm --grid "${GRID_CLASS:-all}" --dtype "$d" \
          --db "$gdb" --max-evals "${GRID_EVALS:-40}" --max-seconds "${GRID_SECONDS:-10}"
      done
      # What did not run ok, by status and message: compile-time refusals (spills) are expected,
      # a wrong result is not.
      python3 - "$gdb" <<'PY' | tee "$LOGS/grid-status.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT family, status, COUNT(*) FROM results GROUP BY family, status"):
    print(*row)
for row in db.execute("SELECT status, substr(message, 1, 120), COUNT(*) FROM results "
                      "WHERE status != 'ok' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 12"):
    print(*row)
PY
      for f in gemm gemm_skinny; do
        run_export "grid-export-$f" "$KTUNE" db export --db "$gdb" --best --own --family "$f" \
          -o "$OUT/grid-presets-$f.json"
      done
      ;;
    cross-grid)
      # Cross measurements (docs/GEMM.md): every GEMM winner of this architecture in the shipped
      # presets measured on each tiled grid and suite shape of its dtype, into a database of its
      # own; this GPU's measurements exported for db/presets (nvidia-<gpu>-gemm-cross.json).
      # Pairs that shipped rows of this GPU measure under the current template are skipped: after
      # a template change every pair is measured again.
      cdb=$(mktemp -d)/cross.db
      for d in ${GRID_DTYPES:-f32 f64}; do
        cross_measure cross "$cdb" "$d" "${CROSS_SECONDS:-20}"
      done
      run_export cross-export "$KTUNE" db export --db "$cdb" --family gemm --own --compact \
        -o "$OUT/cross-gemm.json"
      ;;
    grid-small)
      # The small tiled grid shapes (`--grid small`: where the smallest tiles are in the space)
      # tuned on this GPU, then every winner of the architecture measured on the tiled grid and
      # the suite, per dtype: db/presets/nvidia-<gpu>-gemm-{grid,cross}-small.json (docs/GEMM.md,
      # "The smallest tiles in the presets"). Pairs that the shipped rows of this GPU measure are
      # skipped (since 04225a0's presets were made, which measured 2977 of 4177 pairs again).
      # About 250 s of tuning and 250 to 300 s of measuring a dtype on an H200 then.
      for d in ${GRID_DTYPES:-f32 f64}; do
        sdir=$(mktemp -d)
        run_step "grid-small-$d" "$KTUNE" tune gemm --grid small --dtype "$d" --db "$sdir/grid.db" \
          --max-evals "${GRID_EVALS:-80}" --max-seconds "${GRID_SECONDS:-5}"
        run_export "grid-small-export-$d" "$KTUNE" db export --db "$sdir/grid.db" --best --own \
          --family gemm -o "$OUT/grid-small-$d.json"
        # The winners as shipped rows of a new database: only its measurements are its own.
        "$KTUNE" db import --db "$sdir/cross.db" --shipped "$OUT/grid-small-$d.json" -q
        cross_measure cross-small "$sdir/cross.db" "$d" "${CROSS_SECONDS:-6}"
        run_export "cross-small-export-$d" "$KTUNE" db export --db "$sdir/cross.db" --family gemm \
          --own --compact -o "$OUT/cross-small-$d.json"
      done
      ;;
    tails)
      # The presets stage's tail: each shape of the presets-stage CSVs TAILS_CSVS (ktune bench
      # gemm --random-shapes --stages presets) that ran below TAILS_BELOW x cuBLAS (0.82) tuned
      # (TAILS_EVALS evaluations, TAILS_SECONDS at most a shape; m or n at most 16: gemm_skinny)
      # into one new database, its winners exported for db/presets ($OUT/tails-gemm.json and
      # tails-gemm_skinny.json); then, with the tiled winners as the shipped rows of another new
      # database, every f32/f64 winner of the architecture measured on each tail shape
      # (--measure-winners, TAILS_CROSS_SECONDS a shape; 0: none), exported as tails-cross.json.
      # Use the CSVs of seeds other than the one the targets are judged on.
      tdir=$(mktemp -d)
      python3 - "${TAILS_BELOW:-0.82}" ${TAILS_CSVS:-} > "$tdir/tails.txt" <<'PY'
import csv, sys
below, seen = float(sys.argv[1]), set()
for path in sys.argv[2:]:
    for r in csv.DictReader(open(path)):
        if not r["variant"].startswith("ktune") or not r["ratio"] or ";" not in r["problem"]:
            continue
        kv = dict(x.split("=") for x in r["problem"].split(";"))
        shape = (kv["dtype"], kv["m"], kv["n"], kv["k"], kv["op"])
        if float(r["ratio"]) < below and shape not in seen:
            seen.add(shape)
            print(*shape)
PY
      cp "$tdir/tails.txt" "$LOGS/tails.txt"
      # (Fed by a process substitution, not a pipe: the steps' summary lines stay in this shell.)
      tune_shapes tails "$tdir/tune.db" "${TAILS_EVALS:-400}" "${TAILS_SECONDS:-10}" \
        < <(awk '{ print $1, $2 "x" $3 "x" $4 ":" $5 }' "$tdir/tails.txt")
      if [ "${TAILS_CROSS_SECONDS:-4}" != 0 ] && [ -s "$OUT/tails-gemm.json" ]; then
        "$KTUNE" db import --db "$tdir/cross.db" --shipped "$OUT/tails-gemm.json" -q
        while read -r d m n k op; do
          [ "$m" -le 16 ] || [ "$n" -le 16 ] && continue  # gemm_skinny has no model to feed
          measure_winners "tails-cross-$d-${m}x${n}x${k}-$op" "$tdir/cross.db" "$d" \
            "${TAILS_CROSS_SECONDS:-4}" --shape "${m}x${n}x${k}" --op "$op"
        done < "$tdir/tails.txt"
        run_export tails-cross-export "$KTUNE" db export --db "$tdir/cross.db" --family gemm --own \
          --compact -o "$OUT/tails-cross.json"
      fi
      ;;
    tails-ab)
      # The rows of TAILS_AB_JSON (files, e.g. the tails step's) judged on fresh draws: each seed
      # of TAILS_AB_SEEDS, each dtype of TAILS_AB_DTYPES, its 64 shapes timed against cuBLAS
      # (bench gemm --shape, every row verified) in a new database of the shipped presets alone
      # (base) and in one with the files imported --shipped (new), alternating, TAILS_AB_ROUNDS
      # rounds (2); the CSVs in the logs. TAILS_AB_KINDS: only the shapes of these classes of the
      # draw (e.g. "skinny matvec"; all by default).
      for seed in ${TAILS_AB_SEEDS:-20262942}; do
        for d in ${TAILS_AB_DTYPES:-f32 f64}; do
          mapfile -t shapes < <("$KTUNE" bench gemm --random-shapes 64 --seed "$seed" --dtype "$d" \
            --list-shapes | awk -v d="$d" -v kinds=" ${TAILS_AB_KINDS:-} " \
            '$1 == d && $2 ~ /^[0-9]+$/ && (kinds == "  " || index(kinds, " " $7 " ")) { print $4 "x" $5 "x" $6 ":" $3 }')
          for round in $(seq "${TAILS_AB_ROUNDS:-2}"); do
            bench_arms "tails-ab-$seed-$d-r$round" "$LOGS/tails_ab_${seed}_${d}_ARM_r$round.csv" \
              "${TAILS_AB_JSON:-}" "$d" "${shapes[@]}"
          done
        done
      done
      ;;
    cross-draw)
      # Every GEMM winner of this architecture in the shipped presets measured on each tiled shape
      # (m and n over 16) of a random draw (`bench gemm --random-shapes 64 --seed CROSS_SEED`),
      # CROSS_SECONDS (3) a shape, the nearest winners first, into a database of its own; this
      # GPU's measurements exported ($OUT/cross-draw-SEED-DTYPE.json): the data a host test ranks
      # the model against on shapes nobody tuned (test_lookup.cpp, PredictedOnFreshShapes).
      : "${CROSS_SEED:?cross-draw: CROSS_SEED, the seed of the draw}"
      for d in ${CROSS_DTYPES:-f32 f64}; do
        ddb=$(mktemp -d)/draw.db
        mapfile -t shapes < <("$KTUNE" bench gemm --random-shapes 64 \
          --seed "$CROSS_SEED" --dtype "$d" --list-shapes |
          awk -v d="$d" '$1 == d && $2 ~ /^[0-9]+$/ && $4 > 16 && $5 > 16 {
            print $4 "x" $5 "x" $6 ":" $3 }')
        cross_shapes "cross-draw-$d" "$ddb" "$d" "$OUT/cross-draw-$CROSS_SEED-$d.json" "${shapes[@]}"
      done
      ;;
    cross-shapes)
      # As cross-draw, on the shapes of CROSS_SHAPES_FILE (lines "DTYPE MxNxK:OP", m and n over
      # 16): every GEMM winner of this architecture in the shipped presets measured on each,
      # CROSS_SECONDS (3) a shape, this GPU's measurements exported
      # ($OUT/cross-shapes-DTYPE.json) for a host guard on shapes a draw holds few of.
      for d in ${CROSS_DTYPES:-f32 f64}; do
        mapfile -t shapes < <(dtype_shapes "$d" \
          "${CROSS_SHAPES_FILE:?CROSS_SHAPES_FILE: a file of DTYPE MxNxK:OP lines}")
        ((${#shapes[@]})) || continue
        cross_shapes "cross-shapes-$d" "$(mktemp -d)/shapes.db" "$d" "$OUT/cross-shapes-$d.json" \
          "${shapes[@]}"
      done
      ;;
    shapes-tune)
      # Each line "DTYPE MxNxK:OP" of SHAPES_FILE (blank lines and # comments skipped) tuned into
      # one new database (SHAPES_EVALS evaluations, 40; SHAPES_SECONDS at most a shape, 10; m or
      # n at most 16: gemm_skinny), compiles shared through its binary cache; the winners
      # exported for db/presets ($OUT/shapes-gemm.json, $OUT/shapes-gemm_skinny.json). For shapes
      # the grid lacks: judge the export with shapes-ab before shipping it.
      tune_shapes shapes "$(mktemp -d)/tune.db" "${SHAPES_EVALS:-40}" "${SHAPES_SECONDS:-10}" \
        < "${SHAPES_FILE:?SHAPES_FILE: a file of DTYPE MxNxK:OP lines}"
      ;;
    shapes-ab)
      # The rows of SHAPES_AB_JSON (files, e.g. shapes-tune's exports) judged on the shapes of
      # SHAPES_AB_FILE (lines "DTYPE MxNxK:OP"): each dtype's shapes timed against cuBLAS (bench
      # gemm --shape, every row verified) in a new database of the shipped presets alone (base) and
      # in one with the files imported --shipped (new), alternating, SHAPES_AB_ROUNDS rounds (2);
      # the CSVs in $OUT (shapes_ab_DTYPE_ARM_rROUND.csv).
      for d in f32 f64; do
        mapfile -t shapes < <(dtype_shapes "$d" \
          "${SHAPES_AB_FILE:?SHAPES_AB_FILE: a file of DTYPE MxNxK:OP lines}")
        ((${#shapes[@]})) || continue
        for round in $(seq "${SHAPES_AB_ROUNDS:-2}"); do
          bench_arms "shapes-ab-$d-r$round" "$OUT/shapes_ab_${d}_ARM_r$round.csv" \
            "${SHAPES_AB_JSON:-}" "$d" "${shapes[@]}"
        done
      done
      ;;
    compile-ab)
      # Item 4 of issue 23 (the GPU waiting on compiles <= 10% of a short tune): each line "DTYPE
      # MxNxK:OP" of COMPILE_AB_FILE tuned (COMPILE_AB_EVALS evaluations, 40) by each arm of
      # COMPILE_AB_ARMS ("threads processes"): threads, NVRTC on threads of the tuning process
      # (--compile-in-process); processes or new, this build as it is (one compiler process a
      # thread); old, $KTUNE_OLD as it is; any other name X, the binary $KTUNE_ARM_X. The arms
      # alternate shape by shape, each in a new database of its own that its shapes share (the
      # binary cache across problems, as a user tuning shapes one after the other has it),
      # COMPILE_AB_ROUNDS rounds (1). The tuner's summary line of each tune and its table row (the
      # best time) in $OUT/compile-ab.txt: compiles a second, a compile's mean time, the GPU's
      # wait (summed per arm by scripts/compile-ab-summary.py). COMPILE_AB_TRACE=1: each
      # candidate's timeline (KTUNE_TUNE_TRACE) in $OUT/compile-ab-trace-rROUND-ARM.txt. (The
      # databases stay: with their binaries, too large to bring back.)
      for round in $(seq "${COMPILE_AB_ROUNDS:-1}"); do
        declare -A arm_db=()
        for arm in ${COMPILE_AB_ARMS:-threads processes}; do arm_db[$arm]=$(mktemp -d)/$arm.db; done
        while read -r d spec _; do
          [[ -z "$d" || "$d" == \#* ]] && continue
          for arm in ${COMPILE_AB_ARMS:-threads processes}; do
            bin=$KTUNE flag=()
            case "$arm" in
              threads) flag=(--compile-in-process) ;;
              old) bin=${KTUNE_OLD:?KTUNE_OLD: the ktune binary of the other build} ;;
              processes | new) ;;
              *) var=KTUNE_ARM_$arm
                 bin=${!var:?$var: the ktune binary of arm $arm} ;;
            esac
            trace=()
            [ -n "${COMPILE_AB_TRACE:-}" ] && trace=(env "KTUNE_TUNE_TRACE=$OUT/compile-ab-trace-r$round-$arm.txt")
            tag="compile-ab-r$round-$arm-$d-${spec/:/-}"
            run_step "$tag" "${trace[@]}" "$bin" tune gemm --db "${arm_db[$arm]}" --dtype "$d" \
              --shape "${spec%%:*}" --op "${spec##*:}" --max-evals "${COMPILE_AB_EVALS:-40}" \
              "${flag[@]}" < /dev/null
            { grep -h "GPU waited on compiles" "$LOGS/$tag.log"
              grep -h " gemm" "$LOGS/$tag.log" | grep -v "^ktune" | tail -1
            } | sed "s|^|r$round $arm $d $spec: |" >> "$OUT/compile-ab.txt"
          done
        done < "${COMPILE_AB_FILE:?COMPILE_AB_FILE: a file of DTYPE MxNxK:OP lines}"
      done
      ;;
    compile-scaling)
      # NVRTC's compile throughput against threads and processes (item 4 of issue 23): `ktune
      # check --family gemm --sample SCALING_SAMPLE --compile-in-process` (24) as each arm of
      # SCALING_ARMS ("1x1 1x8 1x16 2x8 4x4 16x1": processes x threads), every process with a new
      # HOME, XDG_CACHE_HOME and TMPDIR and CUDA_CACHE_DISABLE=1, and a seed of its own (no kernel
      # compiled twice), the arms in turn, SCALING_ROUNDS rounds (2). One line an arm: the
      # processes' kernels, the wall time, kernels a second ($OUT/compile-scaling.txt).
      seed=$((${SCALING_SEED:-1000}))
      for round in $(seq "${SCALING_ROUNDS:-2}"); do
        for arm in ${SCALING_ARMS:-1x1 1x8 1x16 2x8 4x4 16x1}; do
          if ((budget > 0 && SECONDS > budget - 60)); then
            note "compile-scaling          round $round $arm on: not run, GPU_CHECK_SECONDS=$budget"
            break 2
          fi
          procs=${arm%x*} threads=${arm#*x} adir=$(mktemp -d) start=$(date +%s%N)
          for i in $(seq "$procs"); do
            seed=$((seed + 1))
            mkdir -p "$adir/$i/tmp"
            HOME=$adir/$i XDG_CACHE_HOME=$adir/$i TMPDIR=$adir/$i/tmp CUDA_CACHE_DISABLE=1 \
              "$KTUNE" check --family gemm --sample "${SCALING_SAMPLE:-24}" --seed "$seed" \
              --jobs "$threads" --compile-in-process -q > "$adir/$i/out.txt" 2>&1 &
          done
          wait
          ms=$((($(date +%s%N) - start) / 1000000))
          kernels=$(cat "$adir"/*/out.txt | awk '$1 == "gemm" && $4 ~ /^[0-9]+$/ { k += $4 }
            END { print k + 0 }')
          awk -v r="$round" -v a="$arm" -v k="$kernels" -v ms="$ms" 'BEGIN {
            printf "round %s  %-5s  %5d kernels  %7.1f s  %6.1f kernels/s\n", r, a, k, ms / 1000,
              k / (ms / 1000) }' | tee -a "$OUT/compile-scaling.txt"
          rm -rf "$adir"
        done
      done
      ;;
    lookup-ab)
      # A change of the lookup judged where it changes an answer: the shapes of LOOKUP_AB_FILE
      # (lines "DTYPE MxNxK:OP", e.g. scripts/changed-answers.py's) timed against cuBLAS (bench
      # gemm --shape, every row verified) by $KTUNE_OLD (arm old) and this build (new), each in a
      # new database of the shipped presets, alternating, LOOKUP_AB_ROUNDS rounds (2); the CSVs in
      # $OUT (lookup_ab_DTYPE_ARM_rROUND.csv).
      for d in f32 f64; do
        mapfile -t shapes < <(dtype_shapes "$d" \
          "${LOOKUP_AB_FILE:?LOOKUP_AB_FILE: a file of DTYPE MxNxK:OP lines}")
        ((${#shapes[@]})) || continue
        for round in $(seq "${LOOKUP_AB_ROUNDS:-2}"); do
          for arm in old new; do
            bin=$KTUNE
            [ "$arm" = old ] && bin=${KTUNE_OLD:?KTUNE_OLD: the ktune binary of the other build}
            adir=$(mktemp -d)
            run_step "lookup-ab-$d-$arm-r$round" "$bin" bench gemm --db "$adir/ab.db" --dtype "$d" \
              --shape "${shapes[@]}" --csv "$OUT/lookup_ab_${d}_${arm}_r$round.csv"
          done
        done
      done
      ;;
    presets-ab)
      # The presets stage (bench gemm --random-shapes 64 --stages presets) of two builds:
      # $KTUNE_OLD (arm old) and this one (new), alternating, PRESETS_AB_ROUNDS rounds (1), for
      # each seed of PRESETS_AB_SEEDS and dtype of PRESETS_AB_DTYPES: a change of the lookup
      # judged on fresh draws in one run. The CSVs in $OUT.
      for seed in ${PRESETS_AB_SEEDS:-20262942}; do
        for d in ${PRESETS_AB_DTYPES:-f32 f64}; do
          for round in $(seq "${PRESETS_AB_ROUNDS:-1}"); do
            for arm in old new; do
              bin=$KTUNE
              [ "$arm" = old ] && bin=${KTUNE_OLD:?KTUNE_OLD: the ktune binary of the other build}
              run_step "presets-ab-$seed-$d-$arm-r$round" "$bin" bench gemm --random-shapes 64 \
                --seed "$seed" --dtype "$d" --stages presets \
                --csv "$OUT/presets_ab_${seed}_${d}_${arm}_r$round.csv"
            done
          done
        done
      done
      ;;
    tuned-ab)
      # The tuned stage of chosen shapes, two arms alternating: for each line "DTYPE MxNxK:OP" of
      # TUNED_AB_SHAPES (a file; blank lines and # comments skipped), TUNED_AB_ROUNDS rounds (1),
      # a new database of the shipped presets each, `ktune tune gemm` of the shape with the
      # tuned stage's budget (TUNED_AB_EVALS, 400 evaluations), then `ktune bench gemm --shape` on
      # that database (its winner against cuBLAS, verified); the CSVs in the logs, and beside them
      # every candidate each tune evaluated (TAG-rows.txt, `ktune query --all`; the rounds compared
      # by scripts/tuned-spread.py LOGS). Arm "old" is $KTUNE_OLD (another build's binary) where
      # set, else this binary with the space held to TUNED_AB_OLD_ONLY (by default the powers-of-
      # two tiles alone: the space before 48, 96 and 192 were added, configuration for
      # configuration); arm "new" is this binary's whole space, with TUNED_AB_NEW_ARGS (e.g.
      # "--strategy hybrid"; none by default). TUNED_AB_ARMS: the arms to run ("old new"; "new"
      # alone re-measures the tuned stage).
      old_only=(${TUNED_AB_OLD_ONLY---only BM=32,64,128,256 --only BN=32,64,128,256 --only WM=16,32,64 --only WN=16,32,64 --only WNITER=1,2})
      for round in $(seq "${TUNED_AB_ROUNDS:-1}"); do
        while read -r d shape _; do
          [[ -z "$d" || "$d" == \#* ]] && continue  # blank lines and comments
          for arm in ${TUNED_AB_ARMS:-old new}; do
            bin=$KTUNE
            only=(${TUNED_AB_NEW_ARGS:-})
            if [ "$arm" = old ]; then
              only=()
              if [ -n "${KTUNE_OLD:-}" ]; then bin=$KTUNE_OLD; else only=("${old_only[@]}"); fi
            fi
            adir=$(mktemp -d)
            tag="tuned-ab-$d-${shape/:/-}-$arm-r$round"
            run_step "$tag-tune" "$bin" tune gemm --db "$adir/ab.db" --dtype "$d" \
              --shape "${shape%%:*}" --op "${shape##*:}" --max-evals "${TUNED_AB_EVALS:-400}" \
              "${only[@]}"
            run_step "$tag-bench" "$bin" bench gemm --db "$adir/ab.db" --dtype "$d" \
              --shape "$shape" --csv "$LOGS/$tag.csv"
            # Every candidate the tune evaluated, with its status and time (what a tune visited,
            # for the spread between runs): quiet, into the logs only; the problem's key as the
            # bench's CSV names it.
            key=$(grep -o -m1 '"align=[^"]*"' "$LOGS/$tag.csv" 2>/dev/null | head -1 | tr -d '"')
            [ -n "$key" ] && "$bin" query --db "$adir/ab.db" --family gemm --all --problem "$key" \
              > "$LOGS/$tag-rows.txt" 2>&1
            rm -rf "$adir"
          done
        done < "${TUNED_AB_SHAPES:?TUNED_AB_SHAPES: a file of DTYPE MxNxK:OP lines}"
      done
      ;;
    anyshape-tuned)
      # A short tune per shape after the presets (compiles reused across shapes: the tuner's
      # binary cache), then timed again.
      # ANYSHAPE_SHARD=K/N: a part of the draw (64 shapes with the default budget take several
      # ten-minute runs; scripts/anyshape-summary.py sums the parts' CSVs).
      run_step anyshape-tuned "$KTUNE" bench gemm --random-shapes "${ANYSHAPE_TUNED_N:-8}" \
        --seed "${ANYSHAPE_SEED:-20261125}" --dtype "${ANYSHAPE_TUNED_DTYPE:-f32}" \
        --stages presets,tuned --max-evals "${ANYSHAPE_EVALS:-40}" \
        ${ANYSHAPE_SHARD:+--shard "$ANYSHAPE_SHARD"} --csv "$OUT/anyshape_tuned.csv"
      ;;
    faults)
      # The planted-fault family through the command: every fault classified, the run completes.
      fdb=$(mktemp -d)/faults.db
      ffile=tests/families/faults/faults.family.toml
      run_step faults-tune "$KTUNE" tune faults --family-file "$ffile" --db "$fdb" --strategy exhaustive --max-evals 0
      run_step faults-rows "$KTUNE" query --family-file "$ffile" --db "$fdb" --family faults --all
      ;;
    transpose)
      # A user's family from its family file alone (examples/transpose): tuned exhaustively on a
      # square and an odd-sized problem, a planted wrong kernel caught, then the bench.
      fam=examples/transpose/transpose.family.toml
      run_step transpose-tune "$KTUNE" tune transpose --family-file "$fam" --rows 8192 --cols 8192 \
        --strategy exhaustive --max-evals 0
      run_step transpose-tune-odd "$KTUNE" tune transpose --family-file "$fam" --rows 1000 \
        --cols 777 --dtype f64 --strategy exhaustive --max-evals 0
      broken=$(mktemp -d)
      cp examples/transpose/transpose.cuh "$fam" "$broken/"
      # With ROWS = 2 the kernel skips the tile's last row: every such candidate must fail.
      sed -i 's/for (int j = 0; j < TILE; j += STEP) {/for (int j = 0; j < TILE - (ROWS == 2 ? STEP : 0); j += STEP) {/' \
        "$broken/transpose.cuh"
      bdb=$(mktemp -d)/broken.db
      run_step transpose-broken "$KTUNE" tune transpose --family-file "$broken/transpose.family.toml" \
        --db "$bdb" --rows 2048 --cols 2048 --strategy exhaustive --max-evals 0
      run_step transpose-broken-rows "$KTUNE" query --family-file "$broken/transpose.family.toml" \
        --db "$bdb" --family transpose --all
      run_step transpose-bench "$KTUNE" bench transpose --family-file "$fam" --rows 8192 --cols 8192 \
        --csv "$OUT/transpose-8192-f32.csv"
      run_step transpose-bench-odd "$KTUNE" bench transpose --family-file "$fam" --rows 1000 \
        --cols 777 --dtype f64 --csv "$OUT/transpose-1000x777-f64.csv"
      # The application built against the installed package (tests/install_example.sh . keep):
      # a tuned problem (exact) and an untuned one (nearest), through Runtime::launch.
      if [ -x "$BUILD/example/transpose_example" ]; then
        run_step transpose-app-exact "$BUILD/example/transpose_example" "$fam" 8192 8192
        run_step transpose-app-nearest "$BUILD/example/transpose_example" "$fam" 3000 4099
      fi
      ;;
    c-api)
      # A C99 program through libktune.so alone (examples/c; built by tests/install_example.sh
      # BUILD . keep): an SGEMM and a copy checked, the thread's context kept.
      run_step c-api env LD_LIBRARY_PATH="$BUILD/example" "$BUILD/example/c_example"
      ;;
    cublas-kernels)
      # What cuBLAS runs on the shapes of CUBLAS_SHAPES_FILE (lines "DTYPE MxNxK:OP"): torch.mm
      # under torch.profiler, its kernels' names and times in $OUT/cublas-kernels.txt.
      run_step cublas-kernels python3 scripts/cublas-kernels.py \
        "${CUBLAS_SHAPES_FILE:?CUBLAS_SHAPES_FILE: a file of DTYPE MxNxK:OP lines}" \
        -o "$OUT/cublas-kernels.txt"
      ;;
    python)
      # The Python package on PyTorch: its GPU tests and host tests (the offline install included),
      # then python -m ktune.bench against torch.matmul.
      export KTUNE_LIBRARY=$PWD/$BUILD/libktune.so KTUNE_CLI=$PWD/$BUILD/ktune
      run_step python-tests bash -c "cd python/tests && python3 _support.py test_gpu test_host"
      run_step python-bench env PYTHONPATH="$PWD/python" python3 -m ktune.bench --csv "$OUT/python-bench.csv"
      ;;
    kill-resume)
      # kill -9 of a GPU tuning run with candidates in a worker: no worker may outlive it, and
      # the same command resumes (the candidate in flight recorded as crashed).
      krdb=$(mktemp -d)/kill.db
      "$KTUNE" tune gemm --dtype f32 --shape 2048x2048x2048 --db "$krdb" --max-evals 150 \
        > "$LOGS/kill-first.log" 2>&1 &
      victim=$!
      sleep 15
      kill -9 "$victim"
      wait "$victim" 2>/dev/null
      sleep 2
      left=$(pgrep -f "ktune __worker" | wc -l)
      note "kill-resume: workers alive 2 s after kill -9 of the tuner: $left"
      run_step kill-resume "$KTUNE" tune gemm --dtype f32 --shape 2048x2048x2048 --db "$krdb" --max-evals 150
      python3 - "$krdb" <<'PY' 2>&1 | tee "$LOGS/kill-resume-rows.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("runs:", db.execute("SELECT id, status FROM runs ORDER BY id").fetchall())
print("rows by status:", db.execute("SELECT status, count(*) FROM results GROUP BY status").fetchall())
print("distinct configs:", db.execute("SELECT count(DISTINCT config), count(*) FROM results").fetchone())
PY
      ;;
    tune-elementwise)
      run_step tune-copy-1G "$KTUNE" tune elementwise --op copy --n 1G
      run_step tune-copy-256M "$KTUNE" tune elementwise --op copy --n 256M
      run_step tune-add-256M "$KTUNE" tune elementwise --op add --n 256M
      ;;
    example)
      # The installed package as an application uses it, built where SQLiteCpp is installed
      # (tests/install_example.sh <build> . keep), run on this GPU.
      run_step example "$BUILD/example/gemm_example"
      ;;
    bench-elementwise)
      run_step bench-elementwise "$KTUNE" bench elementwise --n 256M --csv "$OUT/bench_elementwise.csv"
      ;;
    tune-gemm)
      # The issue's target: one 4096^3 f32 problem with the default settings in <= 120 s.
      run_step tune-gemm-f32-4096 "$KTUNE" tune gemm --dtype f32 --shape 4096x4096x4096
      run_step tune-gemm-f64-4096 "$KTUNE" tune gemm --dtype f64 --shape 4096x4096x4096 \
        --max-evals 200 --max-seconds 90
      ;;
    tune-gemm-suite-f32)
      # Short runs over every shape of the suite (resumed where earlier runs stopped).
      run_step tune-gemm-suite-f32 "$KTUNE" tune gemm --suite --dtype f32 --max-evals 60 --max-seconds 24
      ;;
    tune-gemm-suite-f32-long)
      run_step tune-gemm-suite-f32 "$KTUNE" tune gemm --suite --dtype f32 --max-evals 250 --max-seconds 30
      ;;
    tune-gemm-suite-f64-long)
      run_step tune-gemm-suite-f64 "$KTUNE" tune gemm --suite --dtype f64 --max-evals 200 --max-seconds 24
      # The FMA units alone at 4096^3 (the tensor cores win the suite's f64 runs).
      run_step tune-gemm-f64-fma "$KTUNE" tune gemm --dtype f64 --shape 4096x4096x4096 --only MMA=0 \
        --max-evals 250 --max-seconds 60
      ;;
    tune-gemm-f32-more)
      # More evaluations where the suite's short runs stopped furthest from cuBLAS (resumed).
      for spec in 8192x8192x8192:120:60 4096x4096x4096:150:35 4095x4095x4095:150:35 \
        2048x2048x2048:150:20 1000x1000x1000:200:20 4096x4096x256:200:20 8192x128x8192:200:25; do
        IFS=: read -r shape evals secs <<<"$spec"
        run_step "tune-gemm-f32-$shape" "$KTUNE" tune gemm --dtype f32 --shape "$shape" \
          --max-evals "$evals" --max-seconds "$secs"
      done
      run_step tune-gemm-f32-tn "$KTUNE" tune gemm --dtype f32 --shape 4096x4096x4096 --op tn \
        --max-evals 150 --max-seconds 35
      ;;
    retune-gemm-f32)
      # After a template change: every suite shape again, its winner under the earlier template
      # first (then its neighbours' winners and the model's proposals), a short run each; the
      # split-K shapes, whose timing the change touched, longer. Resumed where earlier runs stopped
      # (the evaluation budgets count those: RETUNE_EVALS raises them for a second pass).
      evals=${RETUNE_EVALS:-40}
      run_step retune-gemm-suite-f32 "$KTUNE" tune gemm --suite --dtype f32 --max-evals "$evals" \
        --max-seconds 12
      for shape in 8192x128x8192 6000x32x6000 64x64x262144; do
        run_step "retune-gemm-f32-$shape" "$KTUNE" tune gemm --dtype f32 --shape "$shape" \
          --max-evals $((evals * 4)) --max-seconds 30
      done
      ;;
    retune-gemm-f64)
      run_step retune-gemm-suite-f64 "$KTUNE" tune gemm --suite --dtype f64 \
        --max-evals "${RETUNE_EVALS:-40}" --max-seconds 12
      # The FMA units at 4096^3: the last winner's tile with its code-path neighbours.
      run_step retune-gemm-f64-fma "$KTUNE" tune gemm --dtype f64 --shape 4096x4096x4096 \
        --strategy exhaustive --max-evals 0 --only MMA=0 --only BM=128 --only BN=64 --only BK=8 \
        --only WM=32 --only WN=64 --only TM=4 --only TN=4 --only WNITER=2 --only KCONTIG=0 \
        --only UNROLL=0 --only VEC=2 --only SPLITK=1 --only MINB=1 --only PREFETCH=2,3 \
        --only STAGES=2,3 --only PAD=0,4 --only SWIZZLE=1,4
      ;;
    skinny-ab)
      # The skinny dot kernel with Y read through L1 (GROUPS=0), with Y staged in shared memory
      # (GROUPS 1 to 4) and on the tensor cores (MMA=1: f64, f32 as 3xTF32): each SKINNY_SHAPES
      # entry (dtype:MxNxK:op) tuned alone each way of SKINNY_KERNELS into a database of its own
      # (SKINNY_EVALS evaluations), then each database's winner timed against cuBLAS; all rows
      # in skinny_ab.csv.
      for spec in ${SKINNY_SHAPES:-f64:14x895x6362:nn f64:7x3437x341:nn f64:9565x10x2517:tt \
        f32:14x895x6362:nn f64:4096x12x4096:tn f64:8x4096x4096:nn f64:16x2000x8000:nn \
        f32:16x2000x8000:tn f32:4096x1x4096:tn}; do
        IFS=: read -r d shape op <<< "$spec"
        for g in ${SKINNY_KERNELS:-l1 staged mma}; do
          only=(--only GROUPS=0 --only MMA=0)
          [ "$g" = staged ] && only=(--only GROUPS=1,2,4 --only MMA=0)
          [ "$g" = mma ] && only=(--only GROUPS=0 --only MMA=1)
          sdb=$(mktemp -d)/skinny.db
          run_step "skinny-$g-$d-$shape-$op" "$KTUNE" tune gemm --dtype "$d" --shape "$shape" \
            --op "$op" --db "$sdb" "${only[@]}" --max-evals "${SKINNY_EVALS:-60}" --max-seconds 30
          csv="$LOGS/skinny_${g}_${d}_${shape}_$op.csv"
          run_step "skinny-bench-$g-$d-$shape-$op" "$KTUNE" bench gemm --dtype "$d" --shape "$shape" \
            --op "$op" --db "$sdb" --csv "$csv"
          [ -f "$OUT/skinny_ab.csv" ] || head -1 "$csv" | sed "s/^/kernel,/" > "$OUT/skinny_ab.csv"
          tail -n +2 "$csv" | sed "s/^/$g,/" >> "$OUT/skinny_ab.csv"
        done
      done
      ;;
    tune-gemm-skinny)
      # The suite's skinny split-K shape, longer (resumed), then its bench row against cuBLAS.
      run_step tune-gemm-f32-8192x128x8192 "$KTUNE" tune gemm --dtype f32 --shape 8192x128x8192 \
        --max-evals 300 --max-seconds 40
      run_step bench-gemm-f32-8192x128x8192 "$KTUNE" bench gemm --dtype f32 --shape 8192x128x8192 \
        --csv "$OUT/bench_gemm_f32_8192x128x8192.csv"
      ;;
    fp64-fma-clocks)
      # The SM clock and power sampled every 50 ms while DGEMM 4096^3 runs for seconds (400 timed
      # launches each of cuBLAS, the tensor-core winner, the FMA-unit best and, last, cuBLASLt's
      # FMA-unit algorithms): is the FP64 FMA-unit kernel clocked below the clock of the nominal
      # peak?
      nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu \
        --format=csv,noheader,nounits -lms 50 > "$LOGS/fp64-clocks.csv" 2>&1 &
      sampler=$!
      run_step fp64-fma-clocks "$KTUNE" bench gemm --dtype f64 --shape 4096x4096x4096 \
        --repeats 400 --csv "$OUT/bench_gemm_f64_4096_long.csv"
      kill "$sampler" 2>/dev/null
      wait "$sampler" 2>/dev/null
      awk -F', ' '$5 > 0 {print $2}' "$LOGS/fp64-clocks.csv" | sort -n | uniq -c | sort -k2 -n \
        | tee "$LOGS/fp64-clock-histogram.log"
      ;;
    bench-gemm-f32)
      run_step bench-gemm-f32 "$KTUNE" bench gemm --dtype f32 --csv "$OUT/bench_gemm_f32.csv"
      ;;
    bench-gemm-f64)
      # With cuBLASLt held to the FMA units as the like-for-like anchor of the FMA-unit rows.
      run_step bench-gemm-f64 "$KTUNE" bench gemm --dtype f64 --csv "$OUT/bench_gemm_f64.csv"
      ;;
    tune-gemm-suite-f64)
      run_step tune-gemm-suite-f64 "$KTUNE" tune gemm --suite --dtype f64 --max-evals 50 --max-seconds 16
      ;;
    tune-gemm-big)
      # Longer runs on the large squares, seeded with each other's winners.
      for shape in 4096x4096x4096 8192x8192x8192; do
        run_step "tune-gemm-f32-$shape" "$KTUNE" tune gemm --dtype f32 --shape "$shape" --max-evals 250 --max-seconds 45
      done
      ;;
    record-exhaustive)
      # Whole spaces measured once (resumable), for strategy comparisons by replay on the CPU.
      run_step exhaustive-gemm "$KTUNE" tune gemm --dtype f32 --shape 4096x4096x4096 \
        --strategy exhaustive --max-evals 0 --repeats 10 --warmup 1 --max-seconds 330
      run_step exhaustive-hist "$KTUNE" tune histogram --dtype u8 --bins 256 --n 16M \
        --strategy exhaustive --max-evals 0 --repeats 10 --warmup 1 --max-seconds 200
      ;;
    record-exhaustive-hist)
      run_step exhaustive-hist "$KTUNE" tune histogram --dtype u8 --bins 256 --n 16M \
        --strategy exhaustive --max-evals 0 --repeats 10 --warmup 1 --max-seconds 120
      ;;
    main-job)
      # The README's main command (default problems of every family), with a short budget each.
      run_step main-job "$KTUNE" tune --max-seconds 15
      ;;
    tune-gemm-hard)
      # Shapes where a short run left the most on the table: skinny, small, under one wave.
      for shape in 6000x32x6000 1000x1000x1000 1024x1024x1024 8192x128x8192; do
        run_step "tune-gemm-$shape" "$KTUNE" tune gemm --dtype f32 --shape "$shape" --max-evals 150 --max-seconds 30
      done
      ;;
    bench-gemm)
      run_step bench-gemm "$KTUNE" bench gemm --csv "$OUT/bench_gemm.csv"
      ;;
    gemm-hard-quick)
      # Split-K and small shapes: a short tune each, then the bench against cuBLAS.
      for shape in 64x64x262144 6000x32x6000 8192x128x8192; do
        run_step "tune-gemm-$shape" "$KTUNE" tune gemm --dtype f32 --shape "$shape" --max-evals 120 --max-seconds 25
        run_step "bench-gemm-$shape" "$KTUNE" bench gemm --dtype f32 --shape "$shape" \
          --csv "$OUT/bench_gemm_f32_$shape.csv"
      done
      ;;
    tune-gemm-f64-long)
      run_step tune-gemm-f64-4096 "$KTUNE" tune gemm --dtype f64 --shape 4096x4096x4096 \
        --max-evals 400 --max-seconds 100
      ;;
    profile-gemm)
      # Nsight Compute at 4096^3: the best f32 and FMA-unit f64 kernels (mangled template-argument
      # prefixes PROFILE_F32 / PROFILE_F64; the defaults are the H200 winners) and cuBLAS's SGEMM
      # kernel, each with the full set and the issue-stall reasons; then the SASS of ours from
      # the database's binary cache.
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      f32=${PROFILE_F32:-gemm_kernelIfLi0ELi0ELi256ELi128ELi16ELi64ELi64ELi4ELi4ELi2ELi2ELi0ELi0ELi4ELi0ELi0ELi1ELi0ELi0E}
      f64=${PROFILE_F64:-gemm_kernelIdLi0ELi0ELi128ELi64ELi8ELi32ELi64ELi4ELi4ELi2ELi2ELi1ELi0ELi2ELi4ELi0ELi1ELi0ELi0E}
      stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum'
      for what in f32 f64 cublas-f32; do
        pat=$f32 dt=f32
        [[ $what == f64 ]] && pat=$f64 dt=f64
        [[ $what == cublas-f32 ]] && pat='xmma|sgemm'
        run_step "ncu-$what" "$NCU" --clock-control none --target-processes all \
          --kernel-name-base mangled -k "regex:$pat" --launch-skip 3 --launch-count 1 --set full \
          --metrics "$stalls" "$KTUNE" bench gemm --dtype "$dt" --shape 4096x4096x4096 --repeats 20
      done
      python3 - "$KTUNE_DB" "$LOGS" "$f32" "$f64" <<'PY' 2>&1 | tee "$LOGS/sass-extract.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for tag, pat in (("f32", sys.argv[3]), ("f64", sys.argv[4])):
    rows = db.execute("SELECT cubin FROM binaries WHERE lowered_names LIKE ?", ("%" + pat + "%",)).fetchall()
    print(tag, "binaries:", len(rows))
    if rows:
        open(f"{sys.argv[2]}/{tag}.cubin", "wb").write(rows[0][0])
PY
      for dt in f32 f64; do
        [[ -f $LOGS/$dt.cubin ]] && cuobjdump -sass "$LOGS/$dt.cubin" > "$LOGS/$dt.sass" 2>&1
      done
      ;;
    profile-shape)
      # Where the time of one shape goes: every kernel of a bench call (ours, the split-K
      # reduction, cuBLAS's) with its duration, grid, registers, pipe use and stall reasons,
      # summarised per kernel. PROFILE_SHAPE / PROFILE_DTYPE / PROFILE_OP pick the problem.
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      shape=${PROFILE_SHAPE:-8192x128x8192}
      metrics='gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_registers,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,regex:smsp__average_warps_issue_stalled_(long_scoreboard|short_scoreboard|wait|barrier|mio_throttle|dispatch_stall|no_instruction|not_selected|math_pipe_throttle|lg_throttle)_per_issue_active\.ratio'
      run_step "profile-$shape" "$NCU" --clock-control none --target-processes all \
        -k 'regex:gemm_kernel|splitk|xmma|sgemm|dgemm|splitK|reduce|Kernel|gemv' --launch-count 80 \
        --metrics "$metrics" --print-summary per-kernel \
        "$KTUNE" bench gemm --dtype "${PROFILE_DTYPE:-f32}" --shape "$shape" --op "${PROFILE_OP:-nn}" --repeats 20
      ;;
    swizzle-probe)
      # Block rasterization groups (a kernel argument) around the large squares' winners, every
      # value, into the database and once more into a fresh one (the spread between the two).
      sw=(--strategy exhaustive --max-evals 0 --only MMA=0 --only UNROLL=0 --only KCONTIG=0
        --only VEC=4 --only MINB=1 --only SPLITK=1 --only PREFETCH=0 --only PAD=0,4)
      for db in "$KTUNE_DB" /tmp/swizzle-fresh.db; do
        run_step "swizzle-nn-4096" "$KTUNE" tune gemm --db "$db" --dtype f32 --shape 4096x4096x4096 \
          "${sw[@]}" --only BM=256 --only BN=128 --only BK=8,16 --only WM=64 --only WN=64 \
          --only WNITER=2 --only TM=4 --only STAGES=2
        run_step "swizzle-nn-4095" "$KTUNE" tune gemm --db "$db" --dtype f32 --shape 4095x4095x4095 \
          "${sw[@]}" --only BM=128 --only BN=256 --only BK=16 --only WM=64 --only WN=64 \
          --only WNITER=2 --only TM=4 --only STAGES=2
        run_step "swizzle-tn-4096" "$KTUNE" tune gemm --db "$db" --dtype f32 --shape 4096x4096x4096 \
          --op tn "${sw[@]}" --only BM=128 --only BN=256 --only BK=16 --only WM=64 --only WN=64 \
          --only WNITER=1 --only TM=8 --only STAGES=2
      done
      python3 - "$KTUNE_DB" /tmp/swizzle-fresh.db <<'PY' 2>&1 | tee "$LOGS/swizzle.log"
import sqlite3, sys
for path in sys.argv[1:]:
    print("==", path)
    q = ("SELECT round(metric, 2), substr(problem, 1, 44), config FROM results WHERE origin = 'tuned' "
         "AND status = 'ok' AND problem LIKE '%=409%' AND created_at > "
         "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour') ORDER BY problem, metric DESC")
    for tf, prob, cfg in sqlite3.connect(path).execute(q):
        c = dict(kv.split("=") for kv in cfg.split(","))
        print(f"{tf:>7} {prob:<44} BK={c['BK']} PAD={c['PAD']} SWIZZLE={c['SWIZZLE']}")
PY
      ;;
    kcontig-probe)
      # KCONTIG and the unchecked edge tiles on a few shapes' winning tile shapes, every
      # combination of the code-path toggles around them (exhaustive within --only).
      fixed=(--only MINB=1 --only UNROLL=0 --only PREFETCH=0 --only VEC=4 --only MMA=0 --only TM=4
        --only TN=4 --only WNITER=2 --strategy exhaustive --max-evals 0)
      run_step probe-nn-4096 "$KTUNE" tune gemm --dtype f32 --shape 4096x4096x4096 "${fixed[@]}" \
        --only BM=256 --only BN=128 --only BK=16 --only WM=64 --only WN=64 --only SPLITK=1
      run_step probe-tn-4096 "$KTUNE" tune gemm --dtype f32 --shape 4096x4096x4096 --op tn \
        "${fixed[@]}" --only BM=128,256 --only BN=128,256 --only BK=16 --only WM=64 --only WN=64 \
        --only SPLITK=1 --only SWIZZLE=1
      run_step probe-nn-1000 "$KTUNE" tune gemm --dtype f32 --shape 1000x1000x1000 "${fixed[@]}" \
        --only BM=64,128 --only BN=64 --only BK=16 --only WN=32 --only SPLITK=1 --only PAD=4
      run_step probe-nn-4095 "$KTUNE" tune gemm --dtype f32 --shape 4095x4095x4095 "${fixed[@]}" \
        --only BM=256 --only BN=128 --only BK=16 --only WM=64 --only WN=64 --only SPLITK=1 \
        --only PAD=4 --only STAGES=2
      run_step probe-nn-8192x128 "$KTUNE" tune gemm --dtype f32 --shape 8192x128x8192 \
        "${fixed[@]}" --only BM=128,256 --only BN=128 --only BK=16 --only WM=64 --only WN=64 \
        --only SPLITK=2,4 --only PAD=4 --only SWIZZLE=1
      ;;
    winners-probe)
      # Each shipped GEMM winner against its twins: the same configuration with PROBE (NAME=V,V...)
      # instead of its own value, all measured by the tuner in one run, then a table per problem.
      # PROBE_WHERE (a Python expression over the winner's parameters, e.g. 'SPLITK > 1') picks
      # the winners.
      : "${PROBE:?winners-probe needs PROBE=NAME=V,V...}"
      python3 - "${PROBE%%=*}" "${PROBE_WHERE:-True}" db/presets/*.json > "$LOGS/winners-probe.cmds" <<'PY'
import json, sys
name, where = sys.argv[1], sys.argv[2]
for f in sys.argv[3:]:
    for r in json.load(open(f))["results"]:
        if r["family"] != "gemm" or r["status"] != "ok" or not eval(where, {}, dict(r["parameters"])):
            continue
        p = dict(kv.split("=") for kv in r["problem"].split(";"))
        only = " ".join(f"--only {k}={v}" for k, v in sorted(r["parameters"].items()) if k != name)
        print(p["dtype"], f'{p["m"]}x{p["n"]}x{p["k"]}', p["op"], p["align"], only)
PY
      while read -r dt shape op align only; do
        # shellcheck disable=SC2086  # $only is a list of options
        run_step "probe-$dt-$shape-$op" "$KTUNE" tune gemm --dtype "$dt" --shape "$shape" \
          --op "$op" --align "$align" --strategy exhaustive --max-evals 0 $only --only "$PROBE"
      done < "$LOGS/winners-probe.cmds"
      python3 - "$KTUNE_DB" "${PROBE%%=*}" <<'PY' 2>&1 | tee "$LOGS/winners-probe.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT problem, config, status, metric FROM results WHERE family = 'gemm' AND "
                  "origin = 'tuned' AND created_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')")
by_problem = {}
for problem, config, status, metric in rows:
    c = dict(kv.split("=") for kv in config.split(","))
    what = f"{metric:.2f}" if status == "ok" else status
    by_problem.setdefault(problem, []).append(f"{sys.argv[2]}={c.get(sys.argv[2], '?')}: {what}")
for problem, entries in sorted(by_problem.items()):
    print(f"{problem:<46} " + " | ".join(sorted(entries)))
PY
      ;;
    sweep)
      # Exhaustive runs over hand-picked neighbourhoods: SWEEP_FILE holds one per line,
      # "NAME DTYPE MxNxK OP --only NAME=V,V ...", then the 8 fastest (median) of each problem.
      : "${SWEEP_FILE:?sweep needs SWEEP_FILE}"
      while read -r name dt shape op only; do
        [[ -z $name || $name == \#* ]] && continue
        # shellcheck disable=SC2086  # $only is a list of options
        run_step "sweep-$name" "$KTUNE" tune gemm --dtype "$dt" --shape "$shape" --op "$op" \
          --strategy exhaustive --max-evals 0 $only
      done < "$SWEEP_FILE"
      python3 - "$KTUNE_DB" <<'PY' 2>&1 | tee "$LOGS/sweep.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
problems = [p for (p,) in db.execute("SELECT DISTINCT problem FROM results WHERE family = 'gemm'")]
for problem in problems:
    print(problem)
    for config, ms, metric, regs in db.execute(
            "SELECT config, time_median_ms, metric, registers FROM results WHERE family = 'gemm' "
            "AND problem = ? AND status = 'ok' ORDER BY time_median_ms LIMIT 8", (problem,)):
        print(f"  {ms * 1e3:8.1f} us {metric:6.2f} TFLOPS {regs:3} regs  {config}")
PY
      ;;
    gemm-tests)
      run_step gpu-tests-gemm "$BUILD/tests/ktune_gpu_tests" --gtest_brief=1 --gtest_filter='Gemm*'
      ;;
    bench-gemm-4096)
      for dt in f32 f64; do
        run_step "bench-gemm-$dt-4096" "$KTUNE" bench gemm --dtype "$dt" --shape 4096x4096x4096 \
          --csv "$OUT/bench_gemm_${dt}_4096.csv"
      done
      ;;
    tune-histogram)
      # Random search within a minute each: every candidate is verified on three input classes.
      run_step tune-hist-u8-1G "$KTUNE" tune histogram --dtype u8 --bins 256 --n 1G \
        --max-evals 300 --max-seconds 60
      run_step tune-hist-u8-16M "$KTUNE" tune histogram --dtype u8 --bins 256 --n 16M \
        --max-evals 400 --max-seconds 60
      run_step tune-hist-f32-256M "$KTUNE" tune histogram --dtype f32 --bins 1024 --n 256M \
        --max-evals 300 --max-seconds 60
      ;;
    bench-histogram)
      run_step bench-histogram "$KTUNE" bench histogram --csv "$OUT/bench_histogram.csv"
      ;;
    bench-runtime)
      # First call in a new process (binary cached) and repeated-call host overhead, for the
      # typed calls and for Runtime::launch of a family file's kernel.
      run_step bench-runtime "$KTUNE" bench runtime --csv "$OUT/bench_runtime.csv" \
        --family-file examples/transpose/transpose.family.toml
      ;;
    example-tune-on-miss)
      # The installed example with tune-on-miss, into a database of its own: the first call
      # tunes the shape, a second process finds it exact.
      tmpdb=$(mktemp -d)/miss.db
      run_step example-miss-1 env KTUNE_DB="$tmpdb" "$BUILD/example/gemm_example" --tune-on-miss
      run_step example-miss-2 env KTUNE_DB="$tmpdb" "$BUILD/example/gemm_example"
      ;;
    sanitize-prefetch)
      # The k loops with fragments read across the barrier (PREFETCH 2, 3) through registers and
      # cp.async, split-K included, on an odd shape with edge tiles: every candidate of the
      # narrowed space once in the tuner's worker, under each checker.
      for tool in racecheck synccheck memcheck; do
        for dt in f32 f64; do
          run_step "sanitize-prefetch-$tool-$dt" compute-sanitizer --tool "$tool" \
            --target-processes all --print-limit 20 \
            "$KTUNE" tune gemm --db "$(mktemp -d)/s.db" --dtype "$dt" --shape 257x129x300 \
            --strategy exhaustive --max-evals 0 --repeats 1 --warmup 0 --only PREFETCH=2,3 \
            --only STAGES=2,3 --only BM=64 --only BN=64 --only BK=8,16 --only WM=32 --only WN=32 \
            --only TM=4 --only TN=4 --only WNITER=1 --only SPLITK=1,4 --only MINB=1 \
            --only KCONTIG=0 --only UNROLL=0 --only PAD=4 --only SWIZZLE=1 --only MMA=0
        done
      done
      ;;
    sanitize)
      # Each family's default and tuned configurations under compute-sanitizer's three checkers.
      for tool in memcheck racecheck synccheck; do
        extra=()
        [ "$tool" = memcheck ] && extra=(--leak-check full)
        run_step "sanitize-$tool" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 \
          "$BUILD/tests/ktune_gpu_tests" \
          --gtest_filter='RuntimeGpu.DefaultConfigurationsOfEachFamily:RuntimeGpu.TunedConfigurationsOfEachFamily'
      done
      ;;
    memory-stress)
      # GPU memory after every tuning run over 1000 candidates.
      run_step memory-1000 env KTUNE_STRESS_CANDIDATES=1000 "$BUILD/tests/ktune_gpu_tests" \
        --gtest_filter='RuntimeGpu.TuningRunsGiveBackDeviceMemory'
      ;;
    gpu-busy)
      # A default tune of GEMM f32 4096^3 into a new database while nvidia-smi samples the GPU's
      # utilization (share of time a kernel ran) every 100 ms.
      busydb=$(mktemp -d)/busy.db
      nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 \
        > "$LOGS/gpu-busy-samples.csv" 2>&1 &
      sampler=$!
      sleep 1
      run_step gpu-busy env KTUNE_DB="$busydb" "$KTUNE" tune gemm --dtype f32 --shape 4096x4096x4096
      kill "$sampler" 2>/dev/null
      wait "$sampler" 2>/dev/null
      # Samples from the first busy one to the last busy one: the run, without the idle margins.
      busy=$(awk -F', ' '{u[NR]=$2} END {f=0; l=0; for (i=1;i<=NR;i++) if (u[i]>0) {if (!f) f=i; l=i};
        s=0; for (i=f;i<=l;i++) s+=u[i]; if (l) printf "%.1f%% mean utilization over %d samples (%.1f s)", s/(l-f+1), l-f+1, (l-f+1)/10}' \
        "$LOGS/gpu-busy-samples.csv")
      note "gpu-busy: $busy"
      ;;
    multi-gpu)
      # One worker per GPU into one database file; both GPUs' rows must be there afterwards.
      mgdb=$(mktemp -d)/multi.db
      run_step multi-gpu env KTUNE_DB="$mgdb" "$KTUNE" tune --device all --max-seconds 20
      run_step multi-gpu-query "$KTUNE" query --db "$mgdb"
      run_step multi-gpu-check "$KTUNE" db check --db "$mgdb"
      # Which physical GPU measured what (identical GPUs share one device row and the problems).
      python3 - "$mgdb" <<'PY' 2>&1 | tee "$LOGS/multi-gpu-runs.log"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("gpu  uuid                                      problem                                         ok  crashed  in_flight")
for row in db.execute("""SELECT u.gpu_ordinal, u.gpu_uuid, u.family || ' ' || u.problem,
    SUM(r.status='ok'), SUM(r.status='crashed'), SUM(r.status='in_flight')
    FROM runs u JOIN results r ON r.run_id = u.id GROUP BY u.id ORDER BY u.gpu_ordinal, u.id"""):
    print("%-4s %-41s %-47s %-3s %-8s %s" % row)
PY
      # The tuned kernels on the second GPU, verified against the anchors there.
      run_step multi-gpu-bench-1 env KTUNE_DB="$mgdb" "$KTUNE" bench elementwise --device 1 --n 256M
      cp "$mgdb" "$OUT/multi_gpu.db" 2>/dev/null
      ;;
    *)
      echo "unknown step $step" >&2
      ;;
  esac
done
"$KTUNE" query > "$LOGS/query.txt" 2>&1
# A consistent copy of the database (WAL folded in) comes back with the logs, compressed (a file
# comes back only under 16 MiB).
python3 -c "import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)" \
  "$KTUNE_DB" "$OUT/tuning.db" 2>/dev/null || cp "$KTUNE_DB" "$OUT/tuning.db"
gzip -f "$OUT/tuning.db"
# A second run of this script in one call keeps the first's logs: logs-2.tar.gz, and so on.
pack=$OUT/logs.tar.gz
for ((i = 2; ; ++i)); do
  [ -e "$pack" ] || break
  pack=$OUT/logs-$i.tar.gz
done
tar -czf "$pack" -C "$OUT" logs && rm -rf "$LOGS"
echo
echo "=== summary (device: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
printf '%s\n' "${summary[@]}"
for csv in "$OUT"/bench_*.csv; do
  [ -f "$csv" ] || continue
  echo "--- $(basename "$csv")"
  awk -F, '{ printf "%-40s %-14s %10s %-6s %s\n", $7, $8, $13, $14, $15 }' "$csv"
done
