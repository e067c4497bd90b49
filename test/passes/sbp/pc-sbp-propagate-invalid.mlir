// RUN: pc-opt %s --split-input-file --allow-unregistered-dialect --pc-sbp-propagate --verify-diagnostics

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+2 {{'pc.relu' op has no SBP signature on mesh @m that produces its annotated result layout [P] from operands [S(0)]; its signatures are ([B]) -> [B], ([S(0)]) -> [S(0)]}}
  // expected-note @+1 {{change the layout of an operand or result with pc.to_sbp instead}}
  %0 = pc.relu %x : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
// expected-error @+1 {{'func.func' op cannot decide a layout for 'tensor<8xf32>': nothing connects it to an annotated value, and the module has no single mesh to broadcast it on; annotate it}}
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = pc.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'test.op' op is not a pc logical op; SBP propagation cannot give it a layout}}
  "test.op"(%x) : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> ()
  return
}
