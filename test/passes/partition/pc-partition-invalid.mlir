// RUN: pc-opt %s --split-input-file --pc-partition --verify-diagnostics

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>> {
  // expected-error @+1 {{'pc.boxing' op must be lowered before partitioning; run --pc-insert-boxing and --pc-lower-boxing first}}
  %0 = pc.boxing %x : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return %0 : tensor<8xf32, #pc.sbp<@m, [B]>>
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.exp' op has a result without a layout; run --pc-sbp-propagate first}}
  %0 = pc.exp %x : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op argument #0 has no layout; run --pc-sbp-propagate first}}
func.func @f(%x: tensor<8xf32>) {
  return
}
