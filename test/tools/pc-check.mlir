// pc-check compiles a model and runs it both ways on the reference
// interpreter; these models must agree.
// RUN: pc-check %pc_src_root/examples/gpt_tiny_2x2.mlir | FileCheck %s
// RUN: pc-check %pc_src_root/examples/mlp_2x2.mlir | FileCheck %s --check-prefix=MLP
// RUN: pc-check %s --pipeline=pc-partition | FileCheck %s --check-prefix=HAND
// A tolerance nothing can meet makes it fail.
// RUN: not pc-check %pc_src_root/examples/mlp_2x2.mlir --tolerance=-1

// CHECK: @gpt: max relative difference
// CHECK: all_reduce:
// MLP: @mlp: max relative difference
// MLP: all_reduce: 4 calls

// A hand-partitionable program: a split exp, gathered.
pc.mesh @m <["x"=3]>
func.func @f(%x: tensor<7x2xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<7x2xf32, #pc.sbp<@m, [B]>> {
  %0 = pc.exp %x : (tensor<7x2xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<7x2xf32, #pc.sbp<@m, [S(0)]>>
  %1 = pc.all_gather %0 {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<7x2xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<7x2xf32, #pc.sbp<@m, [B]>>
  return %1 : tensor<7x2xf32, #pc.sbp<@m, [B]>>
}
// HAND: @f: max relative difference 0.000000e+00
// HAND: all_gather: 3 calls
// 7 rows as 3, 2, 2 floats of 2: rank 0 receives 4 rows, the others 5.
// HAND: rank 0 received 32 B
// HAND: rank 1 received 40 B
// HAND: rank 2 received 40 B
