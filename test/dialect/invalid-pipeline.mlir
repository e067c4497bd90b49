// RUN: pc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{#pc.pipeline: unknown schedule '2f2b'; expected gpipe, 1f1b, interleaved or zb-h1}}
func.func @f() attributes {pc.pipeline = #pc.pipeline<schedule = "2f2b", stages = 2, micro_batches = 4, virtual_stages = 1>} {
  return
}

// -----

// expected-error @+1 {{#pc.pipeline: only the interleaved schedule has virtual stages; 1f1b has 1, not 2}}
func.func @f() attributes {pc.pipeline = #pc.pipeline<schedule = "1f1b", stages = 2, micro_batches = 4, virtual_stages = 2>} {
  return
}

// -----

// expected-error @+1 {{#pc.pipeline: a pipeline needs at least 1 micro-batch, not 0}}
func.func @f() attributes {pc.pipeline = #pc.pipeline<schedule = "gpipe", stages = 2, micro_batches = 0, virtual_stages = 1>} {
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{#pc.action needs a stage and a micro-batch of at least 0, not -1 and 0}}
  %a = pc.tanh %x {pc.action = #pc.action<F, -1, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.tanh' op 'pc.stage' is a model stage: an integer from 0 to 2^20 - 1}}
  %a = pc.tanh %x {pc.stage = -1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// The largest stage plus one is the stage count: it must not overflow.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.tanh' op 'pc.stage' is a model stage: an integer from 0 to 2^20 - 1}}
  %a = pc.tanh %x {pc.stage = 9223372036854775807 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op 'pc.schedule' must be an array of #pc.action on a func.func}}
func.func @f() attributes {pc.schedule = [1, 2]} {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.stage_meshes' must be a non-empty array of mesh symbols on a func.func}}
func.func @f() attributes {pc.stage_meshes = []} {
  return
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.tanh' op 'pc.pipeline' must be a #pc.pipeline on a func.func}}
  %a = pc.tanh %x {pc.pipeline = 1} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.tanh' op 'pc.action' must be a #pc.action}}
  %a = pc.tanh %x {pc.action = 3} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

pc.mesh @m <["x"=1]>
// expected-error @+1 {{'func.func' op names @nope as a stage mesh, but it is not a pc.mesh}}
func.func @f() attributes {pc.stage_meshes = [@m, @nope]} {
  return
}
