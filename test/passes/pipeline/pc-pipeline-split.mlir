// RUN: pc-opt %s -split-input-file --pc-pipeline-split="stages=2 report=true" | FileCheck %s
// RUN: pc-opt %s -split-input-file --pc-pipeline-split --pc-sbp-propagate --pc-insert-boxing --pc-lower-boxing | FileCheck %s --check-prefix=BOXING

// The balanced cut: each op weighs its share of the flops plus its share of
// the parameter and activation bytes; the stages get copies of the mesh on
// the next ranks, and undeclared parameters are replicated on their stage.
// CHECK: pipeline split of @mlp into 2 stages:
// CHECK-NEXT: stage 0: 5 ops, 2.611e+04 flops (51.1%), 6144 parameter bytes
// CHECK-NEXT: stage 1: 8 ops, 2.498e+04 flops (48.9%), 5376 parameter bytes
// CHECK: pc.mesh @m_stage0 <["dp"=1]> ranks [0]
// CHECK: pc.mesh @m_stage1 <["dp"=1]> ranks [1]
// CHECK: pc.param @w1 : tensor<16x32xf32, #pc.sbp<@m_stage0, [B]>>
// CHECK: pc.param @w4 : tensor<32x10xf32, #pc.sbp<@m_stage1, [B]>>
// CHECK: func.func @mlp
// CHECK-SAME: pc.pipeline = #pc.pipeline<schedule = "1f1b", stages = 2, micro_batches = 1, virtual_stages = 1>
// CHECK-SAME: pc.stage_meshes = [@m_stage0, @m_stage1]
// CHECK: pc.get_param @w1 {pc.stage = 0 : i64}
// CHECK: pc.matmul {{.*}}pc.stage = 0
// CHECK: pc.matmul {{.*}}pc.stage = 0
// CHECK: pc.tanh {{.*}}pc.stage = 1
// CHECK: pc.cross_entropy {{.*}}pc.stage = 1
pc.mesh @m <["dp"=1]>
pc.param @w1 : tensor<16x32xf32> = #pc.init<normal(std = 0.1)>
pc.param @w2 : tensor<32x32xf32> = #pc.init<normal(std = 0.1)>
pc.param @w3 : tensor<32x32xf32> = #pc.init<normal(std = 0.1)>
pc.param @w4 : tensor<32x10xf32> = #pc.init<normal(std = 0.1)>
func.func @mlp(%x: tensor<8x16xf32>, %labels: tensor<8xi64>) -> (tensor<f32> {pc.loss}) {
  %w1 = pc.get_param @w1 : tensor<16x32xf32>
  %w2 = pc.get_param @w2 : tensor<32x32xf32>
  %w3 = pc.get_param @w3 : tensor<32x32xf32>
  %w4 = pc.get_param @w4 : tensor<32x10xf32>
  %h1 = pc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a1 = pc.tanh %h1 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %h2 = pc.matmul %a1, %w2 : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %a2 = pc.tanh %h2 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %h3 = pc.matmul %a2, %w3 : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %a3 = pc.tanh %h3 : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = pc.matmul %a3, %w4 : (tensor<8x32xf32>, tensor<32x10xf32>) -> tensor<8x10xf32>
  %ce = pc.cross_entropy %y, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
  %loss = pc.reduce_mean %ce {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Stages the user assigned (pc.stage), on meshes the user named: stage 0's
// [S(0), B] on one 2x2 mesh feeds stage 1's [B, S(1)] on another, and each
// side keeps its layout; one transfer moves the pieces between them.
// CHECK-LABEL: func.func @f
// CHECK-SAME: pc.stage_meshes = [@a, @b]
// BOXING-LABEL: func.func @f
// BOXING: %[[Y:.*]] = pc.tanh %arg0 {pc.stage = 0 : i64} : (tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>) -> tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>
// BOXING-NEXT: %[[T:.*]] = pc.transfer %[[Y]] : (tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>) -> tensor<8x16xf32, #pc.sbp<@b, [B, S(1)]>>
// BOXING-NEXT: pc.exp %[[T]] {pc.stage = 1 : i64} : (tensor<8x16xf32, #pc.sbp<@b, [B, S(1)]>>) -> tensor<8x16xf32, #pc.sbp<@b, [B, S(1)]>>
pc.mesh @a <["dp"=2, "tp"=2]>
pc.mesh @b <["dp"=2, "tp"=2]> ranks [4, 5, 6, 7]
func.func @f(%x: tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>) -> tensor<8x16xf32, #pc.sbp<@b, [B, S(1)]>> attributes {pc.stage_meshes = [@a, @b]} {
  %y = pc.tanh %x {pc.stage = 0 : i64} : (tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>) -> tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>
  %z = pc.exp %y {pc.stage = 1 : i64} : (tensor<8x16xf32, #pc.sbp<@a, [S(0), B]>>) -> tensor<8x16xf32>
  %w = pc.to_sbp %z {pc.stage = 1 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32, #pc.sbp<@b, [B, S(1)]>>
  return %w : tensor<8x16xf32, #pc.sbp<@b, [B, S(1)]>>
}
