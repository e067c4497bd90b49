// RUN: pc-opt %s -verify-diagnostics --pc-micro-batch

// expected-error @+1 {{'func.func' op has 2 micro-batches but was not shrunk to one (run --pc-micro-batch="phase=shrink" before --pc-autodiff)}}
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {pc.pipeline = #pc.pipeline<schedule = "1f1b", stages = 1, micro_batches = 2, virtual_stages = 1>} {
  %a = pc.tanh %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}
