// Each diagnostic of propagation is printed once, though several sweeps
// look at the op before the final one reports it.
// RUN: not pc-opt %s --pc-sbp-propagate 2>&1 | grep -c "error:" | FileCheck %s
// CHECK: {{^1$}}

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>> {
  %y = pc.relu %x : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
  return %y : tensor<8xf32, #pc.sbp<@m, [P]>>
}
