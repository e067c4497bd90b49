#!/usr/bin/env bash
# Search time of --pc-auto-parallel on GPT training graphs with no layout
# but the mesh (bench/gen_gpt.py --unannotated, then pc-autodiff), and what
# it chose. Target: under 10 s for a 96-layer transformer training graph.
#
#   bench/auto_parallel.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
opt=${PC_OPT:-$root/build/bin/pc-opt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # name, gen_gpt args...
  local name=$1
  shift
  /usr/bin/python3 "$root/bench/gen_gpt.py" --unannotated "$@" > "$tmp/fwd.mlir"
  "$opt" "$tmp/fwd.mlir" --pc-autodiff -o "$tmp/train.mlir"
  local start end
  start=$(date +%s.%N)
  "$opt" "$tmp/train.mlir" --pc-auto-parallel="report=true cluster=$root/planner/clusters/dgx-h100.json" \
      -o "$tmp/planned.mlir" | sed "s/^pc-auto-parallel:/$name:/"
  end=$(date +%s.%N)
  printf '%s: %.2f s including parse and print; fc weight of layer 0: %s\n' "$name" \
    "$(echo "$end - $start" | bc)" \
    "$(grep -o 'pc.param @h0.mlp.fc : tensor<[^>]*>>' "$tmp/planned.mlir" | sed 's/.*, #pc.sbp/#pc.sbp/')"
}

run "GPT 12 layers, h 768, [2, 2]" --layers 12 --hidden 768 --heads 12 --batch 16 --seq 1024 --vocab 50304 --mesh 2x2
run "GPT 96 layers, h 4096, [8, 8]" --layers 96 --hidden 4096 --heads 64 --batch 64 --seq 1024 --vocab 51200 --mesh 8x8
run "GPT-3 175B, [8, 8]" --preset gpt3-175b --batch 64 --mesh 8x8
