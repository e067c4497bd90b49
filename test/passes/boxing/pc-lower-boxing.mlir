// RUN: pc-opt %s --split-input-file --pc-lower-boxing | FileCheck %s

// Every transition of the boxing table, 1-D and nd, including the three
// cases upstream MLIR gets wrong.

pc.mesh @m <["x"=4]>
// CHECK-LABEL: func.func @one_dimensional
func.func @one_dimensional(%p: tensor<8x8xf32, #pc.sbp<@m, [P]>>,
                           %pmax: tensor<8x8xf32, #pc.sbp<@m, [P(max)]>>,
                           %s0: tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>,
                           %b: tensor<8x8xf32, #pc.sbp<@m, [B]>>) {
  // P -> B: all-reduce.
  // CHECK: pc.all_reduce %{{.*}} {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<sum>} : (tensor<8x8xf32, #pc.sbp<@m, [P]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  %0 = pc.boxing %p : (tensor<8x8xf32, #pc.sbp<@m, [P]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  // P -> S: reduce-scatter, not an all-reduce and a slice.
  // CHECK-NEXT: pc.reduce_scatter %{{.*}} {axes = array<i64: 0>, dim = 1 : i64, mesh = @m, reduce = #pc.reduction<sum>} : {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  %1 = pc.boxing %p : (tensor<8x8xf32, #pc.sbp<@m, [P]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  // S -> B: all-gather.
  // CHECK-NEXT: pc.all_gather %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @m} : {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  %2 = pc.boxing %s0 : (tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  // S(i) -> S(j): all-to-all.
  // CHECK-NEXT: pc.all_to_all %{{.*}} {axes = array<i64: 0>, dst_dim = 1 : i64, mesh = @m, src_dim = 0 : i64} : {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  %3 = pc.boxing %s0 : (tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  // B -> S: a local slice.
  // CHECK-NEXT: pc.local_slice %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @m} : {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>
  %4 = pc.boxing %b : (tensor<8x8xf32, #pc.sbp<@m, [B]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>
  // B -> P: the value on one rank, zeros elsewhere.
  // CHECK-NEXT: pc.local_partial %{{.*}} {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<sum>} : {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [P]>>
  %5 = pc.boxing %b : (tensor<8x8xf32, #pc.sbp<@m, [B]>>) -> tensor<8x8xf32, #pc.sbp<@m, [P]>>
  // P(max) -> B: an all-reduce with max.
  // CHECK-NEXT: pc.all_reduce %{{.*}} {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<max>}
  %6 = pc.boxing %pmax : (tensor<8x8xf32, #pc.sbp<@m, [P(max)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B]>>
  // CHECK-NOT: pc.boxing
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
// CHECK-LABEL: func.func @nested_split_to_broadcast
// Upstream segfaults here. One all-gather over the flattened 2x2 group.
// CHECK: pc.all_gather %{{.*}} {axes = array<i64: 0, 1>, dim = 0 : i64, mesh = @m} : (tensor<8x8xf32, #pc.sbp<@m, [S(0), S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B, B]>>
// CHECK-NEXT: return
func.func @nested_split_to_broadcast(%x: tensor<8x8xf32, #pc.sbp<@m, [S(0), S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B, B]>> {
  %0 = pc.boxing %x : (tensor<8x8xf32, #pc.sbp<@m, [S(0), S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [B, B]>>
  return %0 : tensor<8x8xf32, #pc.sbp<@m, [B, B]>>
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
// CHECK-LABEL: func.func @axis_swap
// Upstream emits one all-to-all with the wrong local shape. Chains of 1-D
// collectives move up to 1.75x what the off-diagonal devices lack; one
// transfer within the mesh (a redistribution) moves exactly that.
// CHECK: pc.transfer %{{.*}} : (tensor<8x8xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1), S(0)]>>
// CHECK-NEXT: return
func.func @axis_swap(%x: tensor<8x8xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1), S(0)]>> {
  %0 = pc.boxing %x : (tensor<8x8xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1), S(0)]>>
  return %0 : tensor<8x8xf32, #pc.sbp<@m, [S(1), S(0)]>>
}

// -----

pc.mesh @m <["x"=4]>
// CHECK-LABEL: func.func @ten_rows_over_four
// Upstream rejects uneven splits.
// CHECK: pc.all_gather %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @m} : (tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32, #pc.sbp<@m, [B]>>
func.func @ten_rows_over_four(%x: tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32, #pc.sbp<@m, [B]>> {
  %0 = pc.boxing %x : (tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32, #pc.sbp<@m, [B]>>
  return %0 : tensor<10x6xf32, #pc.sbp<@m, [B]>>
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
// CHECK-LABEL: func.func @partial_split_to_broadcast
// [P, S(0)] -> [B, B]: reduce the half over axis 0, then gather over axis 1.
// CHECK: pc.all_reduce %{{.*}} {axes = array<i64: 0>, mesh = @m, reduce = #pc.reduction<sum>} : {{.*}} -> tensor<1024x1024xf32, #pc.sbp<@m, [B, S(0)]>>
// CHECK-NEXT: pc.all_gather %{{.*}} {axes = array<i64: 1>, dim = 0 : i64, mesh = @m} : {{.*}} -> tensor<1024x1024xf32, #pc.sbp<@m, [B, B]>>
func.func @partial_split_to_broadcast(%x: tensor<1024x1024xf32, #pc.sbp<@m, [P, S(0)]>>) -> tensor<1024x1024xf32, #pc.sbp<@m, [B, B]>> {
  %0 = pc.boxing %x : (tensor<1024x1024xf32, #pc.sbp<@m, [P, S(0)]>>) -> tensor<1024x1024xf32, #pc.sbp<@m, [B, B]>>
  return %0 : tensor<1024x1024xf32, #pc.sbp<@m, [B, B]>>
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
// CHECK-LABEL: func.func @partials_to_split_broadcast
// [P, P] -> [S(0), B]: two collectives, starting with a reduce-scatter.
// CHECK: pc.reduce_scatter
// CHECK-NEXT: pc.{{all_gather|all_reduce}}
// CHECK-SAME: -> tensor<1024x1024xf32, #pc.sbp<@m, [S(0), B]>>
// CHECK-NEXT: return
func.func @partials_to_split_broadcast(%x: tensor<1024x1024xf32, #pc.sbp<@m, [P, P]>>) -> tensor<1024x1024xf32, #pc.sbp<@m, [S(0), B]>> {
  %0 = pc.boxing %x : (tensor<1024x1024xf32, #pc.sbp<@m, [P, P]>>) -> tensor<1024x1024xf32, #pc.sbp<@m, [S(0), B]>>
  return %0 : tensor<1024x1024xf32, #pc.sbp<@m, [S(0), B]>>
}

// -----

pc.mesh @m <["a"=2, "b"=2, "c"=2]>
// CHECK-LABEL: func.func @three_axes
// CHECK: pc.all_reduce %{{.*}} {axes = array<i64: 0, 1, 2>, mesh = @m, reduce = #pc.reduction<sum>}
func.func @three_axes(%x: tensor<64x64xf32, #pc.sbp<@m, [P, P, P]>>) -> tensor<64x64xf32, #pc.sbp<@m, [B, B, B]>> {
  %0 = pc.boxing %x : (tensor<64x64xf32, #pc.sbp<@m, [P, P, P]>>) -> tensor<64x64xf32, #pc.sbp<@m, [B, B, B]>>
  return %0 : tensor<64x64xf32, #pc.sbp<@m, [B, B, B]>>
}

// -----

pc.mesh @stage0 <["x"=2]>
pc.mesh @stage1 <["x"=2]> ranks [2, 3]
// CHECK-LABEL: func.func @between_meshes
// Partials are reduced on the source; one transfer moves the pieces.
// CHECK: pc.reduce_scatter %{{.*}} {axes = array<i64: 0>, dim = {{[01]}} : i64, mesh = @stage0
// CHECK-NEXT: pc.transfer %{{.*}} : (tensor<8x8xf32, #pc.sbp<@stage0, [S({{[01]}})]>>) -> tensor<8x8xf32, #pc.sbp<@stage1, [S(0)]>>
func.func @between_meshes(%x: tensor<8x8xf32, #pc.sbp<@stage0, [P]>>) -> tensor<8x8xf32, #pc.sbp<@stage1, [S(0)]>> {
  %0 = pc.boxing %x : (tensor<8x8xf32, #pc.sbp<@stage0, [P]>>) -> tensor<8x8xf32, #pc.sbp<@stage1, [S(0)]>>
  return %0 : tensor<8x8xf32, #pc.sbp<@stage1, [S(0)]>>
}
