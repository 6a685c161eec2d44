#!/usr/bin/env bash
# Installs ktune from a build tree into a temporary prefix and builds examples/gemm against it
# with find_package(ktune): what an application does. Args: <build dir> <source dir> [run]
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/examples/gemm" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/example" >/dev/null
echo "built $work/example/gemm_example against the installed ktune"
if [ "${3:-}" = run ]; then "$work/example/gemm_example"; fi
