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
