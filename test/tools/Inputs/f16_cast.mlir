// Casts to f16 and bf16, on two devices; the bf16 result goes through a
// relu (computed in f32, rounded once) and an all-gather.
pc.mesh @mesh <["dp"=2]>
func.func @half(%x: tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> (tensor<8x4xf16, #pc.sbp<@mesh, [S(0)]>>, tensor<8x4xbf16, #pc.sbp<@mesh, [B]>>) {
  %h = pc.cast %x : (tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> tensor<8x4xf16, #pc.sbp<@mesh, [S(0)]>>
  %b = pc.cast %x : (tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> tensor<8x4xbf16, #pc.sbp<@mesh, [S(0)]>>
  %r = pc.relu %b : (tensor<8x4xbf16, #pc.sbp<@mesh, [S(0)]>>) -> tensor<8x4xbf16, #pc.sbp<@mesh, [B]>>
  return %h, %r : tensor<8x4xf16, #pc.sbp<@mesh, [S(0)]>>, tensor<8x4xbf16, #pc.sbp<@mesh, [B]>>
}
