#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh, which builds everything, the C++
# examples included), then runs the main job on CPU virtual devices:
#   1. examples/gpt_hybrid.cpp: a two-layer GPT built with the C++ API,
#      data parallel x tensor parallel on [dp=2, tp=2]; it prints the plan
#      of its training step, then the loss as it trains with AdamW, then how
#      to run it on more devices or on GPUs;
#   2. pc-opt compiles a GPT block from IR text and reports its collectives
#      and the bytes each device receives;
#   3. pc-run trains the same kind of GPT from IR text for a few steps.
# Arguments go to gpt_hybrid (e.g. --dp 4 --tp 2 --steps 50).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PC_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
echo "== 1. a GPT through the C++ API, DP x TP on CPU virtual devices"
"$build/examples/gpt_hybrid" "$@"
echo
echo "== 2. a GPT block from IR text on [dp=2, tp=2]: collectives and bytes"
"$build/bin/pc-opt" "$root/examples/gpt_block_2x2.mlir" --pc-sbp-propagate \
  --pc-insert-boxing --pc-boxing-report -o /dev/null | tail -4
echo
echo "== 3. a two-layer GPT from IR text, trained by pc-run on cpu:4"
"$build/bin/pc-run" "$root/examples/gpt_tiny_2x2.mlir" --devices cpu:4 \
  --train --steps 5 --lr 1e-2
