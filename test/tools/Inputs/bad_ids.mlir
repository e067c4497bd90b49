// An embedding whose ids are read per rank, then a sum that every rank needs:
// a rank that fails on a bad id must release the other, waiting in the
// all-reduce, and the run must end with the failing op's error.
pc.mesh @mesh <["dp"=2]>
pc.param @table : tensor<16x4xf32, #pc.sbp<@mesh, [B]>> = #pc.init<normal(std = 1.0)>
func.func @lookup(%ids: tensor<4xi64, #pc.sbp<@mesh, [S(0)]>> {pc.name = "ids"})
    -> tensor<4xf32, #pc.sbp<@mesh, [B]>> {
  %t = pc.get_param @table : tensor<16x4xf32, #pc.sbp<@mesh, [B]>>
  %e = pc.embedding %ids, %t : (tensor<4xi64, #pc.sbp<@mesh, [S(0)]>>, tensor<16x4xf32, #pc.sbp<@mesh, [B]>>) -> tensor<4x4xf32, #pc.sbp<@mesh, [S(0)]>>
  %s = pc.reduce_sum %e {axes = array<i64: 0>} : (tensor<4x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> tensor<4xf32, #pc.sbp<@mesh, [P]>>
  %b = pc.to_sbp %s : (tensor<4xf32, #pc.sbp<@mesh, [P]>>) -> tensor<4xf32, #pc.sbp<@mesh, [B]>>
  return %b : tensor<4xf32, #pc.sbp<@mesh, [B]>>
}
