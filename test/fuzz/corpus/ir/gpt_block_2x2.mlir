// One GPT-2 style transformer block (pre-norm attention and MLP) on a 2x2
// mesh: data parallel over "dp", Megatron-style tensor parallel over "tp".
// Only the input, the output and the weight matrices are annotated; SBP
// propagation decides everything else:
//
//   pc-opt examples/gpt_block_2x2.mlir --pc-distribute
//
// Batch 4, sequence 16, hidden 64, 4 heads of 16.

pc.mesh @mesh <["dp"=2, "tp"=2]>

pc.param @ln1.weight : tensor<64xf32> = #pc.init<ones>
pc.param @ln1.bias : tensor<64xf32> = #pc.init<zeros>
pc.param @attn.q : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @attn.k : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @attn.v : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @attn.out : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @ln2.weight : tensor<64xf32> = #pc.init<ones>
pc.param @ln2.bias : tensor<64xf32> = #pc.init<zeros>
pc.param @mlp.fc : tensor<64x256xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @mlp.proj : tensor<256x64xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>

func.func @block(%x: tensor<4x16x64xf32, #pc.sbp<@mesh, [S(0), B]>>)
    -> tensor<4x16x64xf32, #pc.sbp<@mesh, [S(0), B]>> {
  %g1 = pc.get_param @ln1.weight : tensor<64xf32>
  %b1 = pc.get_param @ln1.bias : tensor<64xf32>
  %wq = pc.get_param @attn.q : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %wk = pc.get_param @attn.k : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %wv = pc.get_param @attn.v : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %wo = pc.get_param @attn.out : tensor<64x64xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %g2 = pc.get_param @ln2.weight : tensor<64xf32>
  %b2 = pc.get_param @ln2.bias : tensor<64xf32>
  %w1 = pc.get_param @mlp.fc : tensor<64x256xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %w2 = pc.get_param @mlp.proj : tensor<256x64xf32, #pc.sbp<@mesh, [B, S(0)]>>

  // Attention.
  %h = pc.layer_norm %x, %g1, %b1 : (tensor<4x16x64xf32, #pc.sbp<@mesh, [S(0), B]>>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
  %q = pc.matmul %h, %wq : (tensor<4x16x64xf32>, tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x16x64xf32>
  %k = pc.matmul %h, %wk : (tensor<4x16x64xf32>, tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x16x64xf32>
  %v = pc.matmul %h, %wv : (tensor<4x16x64xf32>, tensor<64x64xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x16x64xf32>
  %q4 = pc.reshape %q : (tensor<4x16x64xf32>) -> tensor<4x16x4x16xf32>
  %k4 = pc.reshape %k : (tensor<4x16x64xf32>) -> tensor<4x16x4x16xf32>
  %v4 = pc.reshape %v : (tensor<4x16x64xf32>) -> tensor<4x16x4x16xf32>
  %qh = pc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x16x4x16xf32>) -> tensor<4x4x16x16xf32>
  %kt = pc.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x16x4x16xf32>) -> tensor<4x4x16x16xf32>
  %vh = pc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x16x4x16xf32>) -> tensor<4x4x16x16xf32>
  %s = pc.matmul %qh, %kt : (tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>) -> tensor<4x4x16x16xf32>
  %scale = pc.constant dense<0.25> : tensor<f32>
  %ss = pc.mul %s, %scale : (tensor<4x4x16x16xf32>, tensor<f32>) -> tensor<4x4x16x16xf32>
  %m = pc.causal_mask %ss : (tensor<4x4x16x16xf32>) -> tensor<4x4x16x16xf32>
  %p = pc.softmax %m {axis = -1 : i64} : (tensor<4x4x16x16xf32>) -> tensor<4x4x16x16xf32>
  %o = pc.matmul %p, %vh : (tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>) -> tensor<4x4x16x16xf32>
  %ot = pc.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x4x16x16xf32>) -> tensor<4x16x4x16xf32>
  %o3 = pc.reshape %ot : (tensor<4x16x4x16xf32>) -> tensor<4x16x64xf32>
  %a = pc.matmul %o3, %wo : (tensor<4x16x64xf32>, tensor<64x64xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<4x16x64xf32>
  %r1 = pc.add %x, %a : (tensor<4x16x64xf32, #pc.sbp<@mesh, [S(0), B]>>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32>

  // MLP.
  %h2 = pc.layer_norm %r1, %g2, %b2 : (tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
  %f = pc.matmul %h2, %w1 : (tensor<4x16x64xf32>, tensor<64x256xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x16x256xf32>
  %fa = pc.gelu %f {approximate} : (tensor<4x16x256xf32>) -> tensor<4x16x256xf32>
  %y = pc.matmul %fa, %w2 : (tensor<4x16x256xf32>, tensor<256x64xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<4x16x64xf32>
  %r2 = pc.add %r1, %y : (tensor<4x16x64xf32>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
  %out = pc.to_sbp %r2 : (tensor<4x16x64xf32>) -> tensor<4x16x64xf32, #pc.sbp<@mesh, [S(0), B]>>
  return %out : tensor<4x16x64xf32, #pc.sbp<@mesh, [S(0), B]>>
}
