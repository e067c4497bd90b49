// RUN: pc-opt %pc_src_root/examples/mlp_2x2.mlir --pc-distribute | FileCheck %s
// RUN: pc-opt %pc_src_root/examples/mlp_2x2.mlir --pc-distribute | pc-opt | FileCheck %s

// The whole chain on the example model: one SPMD program for the four
// ranks, which prints and parses.
// CHECK-LABEL: func.func @mlp.part0
// CHECK-SAME: pc.graph = "mlp"
// Its predicted memory (pc-memory-plan), which parses back too.
// CHECK-SAME: pc.memory = {activations = {{[0-9]+}} : i64, activations_peak = {{[0-9]+}} : i64, gradients = 0 : i64, optimizer_state = 0 : i64, parameters = 1051648 : i64, peak = {{[0-9]+}} : i64, workspace = {{[0-9]+}} : i64}
// CHECK-SAME: pc.ranks = array<i64: 0, 1, 2, 3>
// The first bias is the first matmul's addend (pc-fuse).
// CHECK: pc.matmul %{{.*}}, %{{.*}}, %{{.*}} : (tensor<32x256xf32>, tensor<256x512xf32>, tensor<512xf32>) -> tensor<32x512xf32>
// CHECK: pc.matmul %{{.*}}, %{{.*}} : (tensor<32x512xf32>, tensor<512x256xf32>) -> tensor<32x256xf32>
// The annotated to_sbp [S(0), P] -> [S(0), B]: one all-reduce over tp.
// CHECK: pc.all_reduce %{{.*}} {axes = array<i64: 1>, mesh = @mesh, reduce = #pc.reduction<sum>} : (tensor<32x256xf32>) -> tensor<32x256xf32>
// CHECK: pc.cross_entropy
// CHECK-NOT: func.func
