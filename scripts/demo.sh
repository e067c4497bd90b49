#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh, which builds everything, the C++
# examples included), then runs the main job on CPU virtual devices:
#   1. a byte-level GPT (examples/gpt_bytes_2x2.mlir) learns English text:
#      the fortunes corpus (scripts/corpus.sh), data parallel x tensor
#      parallel x pipeline parallel: two pipeline stages, each on its own
#      [dp=2, tp=2] mesh, 8 CPU devices, each batch in 2 micro-batches
#      (1F1B). It prints the plan, a sample before training, the progress
#      bar (loss, rate, tokens/s), the validation loss every 300 steps, and
#      a sample after training (docs/data.md);
#   2. examples/gpt_hybrid.cpp: a GPT built with the C++ API, trained on
#      the same mesh;
#   3. pc-opt compiles a GPT block from IR text and reports its collectives
#      and the bytes each device receives.
# PC_DEMO_STEPS sets step 1's steps (default 1200; 300 is a shorter run);
# arguments go to its pc-run (e.g. --temperature 0.5).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PC_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh"
echo "== 1. a byte-level GPT learns English text (fortunes), DP x TP x PP on cpu:8"
"$build/bin/pc-run" "$root/examples/gpt_bytes_2x2.mlir" --devices cpu:8 \
  --stages 2 --micro-batches 2 --plan --train --steps "${PC_DEMO_STEPS:-1200}" --lr 2e-3 --schedule cosine --warmup-steps 50 \
  --min-lr 2e-4 --data "$("$root/scripts/corpus.sh")" --eval-every 300 \
  --eval-batches 16 --generate 240 --prompt "The " --temperature 0.8 \
  --seed 1 "$@"
echo
echo "== 2. a GPT through the C++ API, DP x TP on CPU virtual devices"
"$build/examples/gpt_hybrid" --steps 10
echo
echo "== 3. a GPT block from IR text on [dp=2, tp=2]: collectives and bytes"
"$build/bin/pc-opt" "$root/examples/gpt_block_2x2.mlir" --pc-sbp-propagate \
  --pc-insert-boxing --pc-boxing-report -o /dev/null | tail -4
