// An input larger than any machine's memory (hostile-files.test).
pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>> {
  %y = pc.relu %x : (tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>>
  return %y : tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>>
}
