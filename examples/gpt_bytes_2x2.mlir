// A byte-level GPT (vocabulary 256: text bytes as ids) on a 2x2 mesh, data
// parallel over "dp" and tensor parallel over "tp": the main job's model
// (scripts/demo.sh, docs/data.md). Written by
//   bench/gen_gpt.py --mesh 2x2 --layers 3 --hidden 192 --heads 6 --vocab 256 --seq 64 --batch 32

pc.mesh @mesh <["dp"=2, "tp"=2]>
pc.param @wte : tensor<256x192xf32> = #pc.init<normal(std = 0.02)>
pc.param @wpe : tensor<64x192xf32> = #pc.init<normal(std = 0.01)>
pc.param @h0.ln1.weight : tensor<192xf32> = #pc.init<ones>
pc.param @h0.ln2.weight : tensor<192xf32> = #pc.init<ones>
pc.param @h0.ln1.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @h0.ln2.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @h0.attn.q : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.attn.k : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.attn.v : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.attn.out : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.mlp.fc : tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h0.mlp.proj : tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.ln1.weight : tensor<192xf32> = #pc.init<ones>
pc.param @h1.ln2.weight : tensor<192xf32> = #pc.init<ones>
pc.param @h1.ln1.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @h1.ln2.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @h1.attn.q : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.attn.k : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.attn.v : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.attn.out : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.mlp.fc : tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h1.mlp.proj : tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h2.ln1.weight : tensor<192xf32> = #pc.init<ones>
pc.param @h2.ln2.weight : tensor<192xf32> = #pc.init<ones>
pc.param @h2.ln1.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @h2.ln2.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @h2.attn.q : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h2.attn.k : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h2.attn.v : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h2.attn.out : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @h2.mlp.fc : tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
pc.param @h2.mlp.proj : tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.02)>
pc.param @lnf.weight : tensor<192xf32> = #pc.init<ones>
pc.param @lnf.bias : tensor<192xf32> = #pc.init<zeros>
pc.param @head : tensor<192x256xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.02)>
func.func @gpt(%ids: tensor<32x64xi64, #pc.sbp<@mesh, [S(0), B]>>, %labels: tensor<32x64xi64, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<f32> {
  %v1 = pc.get_param @wte : tensor<256x192xf32>
  %v2 = pc.get_param @wpe : tensor<64x192xf32>
  %v3 = pc.embedding %ids, %v1 : (tensor<32x64xi64, #pc.sbp<@mesh, [S(0), B]>>, tensor<256x192xf32>) -> tensor<32x64x192xf32>
  %v4 = pc.add %v3, %v2 : (tensor<32x64x192xf32>, tensor<64x192xf32>) -> tensor<32x64x192xf32>
  %v5 = pc.constant dense<0.17677669529663687> : tensor<f32>
  %v6 = pc.get_param @h0.ln1.weight : tensor<192xf32>
  %v7 = pc.get_param @h0.ln1.bias : tensor<192xf32>
  %v8 = pc.get_param @h0.ln2.weight : tensor<192xf32>
  %v9 = pc.get_param @h0.ln2.bias : tensor<192xf32>
  %v10 = pc.get_param @h0.attn.q : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v11 = pc.get_param @h0.attn.k : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v12 = pc.get_param @h0.attn.v : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v13 = pc.get_param @h0.attn.out : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v14 = pc.get_param @h0.mlp.fc : tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v15 = pc.get_param @h0.mlp.proj : tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v16 = pc.layer_norm %v4, %v6, %v7 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v17 = pc.matmul %v16, %v10 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v18 = pc.reshape %v17 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v19 = pc.transpose %v18 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x64x32xf32>
  %v20 = pc.matmul %v16, %v11 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v21 = pc.reshape %v20 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v22 = pc.transpose %v21 {perm = array<i64: 0, 2, 3, 1>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x32x64xf32>
  %v23 = pc.matmul %v16, %v12 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v24 = pc.reshape %v23 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v25 = pc.transpose %v24 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x64x32xf32>
  %v26 = pc.matmul %v19, %v22 : (tensor<32x6x64x32xf32>, tensor<32x6x32x64xf32>) -> tensor<32x6x64x64xf32>
  %v27 = pc.mul %v26, %v5 : (tensor<32x6x64x64xf32>, tensor<f32>) -> tensor<32x6x64x64xf32>
  %v28 = pc.causal_mask %v27 : (tensor<32x6x64x64xf32>) -> tensor<32x6x64x64xf32>
  %v29 = pc.softmax %v28 {axis = -1 : i64} : (tensor<32x6x64x64xf32>) -> tensor<32x6x64x64xf32>
  %v30 = pc.matmul %v29, %v25 : (tensor<32x6x64x64xf32>, tensor<32x6x64x32xf32>) -> tensor<32x6x64x32xf32>
  %v31 = pc.transpose %v30 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x6x64x32xf32>) -> tensor<32x64x6x32xf32>
  %v32 = pc.reshape %v31 : (tensor<32x64x6x32xf32>) -> tensor<32x64x192xf32>
  %v33 = pc.matmul %v32, %v13 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<32x64x192xf32>
  %v34 = pc.add %v4, %v33 : (tensor<32x64x192xf32>, tensor<32x64x192xf32>) -> tensor<32x64x192xf32>
  %v35 = pc.layer_norm %v34, %v8, %v9 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v36 = pc.matmul %v35, %v14 : (tensor<32x64x192xf32>, tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x768xf32>
  %v37 = pc.gelu %v36 {approximate} : (tensor<32x64x768xf32>) -> tensor<32x64x768xf32>
  %v38 = pc.matmul %v37, %v15 : (tensor<32x64x768xf32>, tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<32x64x192xf32>
  %v39 = pc.add %v34, %v38 : (tensor<32x64x192xf32>, tensor<32x64x192xf32>) -> tensor<32x64x192xf32>
  %v40 = pc.get_param @h1.ln1.weight : tensor<192xf32>
  %v41 = pc.get_param @h1.ln1.bias : tensor<192xf32>
  %v42 = pc.get_param @h1.ln2.weight : tensor<192xf32>
  %v43 = pc.get_param @h1.ln2.bias : tensor<192xf32>
  %v44 = pc.get_param @h1.attn.q : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v45 = pc.get_param @h1.attn.k : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v46 = pc.get_param @h1.attn.v : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v47 = pc.get_param @h1.attn.out : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v48 = pc.get_param @h1.mlp.fc : tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v49 = pc.get_param @h1.mlp.proj : tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v50 = pc.layer_norm %v39, %v40, %v41 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v51 = pc.matmul %v50, %v44 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v52 = pc.reshape %v51 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v53 = pc.transpose %v52 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x64x32xf32>
  %v54 = pc.matmul %v50, %v45 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v55 = pc.reshape %v54 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v56 = pc.transpose %v55 {perm = array<i64: 0, 2, 3, 1>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x32x64xf32>
  %v57 = pc.matmul %v50, %v46 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v58 = pc.reshape %v57 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v59 = pc.transpose %v58 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x64x32xf32>
  %v60 = pc.matmul %v53, %v56 : (tensor<32x6x64x32xf32>, tensor<32x6x32x64xf32>) -> tensor<32x6x64x64xf32>
  %v61 = pc.mul %v60, %v5 : (tensor<32x6x64x64xf32>, tensor<f32>) -> tensor<32x6x64x64xf32>
  %v62 = pc.causal_mask %v61 : (tensor<32x6x64x64xf32>) -> tensor<32x6x64x64xf32>
  %v63 = pc.softmax %v62 {axis = -1 : i64} : (tensor<32x6x64x64xf32>) -> tensor<32x6x64x64xf32>
  %v64 = pc.matmul %v63, %v59 : (tensor<32x6x64x64xf32>, tensor<32x6x64x32xf32>) -> tensor<32x6x64x32xf32>
  %v65 = pc.transpose %v64 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x6x64x32xf32>) -> tensor<32x64x6x32xf32>
  %v66 = pc.reshape %v65 : (tensor<32x64x6x32xf32>) -> tensor<32x64x192xf32>
  %v67 = pc.matmul %v66, %v47 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<32x64x192xf32>
  %v68 = pc.add %v39, %v67 : (tensor<32x64x192xf32>, tensor<32x64x192xf32>) -> tensor<32x64x192xf32>
  %v69 = pc.layer_norm %v68, %v42, %v43 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v70 = pc.matmul %v69, %v48 : (tensor<32x64x192xf32>, tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x768xf32>
  %v71 = pc.gelu %v70 {approximate} : (tensor<32x64x768xf32>) -> tensor<32x64x768xf32>
  %v72 = pc.matmul %v71, %v49 : (tensor<32x64x768xf32>, tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<32x64x192xf32>
  %v73 = pc.add %v68, %v72 : (tensor<32x64x192xf32>, tensor<32x64x192xf32>) -> tensor<32x64x192xf32>
  %v74 = pc.get_param @h2.ln1.weight : tensor<192xf32>
  %v75 = pc.get_param @h2.ln1.bias : tensor<192xf32>
  %v76 = pc.get_param @h2.ln2.weight : tensor<192xf32>
  %v77 = pc.get_param @h2.ln2.bias : tensor<192xf32>
  %v78 = pc.get_param @h2.attn.q : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v79 = pc.get_param @h2.attn.k : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v80 = pc.get_param @h2.attn.v : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v81 = pc.get_param @h2.attn.out : tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v82 = pc.get_param @h2.mlp.fc : tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v83 = pc.get_param @h2.mlp.proj : tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %v84 = pc.layer_norm %v73, %v74, %v75 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v85 = pc.matmul %v84, %v78 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v86 = pc.reshape %v85 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v87 = pc.transpose %v86 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x64x32xf32>
  %v88 = pc.matmul %v84, %v79 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v89 = pc.reshape %v88 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v90 = pc.transpose %v89 {perm = array<i64: 0, 2, 3, 1>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x32x64xf32>
  %v91 = pc.matmul %v84, %v80 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x192xf32>
  %v92 = pc.reshape %v91 : (tensor<32x64x192xf32>) -> tensor<32x64x6x32xf32>
  %v93 = pc.transpose %v92 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x64x6x32xf32>) -> tensor<32x6x64x32xf32>
  %v94 = pc.matmul %v87, %v90 : (tensor<32x6x64x32xf32>, tensor<32x6x32x64xf32>) -> tensor<32x6x64x64xf32>
  %v95 = pc.mul %v94, %v5 : (tensor<32x6x64x64xf32>, tensor<f32>) -> tensor<32x6x64x64xf32>
  %v96 = pc.causal_mask %v95 : (tensor<32x6x64x64xf32>) -> tensor<32x6x64x64xf32>
  %v97 = pc.softmax %v96 {axis = -1 : i64} : (tensor<32x6x64x64xf32>) -> tensor<32x6x64x64xf32>
  %v98 = pc.matmul %v97, %v93 : (tensor<32x6x64x64xf32>, tensor<32x6x64x32xf32>) -> tensor<32x6x64x32xf32>
  %v99 = pc.transpose %v98 {perm = array<i64: 0, 2, 1, 3>} : (tensor<32x6x64x32xf32>) -> tensor<32x64x6x32xf32>
  %v100 = pc.reshape %v99 : (tensor<32x64x6x32xf32>) -> tensor<32x64x192xf32>
  %v101 = pc.matmul %v100, %v81 : (tensor<32x64x192xf32>, tensor<192x192xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<32x64x192xf32>
  %v102 = pc.add %v73, %v101 : (tensor<32x64x192xf32>, tensor<32x64x192xf32>) -> tensor<32x64x192xf32>
  %v103 = pc.layer_norm %v102, %v76, %v77 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v104 = pc.matmul %v103, %v82 : (tensor<32x64x192xf32>, tensor<192x768xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x768xf32>
  %v105 = pc.gelu %v104 {approximate} : (tensor<32x64x768xf32>) -> tensor<32x64x768xf32>
  %v106 = pc.matmul %v105, %v83 : (tensor<32x64x768xf32>, tensor<768x192xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<32x64x192xf32>
  %v107 = pc.add %v102, %v106 : (tensor<32x64x192xf32>, tensor<32x64x192xf32>) -> tensor<32x64x192xf32>
  %v108 = pc.get_param @lnf.weight : tensor<192xf32>
  %v109 = pc.get_param @lnf.bias : tensor<192xf32>
  %v110 = pc.get_param @head : tensor<192x256xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %v111 = pc.layer_norm %v107, %v108, %v109 : (tensor<32x64x192xf32>, tensor<192xf32>, tensor<192xf32>) -> tensor<32x64x192xf32>
  %v112 = pc.matmul %v111, %v110 : (tensor<32x64x192xf32>, tensor<192x256xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<32x64x256xf32>
  %v113 = pc.cross_entropy %v112, %labels : (tensor<32x64x256xf32>, tensor<32x64xi64, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<32x64xf32>
  %v114 = pc.reduce_mean %v113 {axes = array<i64: 0, 1>} : (tensor<32x64xf32>) -> tensor<f32>
  return %v114 : tensor<f32>
}
