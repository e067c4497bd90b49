// RUN: pc-opt %s --split-input-file --pc-memory-plan | FileCheck %s

// A forward pass: the stored parameters (2048 + 512 B) and the input
// (512 B) from the start; each result from its op to its last use, and
// reshapes are views of their operand. The peak is at the add, with its
// operands' memory (1024 B, once) still held: 4608 B, the input gone.
pc.mesh @m <["x"=1]>
pc.param @w1 : tensor<16x32xf32> = #pc.init<zeros>
pc.param @w2 : tensor<32x4xf32> = #pc.init<zeros>
// CHECK-LABEL: func.func @mlp.part0
// CHECK-SAME: pc.memory = {activations = 2048 : i64, activations_peak = 2048 : i64, gradients = 0 : i64, optimizer_state = 0 : i64, parameters = 2560 : i64, peak = 4608 : i64, workspace = 0 : i64}
func.func @mlp.part0(%x: tensor<8x16xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x16xf32, #pc.sbp<@m, [B]>>}) -> (tensor<8x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "mlp", pc.ranks = array<i64: 0>} {
  %w1 = pc.get_param @w1 : tensor<16x32xf32>
  %w2 = pc.get_param @w2 : tensor<32x4xf32>
  %h = pc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = pc.reshape %h : (tensor<8x32xf32>) -> tensor<256xf32>
  %b = pc.reshape %h : (tensor<8x32xf32>) -> tensor<256xf32>
  %c = pc.add %a, %b : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %d = pc.reshape %c : (tensor<256xf32>) -> tensor<8x32xf32>
  %y = pc.matmul %d, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A training step. The forward pass is what the loss depends on; the
// optimizer's work reads its state or the rate; the rest is the backward
// pass. The peak is at the gradient: the weight and its state (64 B each),
// the input, the rate and the activation (64 B each) and the loss (4 B),
// and the gradient (64 B). The new state and weight are held beside the
// old ones to the end (a step is a transaction), after the peak here. A
// reshape is a view: it adds nothing.
pc.mesh @m <["x"=1]>
pc.param @w : tensor<4x4xf32> = #pc.init<zeros>
pc.param @w.m : tensor<4x4xf32> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// CHECK-LABEL: func.func @step.part0
// CHECK-SAME: pc.memory = {activations = 196 : i64, activations_peak = 196 : i64, gradients = 64 : i64, optimizer_state = 64 : i64, parameters = 64 : i64, peak = 388 : i64, workspace = 0 : i64}
func.func @step.part0(%x: tensor<4x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4x4xf32, #pc.sbp<@m, [B]>>}, %lr: tensor<4x4xf32> {pc.index = 1 : i64, pc.logical_type = tensor<4x4xf32, #pc.sbp<@m, [B]>>, pc.name = "lr"}) -> (tensor<f32> {pc.index = 0 : i64, pc.logical_type = tensor<f32, #pc.sbp<@m, [B]>>, pc.loss}) attributes {pc.graph = "step", pc.ranks = array<i64: 0>} {
  %w = pc.get_param @w : tensor<4x4xf32>
  %m = pc.get_param @w.m : tensor<4x4xf32>
  %y = pc.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %l = pc.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<4x4xf32>) -> tensor<f32>
  %g = pc.matmul %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %v = pc.reshape %g : (tensor<4x4xf32>) -> tensor<16xf32>
  %g2 = pc.reshape %v : (tensor<16xf32>) -> tensor<4x4xf32>
  %m2 = pc.add %m, %g2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = pc.mul %m2, %lr : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %w2 = pc.sub %w, %s : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  pc.set_param @w.m, %m2 : tensor<4x4xf32>
  pc.set_param @w, %w2 : tensor<4x4xf32>
  return %l : tensor<f32>
}
