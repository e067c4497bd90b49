// Two stages on two meshes: the value crosses between them through
// pc.send/pc.recv pairs.
pc.mesh @s0 <["x"=2]> ranks [0, 1]
pc.mesh @s1 <["x"=2]> ranks [2, 3]
func.func @stages(%x: tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@s1, [B]>> {
  %a = pc.relu %x : (tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>
  %b = pc.transfer %a : (tensor<8x8xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<8x8xf32, #pc.sbp<@s1, [B]>>
  %c = pc.tanh %b : (tensor<8x8xf32, #pc.sbp<@s1, [B]>>) -> tensor<8x8xf32, #pc.sbp<@s1, [B]>>
  return %c : tensor<8x8xf32, #pc.sbp<@s1, [B]>>
}
