// RUN: pc-opt %s --split-input-file --pc-auto-parallel --verify-diagnostics

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>> {
  // expected-error @+1 {{'pc.relu' op has no SBP signature that produces its annotated result layout}}
  %0 = pc.relu %x : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
  return %0 : tensor<8xf32, #pc.sbp<@m, [P]>>
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'pc.exp' op pc-auto-parallel needs each op's mesh: the module has none or several, and the op has no pipeline stage on one}}
  %0 = pc.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
