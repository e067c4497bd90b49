// RUN: pc-opt %s --pc-autodiff --pc-optimizer="zero=1" --pc-fuse --pc-sbp-propagate --pc-insert-boxing --pc-optimize-boxing --pc-lower-boxing --pc-optimize-boxing --pc-offload | FileCheck %s
// RUN: pc-opt %s --pc-autodiff --pc-optimizer="zero=3" --pc-fuse --pc-sbp-propagate --pc-insert-boxing --pc-optimize-boxing --pc-lower-boxing --pc-optimize-boxing --pc-offload="parameters=true" | FileCheck %s --check-prefix=PARAMS

// ZeRO-1 with the optimizer offloaded: the moments and the step counter
// are stored on the host, the update runs there on copies of the weight's
// and the gradient's shards (the gradient reduce-scattered on the device
// first), and the new shard goes back to the device for its all-gather.
// CHECK: pc.param @w : tensor<8x8xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 1.000000e-01)>{{$}}
// CHECK: pc.param @w.adam_m : {{.*}} {pc.host, pc.optimizer_state, trainable = false}
// CHECK: pc.param @w.adam_v : {{.*}} {pc.host, pc.optimizer_state, trainable = false}
// CHECK: pc.param @optimizer.step : {{.*}} {pc.host, pc.optimizer_state, trainable = false}
// CHECK-LABEL: func.func @f
// CHECK: %[[G:.*]] = pc.reduce_scatter
// CHECK-NOT: pc.host
// CHECK: pc.get_param @optimizer.step {pc.host}
// CHECK: %[[W:.*]] = pc.local_slice
// CHECK-DAG: %[[V:.*]] = pc.get_param @w.adam_v {pc.host}
// CHECK-DAG: %[[M:.*]] = pc.get_param @w.adam_m {pc.host}
// CHECK: %[[WH:.*]] = pc.copy %[[W]] {pc.host}
// CHECK: %[[GH:.*]] = pc.copy %[[G]] {pc.host}
// CHECK: %[[NEW:.*]], %[[NM:.*]], %[[NV:.*]] = pc.adam_update %[[WH]], %[[GH]], %[[M]], %[[V]], {{.*}} pc.host
// CHECK-NEXT: pc.set_param @w.adam_m, %[[NM]]
// CHECK-NEXT: pc.set_param @w.adam_v, %[[NV]]
// CHECK-NEXT: %[[ND:.*]] = pc.copy %[[NEW]] :
// CHECK-NEXT: %[[ALL:.*]] = pc.all_gather %[[ND]]
// CHECK-NEXT: pc.set_param @w, %[[ALL]]

// ZeRO-3 with the weights offloaded too: a read copies the shard to the
// device right before its gather (a gated read's pc.after stays on the
// host, beside the shard, so the copy waits for the gate); the update
// reads the shard where it is, and stores the new one there.
// PARAMS: pc.param @w : {{.*}} {pc.host}
// PARAMS-LABEL: func.func @f
// PARAMS: %[[S:.*]] = pc.get_param @w {pc.host}
// PARAMS-NEXT: %[[C:.*]] = pc.copy %[[S]] :
// PARAMS-NEXT: pc.all_gather %[[C]]
// PARAMS: %[[OLD:.*]] = pc.get_param @w {pc.host}
// PARAMS: %[[NEW:.*]], %{{.*}}, %{{.*}} = pc.adam_update %[[OLD]], {{.*}} pc.host
// PARAMS-NOT: pc.all_gather
// PARAMS: pc.set_param @w, %[[NEW]]

pc.mesh @m <["dp"=2]>
pc.param @w : tensor<8x8xf32> = #pc.init<normal(std = 1.000000e-01)>
func.func @f(%x: tensor<4x8xf32, #pc.sbp<@m, [S(0)]>>) -> (tensor<f32> {pc.loss}) {
  %w = pc.get_param @w : tensor<8x8xf32>
  %h = pc.matmul %x, %w : (tensor<4x8xf32, #pc.sbp<@m, [S(0)]>>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %p = pc.tanh %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = pc.reduce_mean %p {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
