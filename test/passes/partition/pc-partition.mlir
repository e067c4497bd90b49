// RUN: pc-opt %s --split-input-file --pc-partition | FileCheck %s

// Even layouts: one program for all ranks, with local shapes.
pc.mesh @m <["dp"=2, "tp"=2]>
pc.param @w : tensor<16x32xf32, #pc.sbp<@m, [B, S(1)]>> = #pc.init<zeros>
// CHECK-LABEL: func.func @even.part0
// CHECK-SAME: (%arg0: tensor<4x16xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x16xf32, #pc.sbp<@m, [S(0), B]>>})
// CHECK-SAME: -> (tensor<4x32xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x32xf32, #pc.sbp<@m, [S(0), B]>>})
// CHECK-SAME: attributes {pc.graph = "even", pc.ranks = array<i64: 0, 1, 2, 3>}
// CHECK: %[[W:.*]] = pc.get_param @w : tensor<16x16xf32>
// CHECK: %[[Y:.*]] = pc.matmul %arg0, %[[W]] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[G:.*]] = pc.all_gather %[[Y]] {axes = array<i64: 1>, dim = 1 : i64, mesh = @m} : (tensor<4x16xf32>) -> tensor<4x32xf32>
// CHECK: return %[[G]]
// CHECK-NOT: func.func @even
func.func @even(%x: tensor<8x16xf32, #pc.sbp<@m, [S(0), B]>>) -> tensor<8x32xf32, #pc.sbp<@m, [S(0), B]>> {
  %w = pc.get_param @w : tensor<16x32xf32, #pc.sbp<@m, [B, S(1)]>>
  %y = pc.matmul %x, %w : (tensor<8x16xf32, #pc.sbp<@m, [S(0), B]>>, tensor<16x32xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<8x32xf32, #pc.sbp<@m, [S(0), S(1)]>>
  %g = pc.all_gather %y {mesh = @m, axes = array<i64: 1>, dim = 1 : i64} : (tensor<8x32xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x32xf32, #pc.sbp<@m, [S(0), B]>>
  return %g : tensor<8x32xf32, #pc.sbp<@m, [S(0), B]>>
}

// -----

// 10 rows over 4: ranks 0-1 hold 3 rows and ranks 2-3 hold 2, so two
// programs. Both gather the whole 10 rows, whose extents over the group
// (3, 3, 2, 2) follow from it.
pc.mesh @m <["x"=4]>
// CHECK-LABEL: func.func @uneven.part0
// CHECK-SAME: (%arg0: tensor<3x6xf32>
// CHECK-SAME: pc.ranks = array<i64: 0, 1>
// CHECK: pc.exp %arg0 : (tensor<3x6xf32>) -> tensor<3x6xf32>
// CHECK: pc.all_gather %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @m} : (tensor<3x6xf32>) -> tensor<10x6xf32>
// CHECK-LABEL: func.func @uneven.part1
// CHECK-SAME: (%arg0: tensor<2x6xf32>
// CHECK-SAME: pc.ranks = array<i64: 2, 3>
// CHECK: pc.all_gather %{{.*}} : (tensor<2x6xf32>) -> tensor<10x6xf32>
func.func @uneven(%x: tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32, #pc.sbp<@m, [B]>> {
  %e = pc.exp %x : (tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>
  %g = pc.all_gather %e {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32, #pc.sbp<@m, [B]>>
  return %g : tensor<10x6xf32, #pc.sbp<@m, [B]>>
}

// -----

// A mean over a split dim sums the piece and divides by the logical count;
// a slice of a split dim takes the whole local piece.
pc.mesh @m <["x"=2]>
// CHECK-LABEL: func.func @mean.part0
// CHECK: %[[S:.*]] = pc.reduce_sum %arg0 {axes = array<i64: 0>} : (tensor<4x6xf32>) -> tensor<6xf32>
// CHECK: %[[C:.*]] = pc.constant dense<1.250000e-01> : tensor<f32>
// CHECK: pc.mul %[[S]], %[[C]] : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
// CHECK: pc.slice %arg0 {limit = array<i64: 4, 5>, start = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<4x4xf32>
func.func @mean(%x: tensor<8x6xf32, #pc.sbp<@m, [S(0)]>>) -> (tensor<6xf32, #pc.sbp<@m, [P]>>, tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) {
  %0 = pc.reduce_mean %x {axes = array<i64: 0>} : (tensor<8x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<6xf32, #pc.sbp<@m, [P]>>
  %1 = pc.slice %x {start = array<i64: 0, 1>, limit = array<i64: 8, 5>} : (tensor<8x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>
  return %0, %1 : tensor<6xf32, #pc.sbp<@m, [P]>>, tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>
}

// -----

// Vocab-parallel embedding: ids shift into this device's rows, which give
// zeros for the others' ids.
pc.mesh @m <["x"=2]>
// CHECK-LABEL: func.func @vocab.part0
// CHECK: %[[O:.*]] = pc.piece_offset {axes = array<i64: 0>, mesh = @m, sizes = array<i64: 50, 50>} : tensor<i64>
// CHECK: %[[I:.*]] = pc.sub %arg0, %[[O]] : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
// CHECK: pc.embedding %[[I]], %arg1 {zero_out_of_range} : (tensor<4xi64>, tensor<50x8xf32>) -> tensor<4x8xf32>
func.func @vocab(%ids: tensor<4xi64, #pc.sbp<@m, [B]>>, %t: tensor<100x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<4x8xf32, #pc.sbp<@m, [P]>> {
  %0 = pc.embedding %ids, %t : (tensor<4xi64, #pc.sbp<@m, [B]>>, tensor<100x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<4x8xf32, #pc.sbp<@m, [P]>>
  return %0 : tensor<4x8xf32, #pc.sbp<@m, [P]>>
}

// -----

// A constant in a split layout: the whole value, then a local slice.
pc.mesh @m <["x"=2]>
// CHECK-LABEL: func.func @constant.part0
// CHECK: %[[C:.*]] = pc.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: pc.local_slice %[[C]] {axes = array<i64: 0>, dim = 0 : i64, mesh = @m} : (tensor<4xf32>) -> tensor<2xf32>
func.func @constant() -> tensor<4xf32, #pc.sbp<@m, [S(0)]>> {
  %0 = pc.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32, #pc.sbp<@m, [S(0)]>>
  return %0 : tensor<4xf32, #pc.sbp<@m, [S(0)]>>
}

// -----

// Pipeline stages on different ranks: each stage runs its own program; the
// transfer becomes a send on the first and a receive on the second.
pc.mesh @s0 <["x"=2]>
pc.mesh @s1 <["x"=2]> ranks [2, 3]
// CHECK-LABEL: func.func @stages.part0
// CHECK-SAME: pc.ranks = array<i64: 0, 1>
// CHECK: pc.send %{{.*}} {from = tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>, to = tensor<8x8xf32, #pc.sbp<@s1, [B]>>} : tensor<4x8xf32>
// CHECK-LABEL: func.func @stages.part1
// CHECK-SAME: pc.ranks = array<i64: 2, 3>
// CHECK: %[[R:.*]] = pc.recv {from = tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>, to = tensor<8x8xf32, #pc.sbp<@s1, [B]>>} : tensor<8x8xf32>
// CHECK: pc.tanh %[[R]]
func.func @stages(%x: tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@s1, [B]>> {
  %a = pc.relu %x : (tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>
  %b = pc.transfer %a : (tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@s1, [B]>>
  %c = pc.tanh %b : (tensor<8x8xf32, #pc.sbp<@s1, [B]>>) -> tensor<8x8xf32, #pc.sbp<@s1, [B]>>
  return %c : tensor<8x8xf32, #pc.sbp<@s1, [B]>>
}

// -----

// A transfer within one mesh (the boxing planner's redistribution, as for an
// axis swap) is one collective over the whole mesh, not sends and receives.
pc.mesh @m <["a"=2, "b"=2]>
// CHECK-LABEL: func.func @swap.part0
// CHECK-SAME: pc.ranks = array<i64: 0, 1, 2, 3>
// CHECK: %[[R:.*]] = pc.redistribute %arg0 {from = tensor<8x12xf32, #pc.sbp<@m, [S(0), S(1)]>>, to = tensor<8x12xf32, #pc.sbp<@m, [S(1), S(0)]>>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK-NOT: pc.send
// CHECK: return %[[R]]
func.func @swap(%x: tensor<8x12xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x12xf32, #pc.sbp<@m, [S(1), S(0)]>> {
  %0 = pc.transfer %x : (tensor<8x12xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x12xf32, #pc.sbp<@m, [S(1), S(0)]>>
  return %0 : tensor<8x12xf32, #pc.sbp<@m, [S(1), S(0)]>>
}

// -----

// Vocab-parallel cross-entropy: a max and two sums over the class split.
pc.mesh @m <["x"=2]>
// CHECK-LABEL: func.func @vocab_loss.part0
// CHECK-SAME: (%[[L:.*]]: tensor<4x50xf32> {{.*}}, %[[Y:.*]]: tensor<4xi64>
// CHECK: %[[M:.*]] = pc.reduce_max %[[L]] {axes = array<i64: 1>, keepdim} : (tensor<4x50xf32>) -> tensor<4x1xf32>
// CHECK: %[[GM:.*]] = pc.all_reduce %[[M]] {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<max>} : (tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK: %[[Z:.*]] = pc.sub %[[L]], %[[GM]] : (tensor<4x50xf32>, tensor<4x1xf32>) -> tensor<4x50xf32>
// CHECK: %[[E:.*]] = pc.exp %[[Z]]
// CHECK: %[[S:.*]] = pc.reduce_sum %[[E]] {axes = array<i64: 1>} : (tensor<4x50xf32>) -> tensor<4xf32>
// CHECK: %[[GS:.*]] = pc.all_reduce %[[S]] {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<sum>}
// CHECK: %[[LSE:.*]] = pc.log %[[GS]]
// CHECK: %[[O:.*]] = pc.piece_offset {axes = array<i64: 0>, mesh = @m, sizes = array<i64: 50, 50>} : tensor<i64>
// CHECK: %[[YS:.*]] = pc.sub %[[Y]], %[[O]]
// CHECK: %[[P:.*]] = pc.pick_labels %[[Z]], %[[YS]] : (tensor<4x50xf32>, tensor<4xi64>) -> tensor<4xf32>
// CHECK: %[[GP:.*]] = pc.all_reduce %[[P]] {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<sum>}
// CHECK: %[[R:.*]] = pc.sub %[[LSE]], %[[GP]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[R]]
func.func @vocab_loss(%l: tensor<4x100xf32, #pc.sbp<@m, [S(1)]>>, %y: tensor<4xi64, #pc.sbp<@m, [B]>>) -> tensor<4xf32, #pc.sbp<@m, [B]>> {
  %0 = pc.cross_entropy %l, %y : (tensor<4x100xf32, #pc.sbp<@m, [S(1)]>>, tensor<4xi64, #pc.sbp<@m, [B]>>) -> tensor<4xf32, #pc.sbp<@m, [B]>>
  return %0 : tensor<4xf32, #pc.sbp<@m, [B]>>
}

// -----

// A pc.name travels with its value into the per-device program.
pc.mesh @m <["dp"=2]>
// CHECK-LABEL: func.func @named.part0
// CHECK-SAME: %arg0: tensor<2x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4x4xf32, #pc.sbp<@m, [S(0)]>>, pc.name = "x"}
// CHECK-SAME: -> (tensor<2x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4x4xf32, #pc.sbp<@m, [S(0)]>>, pc.name = "y"})
func.func @named(%x: tensor<4x4xf32, #pc.sbp<@m, [S(0)]>> {pc.name = "x"})
    -> (tensor<4x4xf32, #pc.sbp<@m, [S(0)]>> {pc.name = "y"}) {
  %y = pc.relu %x : (tensor<4x4xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<4x4xf32, #pc.sbp<@m, [S(0)]>>
  return %y : tensor<4x4xf32, #pc.sbp<@m, [S(0)]>>
}

// -----

// Steps over axes of size 1 move nothing (each layout is the whole value
// there): they go, so the runtime makes no hop to a comm stream. The step
// over the axis of size 2 stays.
pc.mesh @m <["dp"=2, "tp"=1]>
// CHECK-LABEL: func.func @unit_axis.part0
// CHECK-NEXT: %[[E:.*]] = pc.exp %arg0 : (tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: %[[G:.*]] = pc.all_gather %[[E]] {axes = array<i64: 0>, dim = 0 : i64, mesh = @m} : (tensor<4x6xf32>) -> tensor<8x6xf32>
// CHECK-NEXT: return %[[E]], %[[G]]
func.func @unit_axis(%x: tensor<8x6xf32, #pc.sbp<@m, [S(0), S(1)]>>)
    -> (tensor<8x6xf32, #pc.sbp<@m, [S(0), B]>>, tensor<8x6xf32, #pc.sbp<@m, [B, B]>>) {
  %e = pc.exp %x : (tensor<8x6xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x6xf32, #pc.sbp<@m, [S(0), S(1)]>>
  %a = pc.all_gather %e {mesh = @m, axes = array<i64: 1>, dim = 1 : i64} : (tensor<8x6xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x6xf32, #pc.sbp<@m, [S(0), B]>>
  %p = pc.local_partial %a {mesh = @m, axes = array<i64: 1>, reduce = #pc.reduction<sum>} : (tensor<8x6xf32, #pc.sbp<@m, [S(0), B]>>) -> tensor<8x6xf32, #pc.sbp<@m, [S(0), P]>>
  %r = pc.all_reduce %p {mesh = @m, axes = array<i64: 1>, reduce = #pc.reduction<sum>} : (tensor<8x6xf32, #pc.sbp<@m, [S(0), P]>>) -> tensor<8x6xf32, #pc.sbp<@m, [S(0), B]>>
  %g = pc.all_gather %r {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<8x6xf32, #pc.sbp<@m, [S(0), B]>>) -> tensor<8x6xf32, #pc.sbp<@m, [B, B]>>
  return %a, %g : tensor<8x6xf32, #pc.sbp<@m, [S(0), B]>>, tensor<8x6xf32, #pc.sbp<@m, [B, B]>>
}
