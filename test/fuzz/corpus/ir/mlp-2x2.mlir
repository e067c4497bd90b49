pc.mesh @mesh <["dp"=2, "tp"=2]>
pc.param @w1 : tensor<16x32xf32, #pc.sbp<@mesh, [B, S(1)]>> = #pc.init<normal(std = 0.3)>
pc.param @b1 : tensor<32xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<zeros>
pc.param @w2 : tensor<32x10xf32, #pc.sbp<@mesh, [B, S(0)]>> = #pc.init<normal(std = 0.3)>
pc.param @b2 : tensor<10xf32, #pc.sbp<@mesh, [B, B]>> = #pc.init<zeros>
func.func @mlp(%x: tensor<8x16xf32, #pc.sbp<@mesh, [S(0), B]>> {pc.name = "x"}, %y: tensor<8xi64, #pc.sbp<@mesh, [S(0), B]>> {pc.name = "y"}) -> (tensor<f32> {pc.loss}) {
  %w1 = pc.get_param @w1 : tensor<16x32xf32, #pc.sbp<@mesh, [B, S(1)]>>
  %b1 = pc.get_param @b1 : tensor<32xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %w2 = pc.get_param @w2 : tensor<32x10xf32, #pc.sbp<@mesh, [B, S(0)]>>
  %b2 = pc.get_param @b2 : tensor<10xf32, #pc.sbp<@mesh, [B, B]>>
  %h = pc.matmul %x, %w1 : (tensor<8x16xf32, #pc.sbp<@mesh, [S(0), B]>>, tensor<16x32xf32, #pc.sbp<@mesh, [B, S(1)]>>) -> tensor<8x32xf32>
  %hb = pc.add %h, %b1 : (tensor<8x32xf32>, tensor<32xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<8x32xf32>
  %a = pc.gelu %hb {approximate} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %z = pc.matmul %a, %w2 : (tensor<8x32xf32>, tensor<32x10xf32, #pc.sbp<@mesh, [B, S(0)]>>) -> tensor<8x10xf32>
  %zb = pc.add %z, %b2 : (tensor<8x10xf32>, tensor<10xf32, #pc.sbp<@mesh, [B, B]>>) -> tensor<8x10xf32>
  %l = pc.cross_entropy %zb, %y : (tensor<8x10xf32>, tensor<8xi64, #pc.sbp<@mesh, [S(0), B]>>) -> tensor<8xf32>
  %loss = pc.reduce_mean %l {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
