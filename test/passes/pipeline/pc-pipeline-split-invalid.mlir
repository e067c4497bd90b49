// RUN: pc-opt %s -split-input-file -verify-diagnostics --pc-pipeline-split

pc.mesh @m <["x"=1]>
func.func @later(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = pc.tanh %x {pc.stage = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-error @+1 {{'pc.exp' op in pipeline stage 0 uses a value of stage 1 ('pc.tanh'); a stage may only use values of its own and earlier stages}}
  %b = pc.exp %a {pc.stage = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %b : tensor<4x4xf32>
}

// -----

pc.mesh @m <["x"=1]>
// expected-error @+1 {{'func.func' op lists 1 stage meshes for 2 device stages}}
func.func @count(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {pc.stage_meshes = [@m]} {
  %a = pc.tanh %x {pc.stage = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = pc.exp %a {pc.stage = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %b : tensor<4x4xf32>
}

// -----

pc.mesh @m <["x"=1]>
// expected-error @+1 {{'func.func' op names @nope as a stage mesh, but it is not a pc.mesh}}
func.func @missing(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {pc.stage_meshes = [@m, @nope]} {
  %a = pc.tanh %x {pc.stage = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = pc.exp %a {pc.stage = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %b : tensor<4x4xf32>
}

// -----

pc.mesh @m <["x"=1]>
pc.mesh @n <["x"=1]> ranks [1]
// expected-error @+1 {{'func.func' op needs its stage meshes: give 'pc.stage_meshes', or declare exactly one mesh to copy per stage (the module has 2)}}
func.func @which(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = pc.tanh %x {pc.stage = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = pc.exp %a {pc.stage = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %b : tensor<4x4xf32>
}
