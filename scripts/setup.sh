#!/usr/bin/env bash
# Installs exactly the Debian packages pc needs (idempotent: a no-op when they
# are present), then configures and builds the project with Ninja.
#
#   scripts/setup.sh            install + configure + build
#   PC_SKIP_BUILD=1 scripts/setup.sh   install only
#
# Environment: PC_BUILD_DIR (default: build), PC_ENABLE_CUDA (AUTO|ON|OFF,
# default AUTO), PC_BUILD_TYPE (default: Release).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PC_BUILD_DIR:-$root/build}

packages=(
  # toolchain
  cmake ninja-build g++ ccache
  # LLVM/MLIR 22: libMLIR.so, TableGen, lit and FileCheck
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # libraries
  libabsl-dev libgtest-dev libgmock-dev libopenblas-dev libdnnl-dev
  openmpi-bin libopenmpi-dev
  # the main job's corpus: English text (the fortune cookie files)
  fortunes
  # test-only: independent NumPy references
  python3 python3-numpy
  # test-only: sanitizer and libFuzzer builds (scripts/sanitize.sh)
  clang-22 libclang-rt-22-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

if [ -n "${PC_SKIP_BUILD:-}" ]; then exit 0; fi

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="${PC_BUILD_TYPE:-Release}" \
    -DPC_ENABLE_CUDA="${PC_ENABLE_CUDA:-AUTO}"
fi
cmake --build "$build_dir"
