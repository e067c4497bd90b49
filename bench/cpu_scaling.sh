#!/usr/bin/env bash
# A compute-bound MLP forward pass (batch 256, 1024 -> 4096 -> 1024, f32) on
# cpu:1 and on cpu:2 (data parallel), one BLAS thread per device, N
# overlapped steps each (pc-run's steady-state step time), measured in the
# same run; prints the speedup.
#
#   bench/cpu_scaling.sh [STEPS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run=${PC_RUN:-$root/build/bin/pc-run}
steps=${1:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mlp() { # mlp DEVICES
  cat <<MLIR
pc.mesh @m <["dp"=$1]>
pc.param @w1 : tensor<1024x4096xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
pc.param @w2 : tensor<4096x1024xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
func.func @mlp(%x: tensor<256x1024xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<256x1024xf32> {
  %w1 = pc.get_param @w1 : tensor<1024x4096xf32, #pc.sbp<@m, [B]>>
  %w2 = pc.get_param @w2 : tensor<4096x1024xf32, #pc.sbp<@m, [B]>>
  %h = pc.matmul %x, %w1 : (tensor<256x1024xf32, #pc.sbp<@m, [S(0)]>>, tensor<1024x4096xf32, #pc.sbp<@m, [B]>>) -> tensor<256x4096xf32>
  %a = pc.relu %h : (tensor<256x4096xf32>) -> tensor<256x4096xf32>
  %y = pc.matmul %a, %w2 : (tensor<256x4096xf32>, tensor<4096x1024xf32, #pc.sbp<@m, [B]>>) -> tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
}
MLIR
}

best() { # best DEVICES: the steady-state step time
  mlp "$1" > "$tmp/mlp$1.mlir"
  "$run" "$tmp/mlp$1.mlir" --devices "cpu:$1" --steps "$steps" \
      --threads-per-device 1 | awk '/^steady state/ { print $3 }'
}

t1=$(best 1)
t2=$(best 2)
echo "MLP forward, steady state over $steps steps: cpu:1 $t1 s, cpu:2 $t2 s per step"
awk -v a="$t1" -v b="$t2" 'BEGIN { printf "speedup cpu:2 / cpu:1 = %.2f (target >= 1.6)\n", a / b }'
