// RUN: pc-opt %s --split-input-file --verify-diagnostics
// RUN: not pc-opt %S/pc-mixed-precision.mlir --pc-mixed-precision="dtype=f64" 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not pc-opt %S/pc-mixed-precision.mlir --pc-mixed-precision="loss-scale=lots" 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not pc-opt %S/pc-mixed-precision.mlir --pc-mixed-precision="loss-scale=-4" 2>&1 | FileCheck %s --check-prefix=SCALE
// RUN: not pc-opt %S/pc-mixed-precision.mlir --pc-mixed-precision="dtype=f16 init-scale=0" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not pc-opt %S/pc-mixed-precision.mlir --pc-mixed-precision="dtype=f16 backoff-factor=2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not pc-opt %S/pc-mixed-precision.mlir --pc-mixed-precision="inject-overflow=true" 2>&1 | FileCheck %s --check-prefix=INJECT
// DTYPE: error: --pc-mixed-precision: dtype must be bf16 or f16, not 'f64'
// SCALE: error: --pc-mixed-precision: loss-scale must be dynamic, none or a positive number
// RANGE: error: --pc-mixed-precision: needs init-scale > 0, growth-interval >= 1, growth-factor >= 1 and 0 < backoff-factor <= 1
// INJECT: error: --pc-mixed-precision: inject-overflow needs loss scaling (loss-scale is none)

// Every diagnostic of pc.loss_scaling and pc.select.

// expected-error @+1 {{'pc.loss_scaling' must be a dictionary {scale = @param, interval, growth, backoff[, clean_steps = @param]} on a func.func}}
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> attributes {pc.loss_scaling = {scale = @s}} {
  return %x : tensor<8xf32>
}

// -----

// expected-error @+1 {{'pc.loss_scaling' names @s, which is not a pc.param}}
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> attributes {pc.loss_scaling = {scale = @s, interval = 10 : i64, growth = 2.0 : f64, backoff = 0.5 : f64}} {
  return %x : tensor<8xf32>
}

// -----

pc.param @s : tensor<f32> = #pc.init<ones>
// expected-error @+1 {{'pc.loss_scaling' needs interval >= 1, growth >= 1 and 0 < backoff <= 1}}
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> attributes {pc.loss_scaling = {scale = @s, interval = 0 : i64, growth = 2.0 : f64, backoff = 0.5 : f64}} {
  return %x : tensor<8xf32>
}

// -----

func.func @f(%c: tensor<2xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'pc.select' op condition must be 0-d, not 2}}
  %y = pc.select %c, %x, %x : (tensor<2xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @f(%c: tensor<f32>, %x: tensor<8xf32>, %z: tensor<8xbf16>) -> tensor<8xf32> {
  // expected-error @+1 {{'pc.select' op picks between tensors of the result's shape and element type 'tensor<8xf32>', not 'tensor<8xbf16>'}}
  %y = pc.select %c, %x, %z : (tensor<f32>, tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
