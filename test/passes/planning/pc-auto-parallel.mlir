// RUN: pc-opt %s --split-input-file --pc-auto-parallel="report=true check-exact=true" | FileCheck %s
// RUN: pc-opt %s --split-input-file --pc-auto-parallel --pc-distribute -o /dev/null

// Nothing annotated but the mesh and the result: a forward pass splits its
// batch over both axes (no communication at all) and keeps the weights
// whole; the result must end replicated, so its producer gathers.
// CHECK: pc-auto-parallel: brute force agrees
// CHECK: pc-auto-parallel: {{[0-9]+}} nodes ({{[0-9]+}} states), {{[0-9]+}} edges; {{[0-9]+}} eliminated, {{[0-9]+}} left, solved exactly
// CHECK: pc.mesh @m <["dp"=2, "tp"=2]>
// CHECK: pc.param @w : tensor<256x256xf32, #pc.sbp<@m, [B, B]>>
// CHECK: func.func @mlp(%arg0: tensor<4096x256xf32, #pc.sbp<@m, [S(0), S(0)]>>)
// CHECK: pc.matmul {{.*}} -> tensor<4096x256xf32, #pc.sbp<@m, [S(0), S(0)]>>
pc.mesh @m <["dp"=2, "tp"=2]>
pc.param @w : tensor<256x256xf32> = #pc.init<normal(std = 0.02)>
func.func @mlp(%x: tensor<4096x256xf32>) -> tensor<f32, #pc.sbp<@m, [B, B]>> {
  %w = pc.get_param @w : tensor<256x256xf32>
  %h = pc.matmul %x, %w : (tensor<4096x256xf32>, tensor<256x256xf32>) -> tensor<4096x256xf32>
  %a = pc.gelu %h : (tensor<4096x256xf32>) -> tensor<4096x256xf32>
  %l = pc.reduce_sum %a {axes = array<i64: 0, 1>} : (tensor<4096x256xf32>) -> tensor<f32, #pc.sbp<@m, [B, B]>>
  return %l : tensor<f32, #pc.sbp<@m, [B, B]>>
}

// -----

// Few rows and a wide weight: splitting the weight's columns (tensor
// parallel) costs less than replicating the product.
// CHECK: pc-auto-parallel: brute force agrees
// CHECK: pc.mesh @t <["x"=2]>
// CHECK: pc.param @w : tensor<1024x4096xf32, #pc.sbp<@t, [S(1)]>>
// CHECK: pc.matmul {{.*}} -> tensor<16x4096xf32, #pc.sbp<@t, [S(1)]>>
pc.mesh @t <["x"=2]>
pc.param @w : tensor<1024x4096xf32> = #pc.init<normal(std = 0.02)>
func.func @wide(%x: tensor<16x1024xf32>) -> tensor<16x4096xf32> {
  %w = pc.get_param @w : tensor<1024x4096xf32>
  %h = pc.matmul %x, %w : (tensor<16x1024xf32>, tensor<1024x4096xf32>) -> tensor<16x4096xf32>
  %a = pc.gelu %h : (tensor<16x4096xf32>) -> tensor<16x4096xf32>
  return %a : tensor<16x4096xf32>
}

// -----

// User annotations are constraints: the weight keeps [B] and the input
// [S(0)] though the plan would rather split the weight.
// CHECK: pc-auto-parallel: brute force agrees
// CHECK: pc.mesh @c <["x"=2]>
// CHECK: pc.param @w : tensor<1024x4096xf32, #pc.sbp<@c, [B]>>
// CHECK: func.func @fixed(%arg0: tensor<16x1024xf32, #pc.sbp<@c, [S(0)]>>)
// CHECK: pc.matmul {{.*}} -> tensor<16x4096xf32, #pc.sbp<@c, [S(0)]>>
pc.mesh @c <["x"=2]>
pc.param @w : tensor<1024x4096xf32, #pc.sbp<@c, [B]>> = #pc.init<normal(std = 0.02)>
func.func @fixed(%x: tensor<16x1024xf32, #pc.sbp<@c, [S(0)]>>) -> tensor<16x4096xf32> {
  %w = pc.get_param @w : tensor<1024x4096xf32, #pc.sbp<@c, [B]>>
  %h = pc.matmul %x, %w : (tensor<16x1024xf32, #pc.sbp<@c, [S(0)]>>, tensor<1024x4096xf32, #pc.sbp<@c, [B]>>) -> tensor<16x4096xf32>
  %a = pc.gelu %h : (tensor<16x4096xf32>) -> tensor<16x4096xf32>
  return %a : tensor<16x4096xf32>
}
