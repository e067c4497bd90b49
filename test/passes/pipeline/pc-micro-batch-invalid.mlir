// RUN: pc-opt %s -split-input-file -verify-diagnostics --pc-pipeline-split="micro-batches=2" --pc-micro-batch="phase=shrink"

// expected-error @+1 {{'func.func' op input #0 has a batch of 3 rows (dim 0), which do not split into 2 micro-batches}}
func.func @rows(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %a = pc.tanh %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %a : tensor<3x4xf32>
}

// -----

func.func @slices(%x: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'pc.slice' op cannot run as micro-batches: it slices the batch dim}}
  %a = pc.slice %x {start = array<i64: 0, 0>, limit = array<i64: 2, 4>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
  return %a : tensor<2x4xf32>
}

// -----

func.func @reshapes(%x: tensor<4x6xf32>) -> tensor<24xf32> {
  %t = pc.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  // expected-error @+1 {{'pc.reshape' op cannot run as micro-batches: a reshape keeps the batch only as the leading dim}}
  %r = pc.reshape %t : (tensor<6x4xf32>) -> tensor<24xf32>
  return %r : tensor<24xf32>
}

// -----

func.func @maximum(%x: tensor<4x6xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'pc.reduce_max' op cannot run as micro-batches: a maximum over the batch does not combine from micro-batches}}
  %m = pc.reduce_max %x {axes = array<i64: 0>} : (tensor<4x6xf32>) -> tensor<6xf32>
  return %m : tensor<6xf32>
}

// -----

func.func @normalizes(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{'pc.softmax' op cannot run as micro-batches: it normalizes over the batch dim}}
  %s = pc.softmax %x {axis = 0 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}

// -----

func.func @batchnorm(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %m = pc.reduce_mean %x {axes = array<i64: 0>, keepdim} : (tensor<4x6xf32>) -> tensor<1x6xf32>
  // expected-error @+1 {{'pc.sub' op cannot run as micro-batches: it combines batched values with a reduction over the batch, which each micro-batch would compute over its own rows}}
  %c = pc.sub %x, %m : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  return %c : tensor<4x6xf32>
}

// -----

func.func @ratio(%x: tensor<4x6xf32>, %mask: tensor<4x6xf32>) -> tensor<f32> {
  %num = pc.reduce_sum %x {axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<f32>
  %den = pc.reduce_sum %mask {axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<f32>
  // expected-error @+1 {{'pc.div' op cannot run as micro-batches: it multiplies or divides by a reduction over the batch; micro-batches combine reductions by averaging or summing, which only linear ops preserve}}
  %r = pc.div %num, %den : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @nonlinear(%x: tensor<4x6xf32>) -> tensor<f32> {
  %s = pc.reduce_mean %x {axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<f32>
  // expected-error @+1 {{'pc.log' op cannot run as micro-batches: it is not linear in a reduction over the batch; micro-batches combine reductions by averaging or summing, which only linear ops preserve}}
  %l = pc.log %s : (tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @sumplus(%x: tensor<4x6xf32>, %c: tensor<f32>) -> tensor<f32> {
  %s = pc.reduce_sum %x {axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<f32>
  // expected-error @+1 {{'pc.add' op cannot run as micro-batches: it adds a term without the batch to a sum over the batch; micro-batches would count the term once each}}
  %l = pc.add %s, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @pairs(%x: tensor<4x6xf32>) -> tensor<2x12xf32> {
  // expected-error @+1 {{'pc.reshape' op cannot run as micro-batches: a reshape keeps the batch only as the leading dim, with each batch element's rows together}}
  %r = pc.reshape %x : (tensor<4x6xf32>) -> tensor<2x12xf32>
  return %r : tensor<2x12xf32>
}

// -----

pc.param @w : tensor<6xf32> = #pc.init<zeros>
func.func @stores(%x: tensor<4x6xf32>) {
  %s = pc.reduce_mean %x {axes = array<i64: 0>} : (tensor<4x6xf32>) -> tensor<6xf32>
  // expected-error @+1 {{'pc.set_param' op cannot run as micro-batches: it stores a parameter; micro-batches split the forward graph (with its loss), and the update comes after them}}
  pc.set_param @w, %s : tensor<6xf32>
  return
}
