#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs into one relocatable archive, for a GPU
# machine that has the NVIDIA driver, cuBLAS and NCCL but not the Debian
# packages pc builds against (LLVM/MLIR 22, abseil, OpenBLAS, oneDNN, OpenMPI):
# a container image with CUDA and PyTorch, say.
#
#   scripts/gpu-bundle.sh [BUILD-DIR] [OUT.tar.xz]   (default BUILD-DIR/gpu-bundle.tar.xz)
#
# BUILD-DIR (default build) is a configured CUDA build (PC_ENABLE_CUDA found
# nvcc; its CMAKE_CUDA_ARCHITECTURES must cover the target GPU). The check's
# binaries are linked again with LLVM and MLIR's static archives, so that
# libLLVM/libMLIR (250 MB, with z3 and ICU behind them) stay behind; the
# other shared libraries they load are copied beside them, except the C
# library's and the large CUDA libraries (cuBLAS, cuBLASLt, NCCL), which the
# GPU machine has. On the GPU machine:
#
#   mkdir -p build-gpu && tar -C build-gpu -xf OUT.tar.xz
#   PC_BUILD_DIR=$PWD/build-gpu scripts/gpu-check.sh
#
# (gpu-check.sh finds build-gpu/lib and the machine's cuBLAS and NCCL.)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/gpu-bundle.tar.xz}
targets=(bin/pc-run test/unit/PcCudaTests test/unit/PcPortableKernelTests
  bench/pc-bench-device-kernels)
llvm_lib=$(llvm-config-22 --libdir 2>/dev/null || echo /usr/lib/llvm-22/lib)

compgen -G "$build/CMakeFiles/*/CMakeCUDACompiler.cmake" >/dev/null ||
  { echo "gpu-bundle: $build is not a CUDA build (PC_ENABLE_CUDA found no nvcc)" >&2; exit 1; }
(cd "$build" && ninja "${targets[@]}" pc-cuda)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
static_llvm="-Wl,--start-group $(ls "$llvm_lib"/libMLIR*.a "$llvm_lib"/libLLVM*.a |
  tr '\n' ' ') -Wl,--end-group"
for t in "${targets[@]}"; do
  mkdir -p "$stage/$(dirname "$t")"
  # The target's own link line, with the LLVM/MLIR shared libraries swapped
  # for their archives and the output moved into the bundle.
  cmd=$(cd "$build" && ninja -t commands "$t" | tail -1)
  cmd=$(sed -E -e "s# [^ ]*libMLIR\.so[^ ]*# ${static_llvm//#/\\#}#" \
    -e "s# [^ ]*libLLVM\.so[^ ]*##" \
    -e "s# -o $t # -o $stage/$t -fuse-ld=lld -Wl,--disable-new-dtags '-Wl,-rpath,\$ORIGIN/$(
      dirname "$t" | sed -E 's#[^/]+#..#g')/lib' #" <<<"$cmd")
  echo "gpu-bundle: linking $t"
  (cd "$build" && eval "$cmd")
  strip "$stage/$t"
done

# The CUDA backend's module, which the binaries load on first use
# (gpu-check.sh names it through PC_CUDA_PLUGIN).
mkdir -p "$stage/lib/pc"
cp "$build/lib/pc/libpc-cuda.so" "$stage/lib/pc/"
strip "$stage/lib/pc/libpc-cuda.so"

# Shared libraries the binaries load, directly or through each other (the
# rpath is DT_RPATH, which the loader also applies to a library's own
# needs), but not glibc's nor the CUDA libraries a GPU machine has (and
# that are hundreds of MB).
skip='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|linux-vdso|libcublas|libcublasLt|libnccl|libcuda)\.so'
needed=$(for t in "${targets[@]}" lib/pc/libpc-cuda.so; do ldd "$stage/$t"; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
for so in $needed; do
  base=$(basename "$so")
  grep -qE "$skip" <<<"$base" || cp -L "$so" "$stage/lib/$base"
done
if ldd "$stage"/bin/pc-run | grep -qE 'libMLIR|libLLVM'; then
  echo "gpu-bundle: pc-run still loads libLLVM/libMLIR" >&2
  exit 1
fi
# xz: a container image may lack zstd, and Python's tarfile reads xz too.
XZ_OPT="-9 -T0" tar -C "$stage" -cJf "$out" .
echo "gpu-bundle: $out ($(du -h "$out" | cut -f1)); contents:"
(cd "$stage" && du -sh bin test/unit bench lib)
