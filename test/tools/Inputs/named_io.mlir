// Named inputs and outputs: pc-run reads x.npy and writes y.npy and out1.npy.
pc.mesh @mesh <["dp"=2]>
func.func @named(%x: tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>> {pc.name = "x"},
                 %b: tensor<4xf32, #pc.sbp<@mesh, [B]>>)
    -> (tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>> {pc.name = "y"},
        tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>) {
  %y = pc.relu %x : (tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>) -> tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>
  %z = pc.add %x, %b : (tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>, tensor<4xf32, #pc.sbp<@mesh, [B]>>) -> tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>
  return %y, %z : tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>, tensor<6x4xf32, #pc.sbp<@mesh, [S(0)]>>
}
