// RUN: pc-opt %s --split-input-file --verify-diagnostics

// Every rule of pc.to_sbp and pc.boxing has a test.

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pc.to_sbp' op result type 'tensor<4xf32>' has no #pc.sbp layout; pc.to_sbp constrains a value to the layout of its result type}}
  %0 = pc.to_sbp %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pc.to_sbp' op changes the logical type from 'tensor<4xf32>' to 'tensor<8xf32, #pc.sbp<@m, [S(0)]>>'; a layout change keeps the shape and element type}}
  %0 = pc.to_sbp %x : (tensor<4xf32>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pc.to_sbp' op changes the logical type from 'tensor<4xf32>' to 'tensor<4xf16, #pc.sbp<@m, [S(0)]>>'}}
  %0 = pc.to_sbp %x : (tensor<4xf32>) -> tensor<4xf16, #pc.sbp<@m, [S(0)]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pc.boxing' op operand type 'tensor<4xf32>' has no #pc.sbp layout; boxing converts between decided layouts}}
  %0 = pc.boxing %x : (tensor<4xf32>) -> tensor<4xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32, #pc.sbp<@m, [P]>>) {
  // expected-error @+1 {{'pc.boxing' op result type 'tensor<4xf32>' has no #pc.sbp layout; boxing converts between decided layouts}}
  %0 = pc.boxing %x : (tensor<4xf32, #pc.sbp<@m, [P]>>) -> tensor<4xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32, #pc.sbp<@m, [P]>>) {
  // expected-error @+1 {{'pc.boxing' op changes the logical type from 'tensor<4xf32, #pc.sbp<@m, [P]>>' to 'tensor<2xf32, #pc.sbp<@m, [B]>>'}}
  %0 = pc.boxing %x : (tensor<4xf32, #pc.sbp<@m, [P]>>) -> tensor<2xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32, #pc.sbp<@m, [P]>>) {
  // expected-error @+1 {{'pc.to_sbp' op result #0 of type 'tensor<4xf32, #pc.sbp<@m, [B, B]>>': SBP [B, B] has 2 entries but mesh @m has 1 axes}}
  %0 = pc.to_sbp %x : (tensor<4xf32, #pc.sbp<@m, [P]>>) -> tensor<4xf32, #pc.sbp<@m, [B, B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // A constraint to a split of a dim the tensor lacks.
  // expected-error @+1 {{split dim 1 of SBP entry #0 in #pc.sbp<@m, [S(1)]> is out of range for a rank-1 tensor}}
  %0 = pc.to_sbp %x : (tensor<4xf32>) -> tensor<4xf32, #pc.sbp<@m, [S(1)]>>
  return
}
