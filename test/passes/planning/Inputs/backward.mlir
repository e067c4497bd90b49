// A data-parallel backward in miniature: a chain of exponentials on 4
// devices, every 4th value reduced over them (a gradient's all-reduce),
// the reduced values added up at the end. The all-reduces can overlap
// the rest of the chain.
pc.mesh @m <["x"=4]>
func.func @backward(%x: tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>> {
  %y0 = pc.exp %x : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y1 = pc.exp %y0 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y2 = pc.exp %y1 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y3 = pc.exp %y2 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %s0 = pc.reduce_sum %y3 {axes = array<i64: 0>, keepdim} : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<1xf32, #pc.sbp<@m, [P]>>
  %b0 = pc.to_sbp %s0 : (tensor<1xf32, #pc.sbp<@m, [P]>>) -> tensor<1xf32, #pc.sbp<@m, [B]>>
  %y4 = pc.exp %y3 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y5 = pc.exp %y4 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y6 = pc.exp %y5 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y7 = pc.exp %y6 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %s1 = pc.reduce_sum %y7 {axes = array<i64: 0>, keepdim} : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<1xf32, #pc.sbp<@m, [P]>>
  %b1 = pc.to_sbp %s1 : (tensor<1xf32, #pc.sbp<@m, [P]>>) -> tensor<1xf32, #pc.sbp<@m, [B]>>
  %y8 = pc.exp %y7 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y9 = pc.exp %y8 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y10 = pc.exp %y9 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y11 = pc.exp %y10 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %s2 = pc.reduce_sum %y11 {axes = array<i64: 0>, keepdim} : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<1xf32, #pc.sbp<@m, [P]>>
  %b2 = pc.to_sbp %s2 : (tensor<1xf32, #pc.sbp<@m, [P]>>) -> tensor<1xf32, #pc.sbp<@m, [B]>>
  %y12 = pc.exp %y11 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y13 = pc.exp %y12 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y14 = pc.exp %y13 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %y15 = pc.exp %y14 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %s3 = pc.reduce_sum %y15 {axes = array<i64: 0>, keepdim} : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<1xf32, #pc.sbp<@m, [P]>>
  %b3 = pc.to_sbp %s3 : (tensor<1xf32, #pc.sbp<@m, [P]>>) -> tensor<1xf32, #pc.sbp<@m, [B]>>
  %a0 = pc.add %y15, %b0 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>, tensor<1xf32, #pc.sbp<@m, [B]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %a1 = pc.add %a0, %b1 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>, tensor<1xf32, #pc.sbp<@m, [B]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %a2 = pc.add %a1, %b2 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>, tensor<1xf32, #pc.sbp<@m, [B]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  %a3 = pc.add %a2, %b3 : (tensor<32xf32, #pc.sbp<@m, [S(0)]>>, tensor<1xf32, #pc.sbp<@m, [B]>>) -> tensor<32xf32, #pc.sbp<@m, [S(0)]>>
  return %a3 : tensor<32xf32, #pc.sbp<@m, [S(0)]>>
}
