#!/usr/bin/env bash
# Installs ktune from a build tree into a temporary prefix and builds examples/gemm and
# examples/transpose against it with find_package(ktune), and examples/c with pkg-config and
# libktune.so: what applications do.
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
# A C99 program through pkg-config and libktune.so alone (examples/c).
pc=$(find "$work/prefix" -name ktune.pc)
libdir=$(cd "$(dirname "$pc")/.." && pwd)
PKG_CONFIG_PATH=$(dirname "$pc") cc -std=c99 -pedantic -Wall -Wextra -Werror \
  "$source/examples/c/main.c" $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs ktune) \
  -ldl -lm -Wl,-rpath,"$libdir" -o "$work/c_example"
# libktune.so keeps what it links in to itself: no SQLiteCpp or nlohmann-json symbol exported.
if nm -D --defined-only "$libdir/libktune.so" | grep -E -q "SQLite|nlohmann|toml"; then
  echo "libktune.so exports symbols of its dependencies" >&2
  exit 1
fi
if readelf -d "$work/c_example" | grep NEEDED | grep -E -q "SQLiteCpp|stdc\+\+"; then
  echo "c_example needs more than libktune.so" >&2
  exit 1
fi
# Run here: with a GPU it checks its results (exit 0); without one it must say so (exit 2).
status=0
out=$("$work/c_example" 2>&1) || status=$?
echo "$out"
case $status in
  0) ;;
  2) echo "$out" | grep -q -E "no CUDA (driver|device)" || { echo "c_example: exit 2 without saying why" >&2; exit 1; } ;;
  *) echo "c_example failed (exit $status)" >&2; exit 1 ;;
esac
echo "built examples/gemm, examples/transpose and examples/c against the ktune installed in a temporary prefix"
case "${3:-}" in
  run) "$work/example/gemm_example" ;;
  keep)
    mkdir -p "$build/example"
    cp "$work/example/gemm_example" "$work/transpose/transpose_example" "$work/c_example" \
      "$build/example/"
    cp -P "$libdir"/libktune.so* "$build/example/"  # c_example finds it there (LD_LIBRARY_PATH)
    ;;
esac
