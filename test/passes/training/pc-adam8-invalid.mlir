// RUN: pc-opt %s --split-input-file --verify-diagnostics

// pc.adam8_update's operands: codes are ui8 of the weight's shape, scales
// one f32 per block of 256 of a row.

func.func @f(%w: tensor<4x512xf32>, %m: tensor<4x512xui8>, %s: tensor<4x1xf32>, %lr: tensor<f32>) -> tensor<4x512xf32> {
  // expected-error @+1 {{'pc.adam8_update' op m_scale (one per block) must be f32 of shape 4x2, not 'tensor<4x1xf32>'}}
  %w2, %m2, %ms2, %v2, %vs2 = pc.adam8_update %w, %w, %m, %s, %m, %s, %lr, %lr, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<4x512xf32>, tensor<4x512xf32>, tensor<4x512xui8>, tensor<4x1xf32>, tensor<4x512xui8>, tensor<4x1xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x512xf32>, tensor<4x512xui8>, tensor<4x1xf32>, tensor<4x512xui8>, tensor<4x1xf32>)
  return %w2 : tensor<4x512xf32>
}

// -----

func.func @f(%w: tensor<4x512xf32>, %m: tensor<4x512xf32>, %s: tensor<4x2xf32>, %lr: tensor<f32>) -> tensor<4x512xf32> {
  // expected-error @+1 {{'pc.adam8_update' op m must be ui8 of shape 4x512, not 'tensor<4x512xf32>'}}
  %w2, %m2, %ms2, %v2, %vs2 = pc.adam8_update %w, %w, %m, %s, %m, %s, %lr, %lr, %lr {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<4x512xf32>, tensor<4x512xf32>, tensor<4x512xf32>, tensor<4x2xf32>, tensor<4x512xf32>, tensor<4x2xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x512xf32>, tensor<4x512xf32>, tensor<4x2xf32>, tensor<4x512xf32>, tensor<4x2xf32>)
  return %w2 : tensor<4x512xf32>
}
