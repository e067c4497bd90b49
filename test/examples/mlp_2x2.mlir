// The example model round-trips through pc-opt, in both syntaxes.
// RUN: pc-opt %pc_src_root/examples/mlp_2x2.mlir | pc-opt | FileCheck %s
// RUN: pc-opt %pc_src_root/examples/mlp_2x2.mlir --mlir-print-op-generic | pc-opt | FileCheck %s

// CHECK: pc.mesh @mesh <["dp"=2, "tp"=2]>
// CHECK: pc.param @fc1.weight : tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 2.000000e-02)>
// CHECK: pc.param @fc2.bias : tensor<256xf32, #pc.sbp<@mesh, [B, B]>> = #pc.init<zeros>
// CHECK: func.func @mlp(%{{.*}}: tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>, %{{.*}}: tensor<64xi64, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<f32, #pc.sbp<@mesh, [P, B]>>
// CHECK: pc.matmul {{.*}} -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
// CHECK: pc.gelu {{.*}} {approximate}
// CHECK: pc.matmul {{.*}} -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), P]>>
// CHECK: pc.to_sbp {{.*}} -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>
// CHECK: pc.cross_entropy
// CHECK: pc.reduce_mean
// CHECK: return
