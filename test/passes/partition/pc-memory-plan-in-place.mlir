// RUN: pc-opt %s --pc-memory-plan | FileCheck %s --check-prefix=KEPT
// RUN: pc-opt %s "--pc-memory-plan=in-place-updates" | FileCheck %s --check-prefix=INPLACE

// A training step whose weight and moment (1 KiB each) are updated, with
// little else. In a transaction (the default) the old pieces stay to the
// step's end beside the new ones: the peak is there, at the new weight
// (w, w2, m, m2 and the step s, 5 KiB and the loss). In place, each old
// piece goes after its last reader (m after the add, w after the sub),
// and the peak moves to the add: m and m2, the gradient g and the weight,
// 4 KiB and two scalars.
// KEPT: pc.memory = {activations = 4 : i64, activations_peak = 388 : i64, gradients = 0 : i64, optimizer_state = 2048 : i64, parameters = 2048 : i64, peak = 5124 : i64, workspace = 1024 : i64}
// INPLACE: pc.memory = {activations = 8 : i64, activations_peak = 388 : i64, gradients = 1024 : i64, optimizer_state = 2048 : i64, parameters = 1024 : i64, peak = 4104 : i64, workspace = 0 : i64}
pc.mesh @m <["x"=1]>
pc.param @w : tensor<16x16xf32> = #pc.init<zeros>
pc.param @w.m : tensor<16x16xf32> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
func.func @step.part0(%x: tensor<2x16xf32> {pc.index = 0 : i64, pc.logical_type = tensor<2x16xf32, #pc.sbp<@m, [B]>>}, %xt: tensor<16x2xf32> {pc.index = 2 : i64, pc.logical_type = tensor<16x2xf32, #pc.sbp<@m, [B]>>}, %lr: tensor<f32> {pc.index = 1 : i64, pc.logical_type = tensor<f32, #pc.sbp<@m, [B]>>, pc.name = "lr"}) -> (tensor<f32> {pc.index = 0 : i64, pc.logical_type = tensor<f32, #pc.sbp<@m, [B]>>, pc.loss}) attributes {pc.graph = "step", pc.ranks = array<i64: 0>} {
  %w = pc.get_param @w : tensor<16x16xf32>
  %m = pc.get_param @w.m : tensor<16x16xf32>
  %y = pc.matmul %x, %w : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %l = pc.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<2x16xf32>) -> tensor<f32>
  %g = pc.matmul %xt, %y : (tensor<16x2xf32>, tensor<2x16xf32>) -> tensor<16x16xf32>
  %m2 = pc.add %m, %g : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = pc.mul %m2, %lr : (tensor<16x16xf32>, tensor<f32>) -> tensor<16x16xf32>
  %w2 = pc.sub %w, %s : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  pc.set_param @w.m, %m2 : tensor<16x16xf32>
  pc.set_param @w, %w2 : tensor<16x16xf32>
  return %l : tensor<f32>
}
