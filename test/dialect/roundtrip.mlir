// RUN: pc-opt %s | pc-opt | FileCheck %s
// RUN: pc-opt %s --mlir-print-op-generic | pc-opt | FileCheck %s

// Every op and attribute form prints in the form it is parsed from, and the
// printed form parses back to the same IR.

// CHECK-LABEL: pc.mesh @m <["dp"=2, "tp"=2]>
pc.mesh @m <["dp"=2, "tp"=2]>
// CHECK: pc.mesh @line <["x"=4]>
pc.mesh @line <["x"=4]>
// CHECK: pc.mesh @gpus <["pp"=2, "dp"=2, "tp"=2]> on cuda
pc.mesh @gpus <["pp"=2, "dp"=2, "tp"=2]> on cuda
// CHECK: pc.mesh @stage1 <["dp"=2, "tp"=2]> on cuda ranks [4, 5, 6, 7]
pc.mesh @stage1 <["dp"=2, "tp"=2]> on cuda ranks [4, 5, 6, 7]
// CHECK: pc.mesh @explicit_cpu <["x"=2]> ranks [1, 0]
pc.mesh @explicit_cpu <["x"=2]> on cpu ranks [1, 0]

// CHECK: pc.param @w0 : tensor<8x8xf32> = #pc.init<zeros>
pc.param @w0 : tensor<8x8xf32> = #pc.init<zeros>
// CHECK: pc.param @w1 : tensor<8xf32, #pc.sbp<@line, [S(0)]>> = #pc.init<ones>
pc.param @w1 : tensor<8xf32, #pc.sbp<@line, [S(0)]>> = #pc.init<ones>
// CHECK: pc.param @w2 : tensor<8xbf16> = #pc.init<constant(value = 5.000000e-01)>
pc.param @w2 : tensor<8xbf16> = #pc.init<constant(value = 0.5)>
// CHECK: pc.param @w3 : tensor<8xf32> = #pc.init<normal(std = 2.000000e-02)>
pc.param @w3 : tensor<8xf32> = #pc.init<normal(std = 0.02)>
// CHECK: pc.param @w4 : tensor<8xf32> = #pc.init<normal(mean = 1.000000e+00, std = 2.000000e-02)>
pc.param @w4 : tensor<8xf32> = #pc.init<normal(std = 0.02, mean = 1.0)>
// CHECK: pc.param @w5 : tensor<8xf16> = #pc.init<truncated_normal(std = 1.000000e+00)>
pc.param @w5 : tensor<8xf16> = #pc.init<truncated_normal(mean = 0.0, std = 1.0)>
// CHECK: pc.param @w6 : tensor<8xf32> = #pc.init<uniform(low = -1.000000e-01, high = 1.000000e-01)>
pc.param @w6 : tensor<8xf32> = #pc.init<uniform(low = -0.1, high = 0.1)>
// CHECK: pc.param @frozen : tensor<4xi64> = #pc.init<zeros> {trainable = false}
pc.param @frozen : tensor<4xi64> = #pc.init<zeros> {trainable = false}
// CHECK: pc.param @trainable : tensor<4xf32> = #pc.init<zeros>{{$}}
pc.param @trainable : tensor<4xf32> = #pc.init<zeros> {trainable = true}

// CHECK-LABEL: func.func @sbp_forms
// CHECK-SAME: tensor<4x8xf32, #pc.sbp<@m, [S(0), S(1)]>>
// CHECK-SAME: tensor<4x8xf32, #pc.sbp<@m, [B, P]>>
// CHECK-SAME: tensor<4x8xf32, #pc.sbp<@m, [P(max), P(min)]>>
// CHECK-SAME: tensor<4x8xf32, #pc.sbp<@m, [P(avg), P]>>
// CHECK-SAME: tensor<10x8xf32, #pc.sbp<@m, [S(0), S(0)]>>
// CHECK-SAME: tensor<4x8xf32>
func.func @sbp_forms(%a: tensor<4x8xf32, #pc.sbp<@m, [S(0), S(1)]>>,
                     %b: tensor<4x8xf32, #pc.sbp<@m, [B, P(sum)]>>,
                     %c: tensor<4x8xf32, #pc.sbp<@m, [P(max), P(min)]>>,
                     %d: tensor<4x8xf32, #pc.sbp<@m, [P(avg), P]>>,
                     %e: tensor<10x8xf32, #pc.sbp<@m, [S(0), S(0)]>>,
                     %f: tensor<4x8xf32>) {
  return
}

