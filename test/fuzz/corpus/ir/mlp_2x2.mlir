// A two-layer MLP on a 2x2 mesh: data parallel over "dp", Megatron-style
// tensor parallel over "tp". The first weight is split by columns and the
// second by rows, so the hidden activation stays split over "tp" and the
// second matmul yields a partial sum that one all-reduce over "tp" resolves.
//
//   pc-opt examples/mlp_2x2.mlir

pc.mesh @mesh <["dp"=2, "tp"=2]>

pc.param @fc1.weight : tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>>
    = #pc.init<normal(std = 0.02)>
pc.param @fc1.bias : tensor<1024xf32, #pc.sbp<@mesh, [B, S(0)]>>
    = #pc.init<zeros>
pc.param @fc2.weight : tensor<1024x256xf32, #pc.sbp<@mesh, [B, S(0)]>>
    = #pc.init<normal(std = 0.02)>
pc.param @fc2.bias : tensor<256xf32, #pc.sbp<@mesh, [B, B]>>
    = #pc.init<zeros>

func.func @mlp(%x: tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>,
               %labels: tensor<64xi64, #pc.sbp<@mesh, [S(0), B]>>)
    -> tensor<f32, #pc.sbp<@mesh, [P, B]>> {
  %w1 = pc.get_param @fc1.weight : tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %b1 = pc.get_param @fc1.bias : tensor<1024xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %w2 = pc.get_param @fc2.weight : tensor<1024x256xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %b2 = pc.get_param @fc2.bias : tensor<256xf32, #pc.sbp<@mesh, [B, B]>>

  %h = pc.matmul %x, %w1
      : (tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>,
         tensor<256x1024xf32, #pc.sbp<@mesh, [B, S(1)]>>)
      -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
  %hb = pc.add %h, %b1
      : (tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>,
         tensor<1024xf32, #pc.sbp<@mesh, [B, S(0)]>>)
      -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
  %a = pc.gelu %hb {approximate}
      : (tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>)
      -> tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>
  %y = pc.matmul %a, %w2
      : (tensor<64x1024xf32, #pc.sbp<@mesh, [S(0), S(1)]>>,
         tensor<1024x256xf32, #pc.sbp<@mesh, [B, S(0)]>>)
      -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), P]>>
  %yr = pc.to_sbp %y
      : (tensor<64x256xf32, #pc.sbp<@mesh, [S(0), P]>>)
      -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>
  %yb = pc.add %yr, %b2
      : (tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>,
         tensor<256xf32, #pc.sbp<@mesh, [B, B]>>)
      -> tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>
  %loss = pc.cross_entropy %yb, %labels
      : (tensor<64x256xf32, #pc.sbp<@mesh, [S(0), B]>>,
         tensor<64xi64, #pc.sbp<@mesh, [S(0), B]>>)
      -> tensor<64xf32, #pc.sbp<@mesh, [S(0), B]>>
  %mean = pc.reduce_mean %loss {axes = array<i64: 0>}
      : (tensor<64xf32, #pc.sbp<@mesh, [S(0), B]>>)
      -> tensor<f32, #pc.sbp<@mesh, [P, B]>>
  return %mean : tensor<f32, #pc.sbp<@mesh, [P, B]>>
}
