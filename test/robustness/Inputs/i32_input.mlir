// An i32 input, for the exact-conversion check (hostile-files.test).
pc.mesh @m <["x"=2]>
func.func @f(%i: tensor<4xi32, #pc.sbp<@m, [S(0)]>>) -> tensor<4xi32> {
  %n = pc.neg %i : (tensor<4xi32, #pc.sbp<@m, [S(0)]>>) -> tensor<4xi32>
  return %n : tensor<4xi32>
}
