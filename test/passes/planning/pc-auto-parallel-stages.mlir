// RUN: pc-opt %s "--pc-pipeline-split=stages=2 replicate-params=false" --pc-autodiff "--pc-auto-parallel=report=true" | FileCheck %s
// RUN: pc-opt %s "--pc-pipeline-split=stages=2 micro-batches=2 replicate-params=false" --pc-micro-batch=phase=shrink --pc-autodiff --pc-micro-batch=phase=unroll --pc-auto-parallel --pc-optimizer --pc-distribute -o /dev/null
// RUN: pc-opt %s "--pc-pipeline-split=stages=2" --pc-autodiff --pc-auto-parallel | FileCheck %s --check-prefix=REPLICATED

// Auto-parallel across pipeline stages: each op is planned on its stage's
// mesh and each parameter on the mesh of its first read; a value that
// crosses stages moves by a pc.to_sbp onto the consumer's mesh, in the
// layout the consumer's signature reads, once per layout (the forward
// activation for GELU and for GELU's gradient, then its gradient back).
// CHECK: pc-auto-parallel: {{[0-9]+}} nodes {{.*}} solved exactly
// CHECK-DAG: pc.param @w1 : tensor<64x512xf32, #pc.sbp<@m_stage0, [S(1)]>>
// CHECK-DAG: pc.param @w2 : tensor<512x64xf32, #pc.sbp<@m_stage1, [B]>>
// CHECK: %[[H:.*]] = pc.matmul {{.*}} -> tensor<16x512xf32, #pc.sbp<@m_stage0, [S(1)]>>
// CHECK-NEXT: pc.to_sbp %[[H]] : {{.*}} -> tensor<16x512xf32, #pc.sbp<@m_stage1, [B]>>
// CHECK-NOT: pc.to_sbp %[[H]] : {{.*}} -> tensor<16x512xf32, #pc.sbp<@m_stage1, [B]>>
// CHECK: pc.to_sbp %[[H]] : {{.*}} -> tensor<16x512xf32, #pc.sbp<@m_stage1, [S(0)]>>
// CHECK: pc.to_sbp {{.*}} -> tensor<16x512xf32, #pc.sbp<@m_stage0, [S(1)]>>

// Parameters that pc-pipeline-split replicates (its default) stay so: they
// are annotations, and so constraints.
// REPLICATED-DAG: pc.param @w1 : tensor<64x512xf32, #pc.sbp<@m_stage0, [B]>>
// REPLICATED-DAG: pc.param @w2 : tensor<512x64xf32, #pc.sbp<@m_stage1, [B]>>
pc.mesh @m <["x"=2]>
pc.param @w1 : tensor<64x512xf32> = #pc.init<normal(std = 0.02)>
pc.param @w2 : tensor<512x64xf32> = #pc.init<normal(std = 0.02)>
func.func @mlp(%x: tensor<16x64xf32>, %labels: tensor<16xi64>) -> tensor<f32> {
  %w1 = pc.get_param @w1 : tensor<64x512xf32>
  %w2 = pc.get_param @w2 : tensor<512x64xf32>
  %h = pc.matmul %x, %w1 : (tensor<16x64xf32>, tensor<64x512xf32>) -> tensor<16x512xf32>
  %a = pc.gelu %h : (tensor<16x512xf32>) -> tensor<16x512xf32>
  %y = pc.matmul %a, %w2 : (tensor<16x512xf32>, tensor<512x64xf32>) -> tensor<16x64xf32>
  %ce = pc.cross_entropy %y, %labels : (tensor<16x64xf32>, tensor<16xi64>) -> tensor<16xf32>
  %l = pc.reduce_mean %ce {axes = array<i64: 0>} : (tensor<16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
