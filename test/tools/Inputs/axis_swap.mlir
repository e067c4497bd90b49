// An axis swap on a 2x2 mesh: the boxing planner moves it as one
// redistribution (pc.redistribute per device), in which the off-diagonal
// devices receive their whole new piece and the diagonal ones nothing.
pc.mesh @m <["a"=2, "b"=2]>
func.func @swap(%x: tensor<12x10xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<12x10xf32, #pc.sbp<@m, [S(1), S(0)]>> {
  %s = pc.to_sbp %x : (tensor<12x10xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<12x10xf32, #pc.sbp<@m, [S(1), S(0)]>>
  %n = pc.neg %s : (tensor<12x10xf32, #pc.sbp<@m, [S(1), S(0)]>>) -> tensor<12x10xf32, #pc.sbp<@m, [S(1), S(0)]>>
  return %n : tensor<12x10xf32, #pc.sbp<@m, [S(1), S(0)]>>
}
