// RUN: pc-opt %s --split-input-file --pc-sbp-propagate | FileCheck %s
// RUN: pc-opt %pc_src_root/examples/gpt_block_2x2.mlir --pc-distribute | FileCheck %s --check-prefix=GPT

// The MLP of examples/mlp_2x2.mlir with only the input and the weights
// annotated: the batch splits over dp, the hidden layer over tp
// (column-parallel then row-parallel), and the second matmul is partial.

pc.mesh @mesh <["dp"=2, "tp"=2]>
pc.param @w1 : tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @b1 : tensor<1024xf32> = #pc.init<zeros>
pc.param @w2 : tensor<1024x256xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
// The unannotated bias takes the layout its consumer wants; parameters are
// never stored as partials.
// CHECK: pc.param @b1 : tensor<1024xf32, #pc.sbp<@mesh, [B, S(0)]>>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), P]>>
func.func @mlp(%x: tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<64x256xf32> {
  %w1 = pc.get_param @w1 : tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %b1 = pc.get_param @b1 : tensor<1024xf32>
  %w2 = pc.get_param @w2 : tensor<1024x256xf32, #pc.sbp<@mesh, [B, S(0)]>>
  // CHECK: pc.matmul {{.*}} -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
  %h = pc.matmul %x, %w1 : (tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>, tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<64x1024xf32>
  // CHECK: pc.add {{.*}} -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
  %hb = pc.add %h, %b1 : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
  // CHECK: pc.relu {{.*}} -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
  %a = pc.relu %hb : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  // CHECK: pc.matmul %{{.*}}, %{{.*}} {pc.operand_sbps = [#pc.sbp<@mesh, [S(0), S(1)]>, #pc.sbp<@mesh, [B, S(0)]>]} {{.*}} -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), P]>>
  %y = pc.matmul %a, %w2 : (tensor<64x1024xf32>, tensor<1024x256xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

// -----

// A constraint is met exactly, and the value before it is decided to need
// no boxing where possible.
pc.mesh @m <["x"=4]>
// CHECK-LABEL: func.func @constraint
func.func @constraint(%x: tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x8xf32> {
  // CHECK: pc.exp {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>
  %0 = pc.exp %x : (tensor<8x8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x8xf32>
  // CHECK: pc.to_sbp {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  %1 = pc.to_sbp %0 : (tensor<8x8xf32>) -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  // CHECK: pc.tanh {{.*}} -> tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  %2 = pc.tanh %1 : (tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>) -> tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}

// -----

// Backward: an unannotated input takes the layout of its consumer; an
// annotated op result is a constraint that picks the signature.
pc.mesh @m <["x"=2]>
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%arg0: tensor<8x4xf32, #pc.sbp<@m, [S(1)]>>, %arg1: tensor<4x6xf32, #pc.sbp<@m, [S(0)]>>)
// CHECK: pc.matmul {{.*}} -> tensor<8x6xf32, #pc.sbp<@m, [P]>>
func.func @backward(%a: tensor<8x4xf32>, %b: tensor<4x6xf32>) -> tensor<8x6xf32, #pc.sbp<@m, [P]>> {
  %0 = pc.matmul %a, %b : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32, #pc.sbp<@m, [P]>>
  return %0 : tensor<8x6xf32, #pc.sbp<@m, [P]>>
}

// -----

// Nothing annotated but one mesh: everything is broadcast.
pc.mesh @m <["x"=2]>
// CHECK-LABEL: func.func @default
// CHECK-SAME: tensor<4xf32, #pc.sbp<@m, [B]>>
// CHECK: pc.exp {{.*}} -> tensor<4xf32, #pc.sbp<@m, [B]>>
func.func @default(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pc.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// The GPT block is DP x TP in the Megatron style: the forward pass needs
// exactly one all-reduce per block (attention, MLP), over the tp axis, and
// no other collective.
// GPT-LABEL: func.func @block.part0
// GPT-SAME: pc.ranks = array<i64: 0, 1, 2, 3>
// GPT-NOT: pc.all_gather
// GPT-NOT: pc.reduce_scatter
// GPT-NOT: pc.all_to_all
// GPT: pc.all_reduce %{{.*}} {axes = array<i64: 1>, mesh = @mesh, reduce = #pc.reduction<sum>} : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
// GPT-NOT: pc.all_gather
// GPT-NOT: pc.reduce_scatter
// GPT-NOT: pc.all_to_all
// GPT: pc.all_reduce %{{.*}} {axes = array<i64: 1>, mesh = @mesh, reduce = #pc.reduction<sum>} : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
// GPT-NOT: pc.all_
// GPT-NOT: pc.reduce_scatter
// GPT: return

// -----

// Logits from a column-parallel head stay split over the classes: the loss
// is vocab-parallel, and no logits are gathered.
pc.mesh @m <["dp"=2, "tp"=2]>
pc.param @head : tensor<64x1000xf32, #pc.sbp<@m, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
// CHECK-LABEL: func.func @vocab_parallel_loss
// CHECK: pc.matmul {{.*}} -> tensor<8x1000xf32, #pc.sbp<@m, [S(0), S(1)]>>
// CHECK: pc.cross_entropy %{{.*}}, %{{.*}} {pc.operand_sbps = [#pc.sbp<@m, [S(0), S(1)]>, #pc.sbp<@m, [S(0), B]>]} {{.*}} -> tensor<8xf32, #pc.sbp<@m, [S(0), B]>>
func.func @vocab_parallel_loss(%h: tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>, %y: tensor<8xi64, #pc.sbp<@m, [S(0), B]>>) -> tensor<8xf32> {
  %w = pc.get_param @head : tensor<64x1000xf32, #pc.sbp<@m, [B, S(1)]>>
  %l = pc.matmul %h, %w : (tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>, tensor<64x1000xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<8x1000xf32>
  %c = pc.cross_entropy %l, %y : (tensor<8x1000xf32>, tensor<8xi64, #pc.sbp<@m, [S(0), B]>>) -> tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// On a mesh axis of one device every layout is the whole tensor: a result
// annotated with a split over it matches the replicated signature, and
// keeps its annotation.
// CHECK-LABEL: func.func @size_one_axis
// CHECK-SAME: -> tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>>
// CHECK: pc.relu {{.*}} -> tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>>
pc.mesh @one <["dp"=1, "tp"=2]>
func.func @size_one_axis(%x: tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>>) -> tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>> {
  %y = pc.relu %x : (tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>>) -> tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>>
  return %y : tensor<8x8xf32, #pc.sbp<@one, [S(0), S(1)]>>
}