// CHECK-LABEL: func.func @params
func.func @params() -> tensor<8xf32, #pc.sbp<@line, [S(0)]>> {
  // CHECK: pc.get_param @w1 : tensor<8xf32, #pc.sbp<@line, [S(0)]>>
  %w = pc.get_param @w1 : tensor<8xf32, #pc.sbp<@line, [S(0)]>>
  return %w : tensor<8xf32, #pc.sbp<@line, [S(0)]>>
}

// CHECK-LABEL: func.func @layout_ops
func.func @layout_ops(%x: tensor<8x64xf32>) -> tensor<8x64xf32, #pc.sbp<@stage1, [S(0), B]>> {
  // CHECK: pc.to_sbp %{{.*}} : (tensor<8x64xf32>) -> tensor<8x64xf32, #pc.sbp<@m, [P, B]>>
  %a = pc.to_sbp %x : (tensor<8x64xf32>) -> tensor<8x64xf32, #pc.sbp<@m, [P, B]>>
  // CHECK: pc.boxing %{{.*}} : (tensor<8x64xf32, #pc.sbp<@m, [P, B]>>) -> tensor<8x64xf32, #pc.sbp<@m, [B, B]>>
  %b = pc.boxing %a : (tensor<8x64xf32, #pc.sbp<@m, [P, B]>>) -> tensor<8x64xf32, #pc.sbp<@m, [B, B]>>
  // Across meshes: a pipeline-stage transfer.
  // CHECK: pc.boxing %{{.*}} : (tensor<8x64xf32, #pc.sbp<@m, [B, B]>>) -> tensor<8x64xf32, #pc.sbp<@stage1, [S(0), B]>>
  %c = pc.boxing %b : (tensor<8x64xf32, #pc.sbp<@m, [B, B]>>) -> tensor<8x64xf32, #pc.sbp<@stage1, [S(0), B]>>
  return %c : tensor<8x64xf32, #pc.sbp<@stage1, [S(0), B]>>
}

// The per-device form of the steps, as pc-partition emits them.
// CHECK-LABEL: func.func @local_steps
func.func @local_steps(%x: tensor<3x6xf32>, %b: tensor<10x6xf32>) {
  // CHECK: pc.all_gather %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @line} : (tensor<3x6xf32>) -> tensor<10x6xf32>
  %0 = pc.all_gather %x {mesh = @line, axes = array<i64: 0>, dim = 0 : i64} : (tensor<3x6xf32>) -> tensor<10x6xf32>
  // CHECK: pc.reduce_scatter %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @line, reduce = #pc.reduction<avg>, sizes = array<i64: 3, 3, 2, 2>}
  %1 = pc.reduce_scatter %b {mesh = @line, axes = array<i64: 0>, dim = 0 : i64, reduce = #pc.reduction<avg>, sizes = array<i64: 3, 3, 2, 2>} : (tensor<10x6xf32>) -> tensor<3x6xf32>
  // CHECK: pc.all_to_all %{{.*}} : (tensor<3x6xf32>) -> tensor<10x2xf32>
  %2 = pc.all_to_all %x {mesh = @line, axes = array<i64: 0>, src_dim = 0 : i64, dst_dim = 1 : i64} : (tensor<3x6xf32>) -> tensor<10x2xf32>
  // CHECK: pc.local_slice
  %3 = pc.local_slice %b {mesh = @line, axes = array<i64: 0>, dim = 0 : i64} : (tensor<10x6xf32>) -> tensor<3x6xf32>
  // CHECK: pc.local_partial %{{.*}} {axes = array<i64: 0>, dim = 0 : i64, mesh = @line, reduce = #pc.reduction<sum>} : (tensor<3x6xf32>) -> tensor<10x6xf32>
  %4 = pc.local_partial %x {mesh = @line, axes = array<i64: 0>, reduce = #pc.reduction<sum>, dim = 0 : i64} : (tensor<3x6xf32>) -> tensor<10x6xf32>
  // CHECK: pc.all_reduce %{{.*}} {axes = array<i64: 0>, mesh = @line, reduce = #pc.reduction<min>}
  %5 = pc.all_reduce %x {mesh = @line, axes = array<i64: 0>, reduce = #pc.reduction<min>} : (tensor<3x6xf32>) -> tensor<3x6xf32>
  // CHECK: pc.broadcast %{{.*}} {axes = array<i64: 0>, mesh = @line, root = 1 : i64}
  %6 = pc.broadcast %x {mesh = @line, axes = array<i64: 0>, root = 1 : i64} : (tensor<3x6xf32>) -> tensor<3x6xf32>
  // CHECK: pc.pick_labels %{{.*}}, %{{.*}} : (tensor<10x6xf32>, tensor<10xi64>) -> tensor<10xf32>
  %labels = pc.constant dense<0> : tensor<10xi64>
  %picked = pc.pick_labels %b, %labels : (tensor<10x6xf32>, tensor<10xi64>) -> tensor<10xf32>
  // CHECK: pc.piece_offset {axes = array<i64: 0>, mesh = @line, sizes = array<i64: 3, 3, 2, 2>} : tensor<i64>
  %7 = pc.piece_offset {mesh = @line, axes = array<i64: 0>, sizes = array<i64: 3, 3, 2, 2>} : tensor<i64>
  // CHECK: pc.send %{{.*}} {from = tensor<10x6xf32, #pc.sbp<@line, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@m, [B, B]>>} : tensor<3x6xf32>
  pc.send %x {from = tensor<10x6xf32, #pc.sbp<@line, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@m, [B, B]>>} : tensor<3x6xf32>
  // CHECK: pc.recv {from = tensor<10x6xf32, #pc.sbp<@line, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@m, [B, B]>>} : tensor<10x6xf32>
  %8 = pc.recv {from = tensor<10x6xf32, #pc.sbp<@line, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@m, [B, B]>>} : tensor<10x6xf32>
  // CHECK: pc.redistribute %{{.*}} {from = tensor<10x6xf32, #pc.sbp<@line, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@line, [S(1)]>>} : (tensor<3x6xf32>) -> tensor<10x2xf32>
  %9 = pc.redistribute %x {from = tensor<10x6xf32, #pc.sbp<@line, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@line, [S(1)]>>} : (tensor<3x6xf32>) -> tensor<10x2xf32>
  return
}

// CHECK-LABEL: func.func @compute
func.func @compute(%x: tensor<2x8x64xf32>, %w: tensor<64x32xf32>,
                   %wt: tensor<32x64xf32>, %bias: tensor<32xf32>,
                   %ids: tensor<2x8xi64>, %table: tensor<100x64xf32>,
                   %labels: tensor<2x8xi32>, %g: tensor<64xf32>,
                   %i: tensor<4xi32>) {
  // CHECK: pc.matmul %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  %0 = pc.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x8x64xf32>, tensor<32x64xf32>) -> tensor<2x8x32xf32>
  %1 = pc.matmul %x, %wt {transpose_rhs} : (tensor<2x8x64xf32>, tensor<32x64xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x64x64xf32>
  %2 = pc.matmul %x, %x {transpose_lhs} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x64x64xf32>
  // CHECK: pc.add %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %3 = pc.add %0, %bias : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.sub
  %4 = pc.sub %3, %1 : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.mul
  %5 = pc.mul %4, %bias : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.div
  %6 = pc.div %bias, %5 : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.add %{{.*}}, %{{.*}} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %ia = pc.add %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: pc.neg
  %7 = pc.neg %6 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.exp
  %8 = pc.exp %7 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.log
  %9 = pc.log %8 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.tanh
  %10 = pc.tanh %9 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.relu
  %11 = pc.relu %10 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.sigmoid
  %12 = pc.sigmoid %11 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.gelu %{{.*}} : (tensor<2x8x32xf32>)
  %13 = pc.gelu %12 : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.gelu %{{.*}} {approximate} : (tensor<2x8x32xf32>)
  %14 = pc.gelu %13 {approximate} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.softmax %{{.*}} {axis = -1 : i64}
  %15 = pc.softmax %14 {axis = -1 : i64} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.log_softmax %{{.*}} {axis = 1 : i64}
  %16 = pc.log_softmax %15 {axis = 1 : i64} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %17 = pc.layer_norm %x, %g, %g : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: pc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>)
  %gb = pc.broadcast_to %g : (tensor<64xf32>) -> tensor<8x64xf32>
  %18 = pc.layer_norm %x, %gb, %gb {axis = 1 : i64, epsilon = 1.0e-3 : f64} : (tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: pc.rms_norm %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %19 = pc.rms_norm %x, %g : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: pc.reduce_sum %{{.*}} {axes = array<i64: 0, 2>} : (tensor<2x8x64xf32>) -> tensor<8xf32>
  %20 = pc.reduce_sum %x {axes = array<i64: 0, 2>} : (tensor<2x8x64xf32>) -> tensor<8xf32>
  // CHECK: pc.reduce_mean %{{.*}} {axes = array<i64: -1>, keepdim} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  %21 = pc.reduce_mean %x {axes = array<i64: -1>, keepdim} : (tensor<2x8x64xf32>) -> tensor<2x8x1xf32>
  // CHECK: pc.reduce_max %{{.*}} {axes = array<i64: 0, 1, 2>} : (tensor<2x8x64xf32>) -> tensor<f32>
  %22 = pc.reduce_max %x {axes = array<i64: 0, 1, 2>} : (tensor<2x8x64xf32>) -> tensor<f32>
  // CHECK: pc.reshape %{{.*}} : (tensor<2x8x64xf32>) -> tensor<16x4x16xf32>
  %23 = pc.reshape %x : (tensor<2x8x64xf32>) -> tensor<16x4x16xf32>
  // CHECK: pc.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : (tensor<2x8x64xf32>) -> tensor<2x64x8xf32>
  %24 = pc.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x8x64xf32>) -> tensor<2x64x8xf32>
  // CHECK: pc.broadcast_to %{{.*}} : (tensor<32xf32>) -> tensor<2x8x32xf32>
  %25 = pc.broadcast_to %bias : (tensor<32xf32>) -> tensor<2x8x32xf32>
  // CHECK: pc.slice %{{.*}} {limit = array<i64: 2, 8, 16>, start = array<i64: 0, 4, 0>} : (tensor<2x8x64xf32>) -> tensor<2x4x16xf32>
  %26 = pc.slice %x {start = array<i64: 0, 4, 0>, limit = array<i64: 2, 8, 16>} : (tensor<2x8x64xf32>) -> tensor<2x4x16xf32>
  // CHECK: pc.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x8x128xf32>
  %27 = pc.concat %0, %x, %1 {axis = 2 : i64} : (tensor<2x8x32xf32>, tensor<2x8x64xf32>, tensor<2x8x32xf32>) -> tensor<2x8x128xf32>
  // CHECK: pc.embedding %{{.*}}, %{{.*}} : (tensor<2x8xi64>, tensor<100x64xf32>) -> tensor<2x8x64xf32>
  %28 = pc.embedding %ids, %table : (tensor<2x8xi64>, tensor<100x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: pc.causal_mask %{{.*}} : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %29 = pc.causal_mask %2 : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  // CHECK: pc.compare %{{.*}}, %{{.*}} {predicate = #pc.comparison<ge>} : (tensor<2x64x64xf32>, tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %rt0 = pc.compare %29, %29 {predicate = #pc.comparison<ge>} : (tensor<2x64x64xf32>, tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  // CHECK: pc.sqrt %{{.*}} : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %rt1 = pc.sqrt %rt0 : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  // CHECK: pc.erf %{{.*}} : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %rt2 = pc.erf %rt1 : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  // CHECK: pc.cross_entropy %{{.*}}, %{{.*}} : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  %30 = pc.cross_entropy %3, %labels : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<2x8xf32>
  // CHECK: pc.one_hot %{{.*}} : (tensor<2x8xi32>) -> tensor<2x8x32xf32>
  %rt3 = pc.one_hot %labels : (tensor<2x8xi32>) -> tensor<2x8x32xf32>
  // CHECK: pc.embedding_grad %{{.*}}, %{{.*}} : (tensor<2x8xi32>, tensor<2x8x32xf32>) -> tensor<100x32xf32>
  %rt4 = pc.embedding_grad %labels, %rt3 : (tensor<2x8xi32>, tensor<2x8x32xf32>) -> tensor<100x32xf32>
  // CHECK: pc.cast %{{.*}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xbf16>
  %31 = pc.cast %x : (tensor<2x8x64xf32>) -> tensor<2x8x64xbf16>
  // CHECK: pc.cast %{{.*}} : (tensor<2x8x64xbf16>) -> tensor<2x8x64xf16>
  %32 = pc.cast %31 : (tensor<2x8x64xbf16>) -> tensor<2x8x64xf16>
  // CHECK: pc.cast %{{.*}} : (tensor<2x8xi64>) -> tensor<2x8xi32>
  %33 = pc.cast %ids : (tensor<2x8xi64>) -> tensor<2x8xi32>
  // CHECK: pc.constant dense<0.000000e+00> : tensor<1024x1024xf32>
  %34 = pc.constant dense<0.0> : tensor<1024x1024xf32>
  // CHECK: pc.constant dense<[1, 2, 3]> : tensor<3xi64, #pc.sbp<@line, [B]>>
  %35 = pc.constant dense<[1, 2, 3]> : tensor<3xi64, #pc.sbp<@line, [B]>>
  return
}

// Matmul batch dims broadcast as in NumPy.
// CHECK-LABEL: func.func @matmul_batch
func.func @matmul_batch(%a: tensor<4x1x8x16xf32>, %b: tensor<3x16x2xf32>) -> tensor<4x3x8x2xf32> {
  // CHECK: -> tensor<4x3x8x2xf32>
  %0 = pc.matmul %a, %b : (tensor<4x1x8x16xf32>, tensor<3x16x2xf32>) -> tensor<4x3x8x2xf32>
  return %0 : tensor<4x3x8x2xf32>
}

// Encodings on one mesh are checked per value; the SBP signature of each op
// is the job of propagation.
// CHECK-LABEL: func.func @encoded
func.func @encoded(%x: tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>,
                   %w: tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>)
    -> tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>> {
  // CHECK: pc.matmul %{{.*}}, %{{.*}} : (tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>, tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>>
  %y = pc.matmul %x, %w : (tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>, tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>>
  return %y : tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>>
}

// Pipelines: a per-device program's schedule and its ops' actions.
// CHECK-LABEL: func.func @piped
// CHECK-SAME: pc.pipeline = #pc.pipeline<schedule = "zb-h1", stages = 2, micro_batches = 2, virtual_stages = 1>
// CHECK-SAME: pc.schedule = [#pc.action<F, 1, 0>, #pc.action<B, 1, 0>, #pc.action<W, 1, 0>]
// CHECK: pc.tanh %{{.*}} {pc.action = #pc.action<F, 1, 0>, pc.stage = 1 : i64}
// CHECK: pc.constant dense<1.000000e+00> : tensor<f32> {pc.action = #pc.action<B, 1, 0>}
func.func @piped(%x: tensor<4xf32>) -> tensor<4xf32> attributes {pc.pipeline = #pc.pipeline<schedule = "zb-h1", stages = 2, micro_batches = 2, virtual_stages = 1>, pc.schedule = [#pc.action<F, 1, 0>, #pc.action<B, 1, 0>, #pc.action<W, 1, 0>]} {
  %a = pc.tanh %x {pc.stage = 1 : i64, pc.action = #pc.action<F, 1, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %c = pc.constant dense<1.0> : tensor<f32> {pc.action = #pc.action<B, 1, 0>}
  return %a : tensor<4xf32>
}
