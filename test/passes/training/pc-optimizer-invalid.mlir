// RUN: pc-opt %s --split-input-file --pc-optimizer --verify-diagnostics
// RUN: not pc-opt %S/pc-optimizer.mlir --pc-autodiff --pc-optimizer="beta1=1.0" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not pc-opt %S/pc-optimizer.mlir --pc-autodiff --pc-optimizer="clip-norm=-1" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not pc-opt %S/pc-optimizer.mlir --pc-autodiff --pc-optimizer="zero=4" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: --pc-optimizer: zero must be 0, 1, 2 or 3, not 4

// Every diagnostic of --pc-optimizer and pc.set_param.
// BETA: error: --pc-optimizer: needs 0 <= beta1, beta2 < 1, eps > 0, and momentum, weight-decay and clip-norm >= 0

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
// expected-error @+1 {{'pc.param' op is trained but has no layout, and the module has several meshes to replicate it on; declare its layout}}
pc.param @w : tensor<4xf32> = #pc.init<zeros>
func.func @f(%g: tensor<4xf32>) -> (tensor<f32> {pc.loss}, tensor<4xf32> {pc.grad = @w}) {
  %l = pc.reduce_sum %g {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l, %g : tensor<f32>, tensor<4xf32>
}

// -----

pc.mesh @a <["x"=2]>
// expected-error @+1 {{'func.func' op result #1 is the gradient of @nope, which is not a pc.param}}
func.func @f(%g: tensor<4xf32>) -> (tensor<f32> {pc.loss}, tensor<4xf32> {pc.grad = @nope}) {
  %l = pc.reduce_sum %g {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %l, %g : tensor<f32>, tensor<4xf32>
}

// -----

pc.mesh @a <["x"=2]>
func.func @f(%v: tensor<4xf32>) {
  // expected-error @+1 {{'pc.set_param' op refers to @nope, which is not a pc.param}}
  pc.set_param @nope, %v : tensor<4xf32>
  return
}

// -----

pc.param @w : tensor<4xf32> = #pc.init<zeros>
func.func @f(%v: tensor<5xf32>) {
  // expected-error @+1 {{'pc.set_param' op value type 'tensor<5xf32>' is not a value of parameter @w of type 'tensor<4xf32>'}}
  pc.set_param @w, %v : tensor<5xf32>
  return
}

// -----

// The mark of optimizer state belongs on parameters only.
// expected-error @+1 {{'pc.optimizer_state' is a unit attribute of a pc.param}}
pc.mesh @m <["x"=1]> {pc.optimizer_state}
