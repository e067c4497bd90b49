// RUN: pc-opt %s -split-input-file --pc-pipeline-split="micro-batches=2" --pc-micro-batch="phase=shrink" --pc-micro-batch | FileCheck %s

// Micro-batch k is rows k, k + 2, ... of every input: grouped once as
// [n/2, 2, ...], sliced at k. A result that merged the batch with another
// dim ([4, 3] -> [12]) comes back in batch order, three rows per element;
// a result without the batch is the first micro-batch's; a mean of the
// batch is averaged.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[C:.*]]: tensor<f32>)
// CHECK: %[[G:.*]] = pc.reshape %[[X]] {{.*}}#pc.action<F, 0, 0>{{.*}} -> tensor<2x2x3xf32>
// CHECK: pc.slice %[[G]] {limit = array<i64: 2, 1, 3>, {{.*}}start = array<i64: 0, 0, 0>}
// CHECK: pc.slice %[[G]] {limit = array<i64: 2, 2, 3>, {{.*}}start = array<i64: 0, 1, 0>}
// CHECK: %[[A:.*]] = pc.reshape %{{.*}} : (tensor<6xf32>) -> tensor<2x1x3xf32>
// CHECK: %[[B:.*]] = pc.reshape %{{.*}} : (tensor<6xf32>) -> tensor<2x1x3xf32>
// CHECK: %[[J:.*]] = pc.concat %[[A]], %[[B]] {axis = 1 : i64{{.*}}} : (tensor<2x1x3xf32>, tensor<2x1x3xf32>) -> tensor<2x2x3xf32>
// CHECK: %[[R:.*]] = pc.reshape %[[J]] {{.*}} : (tensor<2x2x3xf32>) -> tensor<12xf32>
// CHECK: %[[S:.*]] = pc.add %{{.*}}, %{{.*}} {pc.action = #pc.action<F, 0, 1>
// CHECK: %[[H:.*]] = pc.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[MEAN:.*]] = pc.mul %[[S]], %[[H]]
// CHECK: return %[[R]], %[[MEAN]], %{{.*}} : tensor<12xf32>, tensor<f32>, tensor<f32>
func.func @f(%x: tensor<4x3xf32>, %c: tensor<f32>) -> (tensor<12xf32>, tensor<f32>, tensor<f32>) {
  %t = pc.tanh %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = pc.reshape %t : (tensor<4x3xf32>) -> tensor<12xf32>
  %m = pc.reduce_mean %t {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  %e = pc.exp %c : (tensor<f32>) -> tensor<f32>
  return %r, %m, %e : tensor<12xf32>, tensor<f32>, tensor<f32>
}
