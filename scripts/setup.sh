#!/usr/bin/env bash
# Sets up a fresh Debian machine for ktune and builds it: installs the missing packages,
# configures with CMake and builds into ./build (override with KTUNE_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libsqlite3-dev libsqlitecpp-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libboost-dev
          libgtest-dev clang libclang-rt-14-dev python3 python3-pytest python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda_home/bin/nvcc" ]; then
  echo "setup: the CUDA 13 toolkit (nvcc, NVRTC, cuBLAS, CUB) is needed at $cuda_home (or set CUDA_HOME)" >&2
  exit 1
fi

build=${KTUNE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" \
  -DCUDAToolkit_ROOT="$cuda_home" ${KTUNE_CMAKE_ARGS:-} >/dev/null
cmake --build "$build"
