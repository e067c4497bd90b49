// RUN: pc-opt %s -verify-diagnostics --pc-pipeline-split="stages=3"

// A graph with two ops cannot fill three stages.
pc.mesh @m <["x"=1]>
// expected-error @+1 {{'func.func' op cannot be cut into 3 pipeline stages: stage 1 would have no ops (use fewer stages)}}
func.func @small(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = pc.tanh %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = pc.exp %a : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %b : tensor<4x4xf32>
}
