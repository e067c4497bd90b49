// A two-layer GPT (hidden 32, 4 heads, vocab 64) on a 2x2 mesh, written by
//   bench/gen_gpt.py --layers 2 --hidden 32 --heads 4 --batch 4 --seq 8 --vocab 64 --mesh 2x2

pc.mesh @mesh <["dp"=2, "tp"=2]>
pc.param @wte : tensor<64x32xf32> = #pc.init<normal(std = 0.02)>
pc.param @wpe : tensor<8x32xf32> = #pc.init<normal(std = 0.01)>
pc.param @h0.ln1.weight : tensor<32xf32> = #pc.init<ones>
pc.param @h0.ln2.weight : tensor<32xf32> = #pc.init<ones>
pc.param @h0.ln1.bias : tensor<32xf32> = #pc.init<zeros>
pc.param @h0.ln2.bias : tensor<32xf32> = #pc.init<zeros>
pc.param @h0.attn.q : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.attn.k : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.attn.v : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.attn.out : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.mlp.fc : tensor<32x128xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.mlp.proj : tensor<128x32xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.ln1.weight : tensor<32xf32> = #pc.init<ones>
pc.param @h1.ln2.weight : tensor<32xf32> = #pc.init<ones>
pc.param @h1.ln1.bias : tensor<32xf32> = #pc.init<zeros>
pc.param @h1.ln2.bias : tensor<32xf32> = #pc.init<zeros>
pc.param @h1.attn.q : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.attn.k : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.attn.v : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.attn.out : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.mlp.fc : tensor<32x128xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.mlp.proj : tensor<128x32xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @lnf.weight : tensor<32xf32> = #pc.init<ones>
pc.param @lnf.bias : tensor<32xf32> = #pc.init<zeros>
pc.param @head : tensor<32x64xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
func.func @gpt(%ids: tensor<4x8xi64, #pc.sbp<@mesh, [S(0), B]>>, %labels: tensor<4x8xi64, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<f32> {
  %v1 = pc.get_param @wte : tensor<64x32xf32>
  %v2 = pc.get_param @wpe : tensor<8x32xf32>
  %v3 = pc.embedding %ids, %v1 : (tensor<4x8xi64, #pc.sbp<@mesh, [S(0), B]>>, tensor<64x32xf32>) -> tensor<4x8x32xf32>
  %v4 = pc.add %v3, %v2 : (tensor<4x8x32xf32>, tensor<8x32xf32>) -> tensor<4x8x32xf32>
  %v5 = pc.constant dense<0.35355339059327373> : tensor<f32>
  %v6 = pc.get_param @h0.ln1.weight : tensor<32xf32>
  %v7 = pc.get_param @h0.ln1.bias : tensor<32xf32>
  %v8 = pc.get_param @h0.ln2.weight : tensor<32xf32>
  %v9 = pc.get_param @h0.ln2.bias : tensor<32xf32>
  %v10 = pc.get_param @h0.attn.q : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v11 = pc.get_param @h0.attn.k : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v12 = pc.get_param @h0.attn.v : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v13 = pc.get_param @h0.attn.out : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v14 = pc.get_param @h0.mlp.fc : tensor<32x128xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v15 = pc.get_param @h0.mlp.proj : tensor<128x32xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v16 = pc.layer_norm %v4, %v6, %v7 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %v17 = pc.matmul %v16, %v10 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x32xf32>
  %v18 = pc.reshape %v17 : (tensor<4x8x32xf32>) -> tensor<4x8x4x8xf32>
  %v19 = pc.transpose %v18 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x4x8xf32>) -> tensor<4x4x8x8xf32>
  %v20 = pc.matmul %v16, %v11 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x32xf32>
  %v21 = pc.reshape %v20 : (tensor<4x8x32xf32>) -> tensor<4x8x4x8xf32>
  %v22 = pc.transpose %v21 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x8x4x8xf32>) -> tensor<4x4x8x8xf32>
  %v23 = pc.matmul %v16, %v12 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x32xf32>
  %v24 = pc.reshape %v23 : (tensor<4x8x32xf32>) -> tensor<4x8x4x8xf32>
  %v25 = pc.transpose %v24 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x4x8xf32>) -> tensor<4x4x8x8xf32>
  %v26 = pc.matmul %v19, %v22 : (tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v27 = pc.mul %v26, %v5 : (tensor<4x4x8x8xf32>, tensor<f32>) -> tensor<4x4x8x8xf32>
  %v28 = pc.causal_mask %v27 : (tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v29 = pc.softmax %v28 {axis = -1 : i64} : (tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v30 = pc.matmul %v29, %v25 : (tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v31 = pc.transpose %v30 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x4x8x8xf32>) -> tensor<4x8x4x8xf32>
  %v32 = pc.reshape %v31 : (tensor<4x8x4x8xf32>) -> tensor<4x8x32xf32>
  %v33 = pc.matmul %v32, %v13 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<4x8x32xf32>
  %v34 = pc.add %v4, %v33 : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %v35 = pc.layer_norm %v34, %v8, %v9 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %v36 = pc.matmul %v35, %v14 : (tensor<4x8x32xf32>, tensor<32x128xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x128xf32>
  %v37 = pc.gelu %v36 {approximate} : (tensor<4x8x128xf32>) -> tensor<4x8x128xf32>
  %v38 = pc.matmul %v37, %v15 : (tensor<4x8x128xf32>, tensor<128x32xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<4x8x32xf32>
  %v39 = pc.add %v34, %v38 : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %v40 = pc.get_param @h1.ln1.weight : tensor<32xf32>
  %v41 = pc.get_param @h1.ln1.bias : tensor<32xf32>
  %v42 = pc.get_param @h1.ln2.weight : tensor<32xf32>
  %v43 = pc.get_param @h1.ln2.bias : tensor<32xf32>
  %v44 = pc.get_param @h1.attn.q : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v45 = pc.get_param @h1.attn.k : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v46 = pc.get_param @h1.attn.v : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v47 = pc.get_param @h1.attn.out : tensor<32x32xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v48 = pc.get_param @h1.mlp.fc : tensor<32x128xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v49 = pc.get_param @h1.mlp.proj : tensor<128x32xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v50 = pc.layer_norm %v39, %v40, %v41 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %v51 = pc.matmul %v50, %v44 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x32xf32>
  %v52 = pc.reshape %v51 : (tensor<4x8x32xf32>) -> tensor<4x8x4x8xf32>
  %v53 = pc.transpose %v52 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x4x8xf32>) -> tensor<4x4x8x8xf32>
  %v54 = pc.matmul %v50, %v45 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x32xf32>
  %v55 = pc.reshape %v54 : (tensor<4x8x32xf32>) -> tensor<4x8x4x8xf32>
  %v56 = pc.transpose %v55 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x8x4x8xf32>) -> tensor<4x4x8x8xf32>
  %v57 = pc.matmul %v50, %v46 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x32xf32>
  %v58 = pc.reshape %v57 : (tensor<4x8x32xf32>) -> tensor<4x8x4x8xf32>
  %v59 = pc.transpose %v58 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x4x8xf32>) -> tensor<4x4x8x8xf32>
  %v60 = pc.matmul %v53, %v56 : (tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v61 = pc.mul %v60, %v5 : (tensor<4x4x8x8xf32>, tensor<f32>) -> tensor<4x4x8x8xf32>
  %v62 = pc.causal_mask %v61 : (tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v63 = pc.softmax %v62 {axis = -1 : i64} : (tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v64 = pc.matmul %v63, %v59 : (tensor<4x4x8x8xf32>, tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32>
  %v65 = pc.transpose %v64 {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x4x8x8xf32>) -> tensor<4x8x4x8xf32>
  %v66 = pc.reshape %v65 : (tensor<4x8x4x8xf32>) -> tensor<4x8x32xf32>
  %v67 = pc.matmul %v66, %v47 : (tensor<4x8x32xf32>, tensor<32x32xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<4x8x32xf32>
  %v68 = pc.add %v39, %v67 : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %v69 = pc.layer_norm %v68, %v42, %v43 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %v70 = pc.matmul %v69, %v48 : (tensor<4x8x32xf32>, tensor<32x128xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x128xf32>
  %v71 = pc.gelu %v70 {approximate} : (tensor<4x8x128xf32>) -> tensor<4x8x128xf32>
  %v72 = pc.matmul %v71, %v49 : (tensor<4x8x128xf32>, tensor<128x32xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<4x8x32xf32>
  %v73 = pc.add %v68, %v72 : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %v74 = pc.get_param @lnf.weight : tensor<32xf32>
  %v75 = pc.get_param @lnf.bias : tensor<32xf32>
  %v76 = pc.get_param @head : tensor<32x64xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v77 = pc.layer_norm %v73, %v74, %v75 : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  %v78 = pc.matmul %v77, %v76 : (tensor<4x8x32xf32>, tensor<32x64xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<4x8x64xf32>
  %v79 = pc.cross_entropy %v78, %labels : (tensor<4x8x64xf32>, tensor<4x8xi64, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<4x8xf32>
  %v80 = pc.reduce_mean %v79 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %v80 : tensor<f32>
}
