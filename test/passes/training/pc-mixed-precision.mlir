// RUN: pc-opt %s --pc-mixed-precision | FileCheck %s
// RUN: pc-opt %s --pc-mixed-precision="dtype=f16 f32-ops=none" | FileCheck %s --check-prefix=NONE
// RUN: pc-opt %s --pc-mixed-precision="dtype=f16" --pc-autodiff --pc-optimizer="kind=sgd" | FileCheck %s --check-prefix=SCALE
// RUN: pc-opt %s --pc-mixed-precision="dtype=f16 loss-scale=128 inject-overflow=true" --pc-autodiff --pc-optimizer="kind=sgd" | FileCheck %s --check-prefix=STATIC

// bf16: the matmul computes on casts of its operands (the input's layout
// kept), the transposes keep their operand's type, the softmax and the
// mean stay f32, each value is cast once per type, and the graph's results
// keep their declared types. No loss scaling for bf16.
// CHECK-NOT: loss_scale
// CHECK-LABEL: func.func @f
// CHECK-NOT: pc.loss_scaling
// CHECK: %[[W:.*]] = pc.get_param @w : tensor<8x8xf32>
// CHECK: %[[G:.*]] = pc.get_param @g : tensor<8xf32>
// CHECK: %[[X:.*]] = pc.cast %arg0 : (tensor<4x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<4x8xbf16, #pc.sbp<@m, [S(0)]>>
// CHECK: %[[WH:.*]] = pc.cast %[[W]] : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK: %[[H:.*]] = pc.matmul %[[X]], %[[WH]] : {{.*}} -> tensor<4x8xbf16>
// CHECK: pc.transpose %[[H]] {{.*}} -> tensor<8x4xbf16>
// CHECK: %[[U:.*]] = pc.transpose {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[UF:.*]] = pc.cast %[[U]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: %[[P:.*]] = pc.softmax %[[UF]] {{.*}} -> tensor<4x8xf32>
// CHECK: %[[PH:.*]] = pc.cast %[[P]] : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[GH:.*]] = pc.cast %[[G]]
// CHECK: %[[Q:.*]] = pc.mul %[[PH]], %[[GH]] : {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[QF:.*]] = pc.cast %[[Q]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: %[[L:.*]] = pc.reduce_mean %[[QF]] {{.*}} -> tensor<f32>
// CHECK: return %[[L]], %[[QF]] : tensor<f32>, tensor<4x8xf32>

// f32-ops=none: every op computes in f16, the mean too.
// NONE: pc.softmax {{.*}} -> tensor<4x8xf16>
// NONE: pc.reduce_mean {{.*}} -> tensor<f16>

