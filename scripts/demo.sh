#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the main job on CPU
# virtual devices:
#   1. pc-opt reads and verifies the example model, an MLP laid out data- and
#      tensor-parallel on a 2x2 mesh, and prints it back;
#   2. pc-opt compiles a GPT block with --pc-distribute and reports the
#      collectives and the bytes each device receives;
#   3. pc-run runs a two-layer GPT with its loss on four CPU virtual devices;
#   4. pc-check runs it both as one logical program and as per-device
#      programs, and compares.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${PC_BUILD_DIR:-$root/build}/bin

"$root/scripts/setup.sh"
model=${1:-$root/examples/mlp_2x2.mlir}
echo "== 1. pc-opt $model"
"$bin/pc-opt" "$model"
echo
echo "== 2. the GPT block on [dp=2, tp=2]: collectives and bytes per device"
"$bin/pc-opt" "$root/examples/gpt_block_2x2.mlir" --pc-sbp-propagate \
  --pc-insert-boxing --pc-boxing-report -o /dev/null
echo
echo "== 3. a two-layer GPT on 4 CPU virtual devices (pc-run --devices cpu:4)"
"$bin/pc-run" "$root/examples/gpt_tiny_2x2.mlir" --devices cpu:4 --steps 3
echo
echo "== 4. the same GPT: logical vs per-device programs (pc-check)"
"$bin/pc-check" "$root/examples/gpt_tiny_2x2.mlir"
