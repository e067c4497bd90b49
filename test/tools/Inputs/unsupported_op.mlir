// A hand-written per-device program that still holds a layout conversion
// (pc.to_sbp), which only the compiler lowers: no backend runs it, and
// pc-run says so before anything runs.
pc.mesh @mesh <["dp"=2]>
func.func @f.part0(%x: tensor<4x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>}) -> (tensor<4x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  %0 = pc.to_sbp %x : (tensor<4x4xf32>) -> tensor<4x4xf32, #pc.sbp<@mesh, [B]>>
  %1 = pc.relu %0 : (tensor<4x4xf32, #pc.sbp<@mesh, [B]>>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
