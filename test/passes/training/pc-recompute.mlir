// RUN: pc-opt %s --pc-autodiff --pc-recompute --split-input-file | FileCheck %s --check-prefix=FULL
// RUN: pc-opt %s --pc-autodiff --pc-recompute="mode=selective" --split-input-file | FileCheck %s --check-prefix=SEL

// Two layers and a head. Layer l0's gelu reads its matmul's result in the
// backward pass: under full recompute, that result is made again from the
// layer's input, through pc.after the gradient reaching the layer. The
// gelu's result is l1's input, a checkpoint, which the backward pass reads
// as it is. l1 and the head keep nothing the backward pass would read
// besides checkpoints, so they get no copies. Selective recompute has no
// attention core here.

// FULL-LABEL: func.func @mlp
// FULL: %[[W0:.*]] = pc.get_param @l0.w
// FULL: %[[A0:.*]] = pc.matmul %arg0, %[[W0]] :
// FULL: %[[G0:.*]] = pc.gelu %[[A0]]
// FULL: %[[DG:.*]] = pc.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
// FULL-NEXT: pc.matmul %[[G0]], %{{.*}} {transpose_lhs}
// FULL-NEXT: %[[X:.*]] = pc.after %arg0, %[[DG]] {pc.recompute}
// FULL-NEXT: %[[W:.*]] = pc.after %[[W0]], %[[DG]] {pc.recompute}
// FULL-NEXT: %[[A1:.*]] = pc.matmul %[[X]], %[[W]] {pc.recompute}
// FULL-NEXT: pc.gelu_grad %[[DG]], %[[A1]] :
// FULL-NOT: pc.recompute
// FULL: return

// SEL-LABEL: func.func @mlp
// SEL-NOT: pc.recompute
// SEL: return

pc.param @l0.w : tensor<4x8xf32> = #pc.init<normal(std = 0.1)>
pc.param @l1.w : tensor<8x4xf32> = #pc.init<normal(std = 0.1)>
pc.param @head : tensor<4x4xf32> = #pc.init<normal(std = 0.1)>
func.func @mlp(%x: tensor<8x4xf32>) -> (tensor<f32> {pc.loss}) {
  %w0 = pc.get_param @l0.w : tensor<4x8xf32>
  %a0 = pc.matmul %x, %w0 : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %g0 = pc.gelu %a0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %w1 = pc.get_param @l1.w : tensor<8x4xf32>
  %h1 = pc.matmul %g0, %w1 : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %wh = pc.get_param @head : tensor<4x4xf32>
  %y = pc.matmul %h1, %wh : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %l = pc.reduce_mean %y {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An attention core: the scores' matmul, the mask and the softmax are made
// again from their inputs (the queries and the keys) once the gradient of
// the softmax's result exists, for the softmax's gradient to read. The
// user's pc.segment puts the whole graph in one segment, which holds the
// loss: full recompute copies nothing.

// SEL-LABEL: func.func @attn
// SEL: %[[Q:.*]] = pc.matmul %arg0
// SEL: %[[DP:.*]] = pc.matmul %{{.*}}, %arg2 {transpose_rhs}
// SEL-NEXT: %[[Q1:.*]] = pc.after %[[Q]], %[[DP]] {pc.recompute}
// SEL-NEXT: %[[K1:.*]] = pc.after %arg1, %[[DP]] {pc.recompute}
// SEL-NEXT: %[[S:.*]] = pc.matmul %[[Q1]], %[[K1]] {pc.recompute}
// SEL-NEXT: %[[M:.*]] = pc.causal_mask %[[S]] {pc.recompute}
// SEL-NEXT: %[[P:.*]] = pc.softmax %[[M]] {axis = -1 : i64, pc.recompute}
// SEL-NEXT: pc.softmax_grad %[[DP]], %[[P]]

// FULL-LABEL: func.func @attn
// FULL-NOT: pc.recompute
// FULL: return

pc.param @wq : tensor<8x8xf32> = #pc.init<normal(std = 0.1)>
func.func @attn(%q: tensor<2x4x8xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<f32> {pc.loss}) {
  %wq = pc.get_param @wq : tensor<8x8xf32>
  %q1 = pc.matmul %q, %wq {pc.segment = 0 : i64} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = pc.matmul %q1, %k : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m = pc.causal_mask %s : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = pc.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = pc.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = pc.reduce_sum %o {axes = array<i64: 0, 1, 2>} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// User segments: pc.segment puts the first matmul and the gelu in segment
// 0, the rest in 1 (an op without one takes its predecessor's). Segment 0
// is recomputed although the parameters' names show no layers.

// FULL-LABEL: func.func @segments
// FULL: %[[A:.*]] = pc.matmul %arg0, %{{.*}} {pc.segment = 0 : i64}
// FULL: pc.after %arg0
// FULL: pc.matmul %{{.*}}, %{{.*}} {pc.recompute}
// FULL-NOT: pc.segment
// FULL: pc.gelu_grad

pc.param @a : tensor<4x8xf32> = #pc.init<normal(std = 0.1)>
pc.param @b : tensor<8x4xf32> = #pc.init<normal(std = 0.1)>
func.func @segments(%x: tensor<8x4xf32>) -> (tensor<f32> {pc.loss}) {
  %wa = pc.get_param @a : tensor<4x8xf32>
  %a = pc.matmul %x, %wa {pc.segment = 0 : i64} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %g = pc.gelu %a : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %wb = pc.get_param @b : tensor<8x4xf32>
  %h = pc.matmul %g, %wb {pc.segment = 1 : i64} : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %t = pc.tanh %h : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %l = pc.reduce_mean %t {axes = array<i64: 0, 1>} : (tensor<8x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
