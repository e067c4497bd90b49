// RUN: pc-opt %s --split-input-file --verify-diagnostics
// RUN: not pc-opt %S/pc-recompute.mlir --pc-autodiff --pc-recompute="mode=some" 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: --pc-recompute: mode is full or selective, not 'some'

// Every diagnostic of --pc-recompute, pc.segment and pc.after.

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'pc.segment' is a recompute segment: an integer of at least 0}}
  %y = pc.tanh %x {pc.segment = -1 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>, %g: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.after' op result shape 4 does not match the inferred shape 8}}
  %y = pc.after %x, %g : (tensor<8xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'pc.recompute' is a unit attribute}}
  %y = pc.tanh %x {pc.recompute = 1 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
