// A parameter larger than any machine's memory (hostile-files.test).
pc.mesh @m <["x"=2]>
pc.param @w : tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>> = #pc.init<normal(std = 1.0)>
func.func @f(%x: tensor<4xf32, #pc.sbp<@m, [B]>>) -> tensor<4xf32> {
  %w = pc.get_param @w : tensor<1000000000000xf32, #pc.sbp<@m, [S(0)]>>
  %y = pc.relu %x : (tensor<4xf32, #pc.sbp<@m, [B]>>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
