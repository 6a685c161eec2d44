#!/usr/bin/env bash
# Installs ktune from a build tree into a temporary prefix and builds examples/gemm and
# examples/transpose against it with find_package(ktune): what an application does.
#   install_example.sh <build dir> <source dir> [run|keep]
# run: also run it here; keep: copy the built example to <build dir>/example/ (the GPU machine
# has no SQLiteCpp package to build against, so gpu-check runs this copy there).
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/examples/gemm" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/example" >/dev/null
# A user's own kernel (a family file), launched through Runtime::launch.
cmake -S "$source/examples/transpose" -B "$work/transpose" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/transpose" >/dev/null
echo "built examples/gemm and examples/transpose against the ktune installed in a temporary prefix"
case "${3:-}" in
  run) "$work/example/gemm_example" ;;
  keep)
    mkdir -p "$build/example"
    cp "$work/example/gemm_example" "$work/transpose/transpose_example" "$build/example/"
    ;;
esac
