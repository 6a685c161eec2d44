#!/usr/bin/env bash
# The project's tests, after scripts/setup.sh: the whole suite (GPU tests skip with the reason
# when there is no GPU), then the host suite again under AddressSanitizer and
# UndefinedBehaviorSanitizer (a clang build in build-sanitize/), then each libFuzzer target for a
# fixed time on the committed corpus (fuzz/corpus/). KTUNE_SANITIZERS=0 runs the suite only.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${KTUNE_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure
if [ "${KTUNE_SANITIZERS:-1}" = 0 ]; then
  echo "test: sanitizer and fuzzing runs skipped (KTUNE_SANITIZERS=0)"
  exit 0
fi

sanitize=${build}-sanitize
CC=clang CXX=clang++ cmake -S . -B "$sanitize" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKTUNE_SANITIZE=ON -DKTUNE_FUZZ=ON -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_GPU_TESTS=OFF >/dev/null
cmake --build "$sanitize"
# The NVRTC compile check and the install test add nothing under the sanitizers (the compiler is
# not instrumented) and take minutes; they ran above.
ctest --test-dir "$sanitize" -L host -E "CheckCompiles|InstallAndBuildExample" --output-on-failure

seconds=${KTUNE_FUZZ_SECONDS:-30}
for target in parsers import expr family; do
  scratch=$(mktemp -d)
  # New inputs go to the scratch folder; the committed corpus is read only.
  status=0
  "$sanitize/fuzz_$target" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$scratch/" "$scratch" "fuzz/corpus/$target" >"$scratch.log" 2>&1 || status=$?
  grep -E "^Done|ERROR|SUMMARY" "$scratch.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$scratch.log" >&2
    echo "test: fuzz_$target found a problem (exit $status); the input is in $scratch" >&2
    exit 1
  fi
  rm -rf "$scratch" "$scratch.log"
  echo "test: fuzz_$target ran ${seconds} s without a finding"
done
