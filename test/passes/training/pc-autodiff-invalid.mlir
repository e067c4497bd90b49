// RUN: pc-opt %s --split-input-file --pc-autodiff --verify-diagnostics
// RUN: not pc-opt %S/pc-autodiff.mlir --pc-autodiff="graph=nope" 2>&1 | FileCheck %s --check-prefix=NAMED
// RUN: not pc-opt %S/pc-autodiff.mlir --pc-autodiff="graph=inference" 2>&1 | FileCheck %s --check-prefix=NOLOSS

// A graph named by the option must exist and have a loss.
// NAMED: error: --pc-autodiff: no logical graph @nope
// NOLOSS: error: 'func.func' op has no loss to differentiate: mark one 0-d float result with {pc.loss}

// Every diagnostic of --pc-autodiff and of the training attributes.

// expected-error @+1 {{'func.func' op marks results #0 and #1 as {pc.loss}; a graph has one loss}}
func.func @two(%x: tensor<f32>) -> (tensor<f32> {pc.loss}, tensor<f32> {pc.loss}) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op loss (result #0) must be a 0-d float tensor, not 'tensor<4xf32>'}}
func.func @vector(%x: tensor<4xf32>) -> (tensor<4xf32> {pc.loss}) {
  return %x : tensor<4xf32>
}

// -----

pc.param @w : tensor<4x8xf32> = #pc.init<normal(std = 1.0)>
func.func @no_rule(%ids: tensor<4xi64>) -> tensor<f32> {
  %w = pc.get_param @w : tensor<4x8xf32>
  // expected-error @+1 {{'pc.embedding_grad' op has no gradient rule; --pc-autodiff cannot differentiate through it}}
  %g = pc.embedding_grad %ids, %w : (tensor<4xi64>, tensor<4x8xf32>) -> tensor<10x8xf32>
  %l = pc.reduce_sum %g {axes = array<i64: 0, 1>} : (tensor<10x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op 'pc.loss' marks a result, not an argument}}
func.func @on_arg(%x: tensor<f32> {pc.loss}) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op 'pc.grad' of result #0 names the parameter it is the gradient of (@name)}}
func.func @grad_attr(%x: tensor<f32>) -> (tensor<f32> {pc.grad = "w"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op 'pc.loss' of result #0 is a unit attribute}}
func.func @loss_attr(%x: tensor<f32>) -> (tensor<f32> {pc.loss = 1 : i64}) {
  return %x : tensor<f32>
}
