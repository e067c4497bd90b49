#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the main job: pc-opt reads
# the example model, an MLP laid out data- and tensor-parallel on a 2x2 mesh
# of CPU virtual devices, verifies it and prints it back.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PC_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
model=${1:-$root/examples/mlp_2x2.mlir}
echo "== pc-opt $model"
"$build_dir/bin/pc-opt" "$model"