// f16: dynamic loss scaling. The backward pass starts from the scale; the
// optimizer checks the gradients with one sum of g * 0, divides them by
// the scale, keeps every stored value only when the sum is finite, and
// returns the scale and whether the step was skipped.
// SCALE: pc.param @loss_scale : tensor<f32, #pc.sbp<@m, [B]>> = #pc.init<constant(value = 6.553600e+04)> {pc.optimizer_state, trainable = false}
// SCALE-NEXT: pc.param @loss_scale.clean_steps : tensor<f32, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// SCALE: {pc.name = "loss_scale"}, tensor<f32, #pc.sbp<@m, [B]>> {pc.name = "skipped"}) attributes {pc.loss_scaling = {backoff = 5.000000e-01 : f64, clean_steps = @loss_scale.clean_steps, growth = 2.000000e+00 : f64, interval = 2000 : i64, scale = @loss_scale}}
// SCALE: %[[SEED:.*]] = pc.get_param @loss_scale
// SCALE-NEXT: pc.reshape %[[SEED]]
// SCALE: %[[S:.*]] = pc.get_param @loss_scale
// SCALE: %[[Z:.*]] = pc.mul %[[G:.*]], %{{.*}} : (tensor<8x8xf32, #pc.sbp<@m, [B]>>, tensor<f32, #pc.sbp<@m, [B]>>) -> tensor<8x8xf32>
// SCALE-NEXT: pc.reduce_sum %[[Z]]
// SCALE: %[[SUM:.*]] = pc.add
// SCALE-NEXT: %[[BAD:.*]] = pc.to_sbp %[[SUM]]
// SCALE-NEXT: %[[C:.*]] = pc.compare %[[BAD]], %[[BAD]] {predicate = #pc.comparison<eq>}
// SCALE-NEXT: %[[OK:.*]] = pc.to_sbp %[[C]]
// SCALE-NEXT: pc.constant dense<1.000000e+00>
// SCALE-NEXT: %[[SK:.*]] = pc.sub
// SCALE-NEXT: %[[SKIPPED:.*]] = pc.to_sbp %[[SK]]
// SCALE-NEXT: pc.constant dense<1.000000e+00>
// SCALE-NEXT: %[[D:.*]] = pc.div %{{.*}}, %[[S]]
// SCALE-NEXT: %[[INV:.*]] = pc.to_sbp %[[D]]
// SCALE-NEXT: pc.mul %[[G]], %[[INV]] : (tensor<8x8xf32, #pc.sbp<@m, [B]>>, tensor<f32, #pc.sbp<@m, [B]>>) -> tensor<8x8xf32>
// SCALE: pc.sub %{{.*}}, %{{.*}} : (tensor<8x8xf32, #pc.sbp<@m, [B]>>, tensor<8x8xf32>)
// SCALE-NEXT: %[[OLD:.*]] = pc.get_param @w
// SCALE-NEXT: %[[KEEP:.*]] = pc.select %[[OK]], %{{.*}}, %[[OLD]]
// SCALE-NEXT: pc.set_param @w, %[[KEEP]]
// SCALE: pc.select %[[OK]]
// SCALE-NEXT: pc.set_param @g
// SCALE: %[[CLEAN:.*]] = pc.add
// SCALE: %[[GROW:.*]] = pc.compare %[[CLEAN]], %{{.*}} {predicate = #pc.comparison<ge>}
// SCALE: %[[NEXT:.*]] = pc.mul %[[S]], %{{.*}}
// SCALE-NEXT: pc.set_param @loss_scale, %[[NEXT]]
// SCALE: pc.set_param @loss_scale.clean_steps
// SCALE: return %{{.*}}, %{{.*}}, %[[S]], %[[SKIPPED]]

// A static scale: no counter and no update of the scale, but overflowing
// steps are still skipped. inject-overflow adds the input that multiplies
// the seed.
// STATIC: pc.param @loss_scale : {{.*}} = #pc.init<constant(value = 1.280000e+02)>
// STATIC-NOT: clean_steps
// STATIC: func.func @f(%arg0: {{.*}}, %[[INJ:.*]]: tensor<f32> {pc.name = "loss_scale.inject"}, %{{.*}}: {{.*}} {pc.name = "lr"})
// STATIC: %[[S0:.*]] = pc.get_param @loss_scale
// STATIC-NEXT: pc.mul %[[S0]], %[[INJ]]
// STATIC: pc.select
// STATIC-NOT: pc.set_param @loss_scale

pc.mesh @m <["dp"=2]>
pc.param @w : tensor<8x8xf32> = #pc.init<normal(std = 1.000000e-01)>
pc.param @g : tensor<8xf32> = #pc.init<ones>
func.func @f(%x: tensor<4x8xf32, #pc.sbp<@m, [S(0)]>>) -> (tensor<f32> {pc.loss}, tensor<4x8xf32> {pc.name = "y"}) {
  %w = pc.get_param @w : tensor<8x8xf32>
  %g = pc.get_param @g : tensor<8xf32>
  %h = pc.matmul %x, %w : (tensor<4x8xf32, #pc.sbp<@m, [S(0)]>>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %t = pc.transpose %h {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %u = pc.transpose %t {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %p = pc.softmax %u {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = pc.mul %p, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = pc.reduce_mean %q {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %l, %q : tensor<f32>, tensor<4x8xf32>
}
