// Two meshes: pc-plan resizes one mesh and copies it per stage, so it
// refuses this.
pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = pc.relu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
