// An f16 result: the CPU backend has no f16 kernels yet, and pc-run says so.
pc.mesh @mesh <["dp"=2]>
func.func @half(%x: tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> tensor<8x4xf16, #pc.sbp<@mesh, [S(0)]>> {
  %h = pc.cast %x : (tensor<8x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> tensor<8x4xf16, #pc.sbp<@mesh, [S(0)]>>
  return %h : tensor<8x4xf16, #pc.sbp<@mesh, [S(0)]>>
}
