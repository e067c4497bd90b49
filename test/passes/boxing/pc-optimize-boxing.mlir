// RUN: pc-opt %s --pc-optimize-boxing | FileCheck %s

pc.mesh @m <["x"=2]>

// A chain plans as one boxing.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[B:.*]] = pc.boxing %arg0 : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
// CHECK-NEXT: return %[[B]]
func.func @chain(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>> {
  %0 = pc.boxing %x : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.boxing %0 : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return %1 : tensor<8xf32, #pc.sbp<@m, [S(0)]>>
}

// A -> B -> A vanishes.
// CHECK-LABEL: func.func @round_trip
// CHECK-NEXT: return %arg0
func.func @round_trip(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>> {
  %0 = pc.boxing %x : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.boxing %0 : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return %1 : tensor<8xf32, #pc.sbp<@m, [S(0)]>>
}

// Duplicate boxings of one value to one layout merge.
// CHECK-LABEL: func.func @duplicates
// CHECK-NEXT: %[[B:.*]] = pc.boxing %arg0
// CHECK-NEXT: return %[[B]], %[[B]]
func.func @duplicates(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) -> (tensor<8xf32, #pc.sbp<@m, [B]>>, tensor<8xf32, #pc.sbp<@m, [B]>>) {
  %0 = pc.boxing %x : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.boxing %x : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return %0, %1 : tensor<8xf32, #pc.sbp<@m, [B]>>, tensor<8xf32, #pc.sbp<@m, [B]>>
}

// An all-reduce followed by a slice is a reduce-scatter.
// CHECK-LABEL: func.func @fuse
// CHECK-NEXT: %[[R:.*]] = pc.reduce_scatter %arg0 {axes = array<i64: 0>, dim = 0 : i64, mesh = @m, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
// CHECK-NEXT: return %[[R]]
func.func @fuse(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>> {
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.local_slice %0 {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return %1 : tensor<8xf32, #pc.sbp<@m, [S(0)]>>
}

// An all-reduce whose result has other uses stays.
// CHECK-LABEL: func.func @no_fuse
// CHECK: pc.all_reduce
// CHECK: pc.local_slice
func.func @no_fuse(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) -> (tensor<8xf32, #pc.sbp<@m, [S(0)]>>, tensor<8xf32, #pc.sbp<@m, [B]>>) {
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  %1 = pc.local_slice %0 {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return %1, %0 : tensor<8xf32, #pc.sbp<@m, [S(0)]>>, tensor<8xf32, #pc.sbp<@m, [B]>>
}
