// RUN: pc-opt %s --pc-insert-boxing --verify-diagnostics

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pc.to_sbp' op has an operand without a layout; run --pc-sbp-propagate first}}
  %0 = pc.to_sbp %x : (tensor<8xf32>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}
