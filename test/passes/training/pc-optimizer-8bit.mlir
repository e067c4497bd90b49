// RUN: pc-opt %s --pc-autodiff --pc-optimizer="state-bits=8" | FileCheck %s
// RUN: not pc-opt %s --pc-autodiff --pc-optimizer="state-bits=4" 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: not pc-opt %s --pc-autodiff --pc-optimizer="state-bits=8 kind=sgd" 2>&1 | FileCheck %s --check-prefix=SGD

// 8-bit Adam states: a weight of 4096 elements or more keeps its moments
// as ui8 codes of its shape and an f32 scale per block of 256 of a row
// (512 columns: 2 blocks per row), updated by pc.adam8_update; a smaller
// tensor keeps f32 moments and pc.adam_update.
// CHECK: pc.param @w.adam_m : tensor<16x512xui8, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// CHECK-NEXT: pc.param @w.adam_m.scale : tensor<16x2xf32, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// CHECK-NEXT: pc.param @w.adam_v : tensor<16x512xui8, #pc.sbp<@m, [B]>>
// CHECK-NEXT: pc.param @w.adam_v.scale : tensor<16x2xf32, #pc.sbp<@m, [B]>>
// CHECK: pc.param @b.adam_m : tensor<512xf32, #pc.sbp<@m, [B]>>
// CHECK-LABEL: func.func @train
// CHECK: pc.adam8_update
// CHECK-SAME: -> (tensor<16x512xf32, #pc.sbp<@m, [B]>>, tensor<16x512xui8, #pc.sbp<@m, [B]>>, tensor<16x2xf32, #pc.sbp<@m, [B]>>, tensor<16x512xui8, #pc.sbp<@m, [B]>>, tensor<16x2xf32, #pc.sbp<@m, [B]>>)
// CHECK: pc.set_param @w.adam_m,
// CHECK: pc.set_param @w.adam_m.scale,
// CHECK: pc.adam_update
// CHECK-NOT: pc.adam8_update

// BITS: error: --pc-optimizer: state-bits is 32, or 8 with the fused adam or adamw update, not 4 with adamw
// SGD: error: --pc-optimizer: state-bits is 32, or 8 with the fused adam or adamw update, not 8 with sgd

pc.mesh @m <["dp"=2]>
pc.param @w : tensor<16x512xf32> = #pc.init<normal(std = 0.1)>
pc.param @b : tensor<512xf32> = #pc.init<zeros>
func.func @train(%x: tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<f32> {
  %w = pc.get_param @w : tensor<16x512xf32>
  %b = pc.get_param @b : tensor<512xf32>
  %h = pc.matmul %x, %w : (tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>, tensor<16x512xf32>) -> tensor<8x512xf32>
  %z = pc.add %h, %b : (tensor<8x512xf32>, tensor<512xf32>) -> tensor<8x512xf32>
  %l = pc.reduce_mean %z {axes = array<i64: 0, 1>} : (tensor<8x512xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
