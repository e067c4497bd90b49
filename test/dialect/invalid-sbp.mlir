// RUN: pc-opt %s --split-input-file --verify-diagnostics

// Every rule of #pc.sbp and #pc.init, and of SBP-encoded values, has a test.

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{expected an SBP entry: S(dim), B, P or P(sum|max|min|avg)}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, [1, B]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{unknown SBP entry 'Q'; expected S(dim), B, P or P(sum|max|min|avg)}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, [Q, B]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{unknown reduction 'prod' in P(...); expected sum, max, min or avg}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, [P(prod), B]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{an SBP needs one entry per axis of mesh @m; it has none}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, []>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{split dim -1 of SBP entry #1 must be non-negative}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, [B, S(-1)]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{split dim 16 of SBP entry #1 is past 15, the last dim pc splits}}
func.func @f(%x: tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x4xf32, #pc.sbp<@m, [B, S(16)]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{split dim 3 of SBP entry #0 in #pc.sbp<@m, [S(3), B]> is out of range for a rank-2 tensor}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, [S(3), B]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{P(avg) in #pc.sbp<@m, [P(avg), B]> needs a floating-point element type, not 'i64'}}
func.func @f(%x: tensor<4x4xi64, #pc.sbp<@m, [P(avg), B]>>)

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{'func.func' op argument #0 of type 'tensor<4x4xf32, #pc.sbp<@m, [S(0), B, B]>>': SBP [S(0), B, B] has 3 entries but mesh @m has 2 axes}}
func.func @f(%x: tensor<4x4xf32, #pc.sbp<@m, [S(0), B, B]>>) {
  return
}

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{'func.func' op result #0 of type 'tensor<4xf32, #pc.sbp<@m, [B]>>': SBP [B] has 1 entries but mesh @m has 2 axes}}
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32, #pc.sbp<@m, [B]>>

// -----

// expected-error @+1 {{'func.func' op argument #0 of type 'tensor<4xf32, #pc.sbp<@q, [B]>>' refers to unknown mesh @q}}
func.func @f(%x: tensor<4xf32, #pc.sbp<@q, [B]>>) {
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.relu' op result #0 of type 'tensor<4xf32, #pc.sbp<@q, [B]>>' refers to unknown mesh @q}}
  %0 = pc.relu %x : (tensor<4xf32>) -> tensor<4xf32, #pc.sbp<@q, [B]>>
  return %x : tensor<4xf32>
}

// -----

pc.param @w : tensor<4xf32> = #pc.init<zeros>
// expected-error @+1 {{'func.func' op argument #0 of type 'tensor<4xf32, #pc.sbp<@w, [B]>>' refers to @w, which is a 'pc.param', not a pc.mesh}}
func.func @f(%x: tensor<4xf32, #pc.sbp<@w, [B]>>) {
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<4xf32, #pc.sbp<@a, [B]>>, %y: tensor<4xf32, #pc.sbp<@b, [B]>>) {
  // expected-error @+1 {{'pc.add' op operand #1 is on mesh @b but operand #0 is on mesh @a; a logical op runs on one mesh, so move the value with pc.to_sbp}}
  %0 = pc.add %x, %y : (tensor<4xf32, #pc.sbp<@a, [B]>>, tensor<4xf32, #pc.sbp<@b, [B]>>) -> tensor<4xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<4xf32, #pc.sbp<@a, [B]>>) {
  // expected-error @+1 {{'pc.exp' op result #0 is on mesh @b but operand #0 is on mesh @a}}
  %0 = pc.exp %x : (tensor<4xf32, #pc.sbp<@a, [B]>>) -> tensor<4xf32, #pc.sbp<@b, [B]>>
  return
}

// -----

func.func @f(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'pc.relu' op operand #0 has the dynamic shape 'tensor<?x4xf32>'; pc needs static shapes to plan layouts}}
  %0 = pc.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32, 1 : i64>) {
  // expected-error @+1 {{'pc.relu' op operand #0 has the encoding 1 : i64, which is not a #pc.sbp layout}}
  %0 = pc.relu %x : (tensor<4xf32, 1 : i64>) -> tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{unknown initializer 'xavier'; expected zeros, ones, constant, normal, truncated_normal or uniform}}
pc.param @w : tensor<4xf32> = #pc.init<xavier>

// -----

// expected-error @+1 {{#pc.init<normal> has no parameter 'scale'}}
pc.param @w : tensor<4xf32> = #pc.init<normal(scale = 1.0)>

// -----

// expected-error @+1 {{#pc.init<normal> needs the parameter 'std'}}
pc.param @w : tensor<4xf32> = #pc.init<normal(mean = 1.0)>

// -----

// expected-error @+1 {{#pc.init<constant> needs the parameter 'value'}}
pc.param @w : tensor<4xf32> = #pc.init<constant>

// -----

// expected-error @+1 {{#pc.init<uniform> needs the parameter 'high'}}
pc.param @w : tensor<4xf32> = #pc.init<uniform(low = 0.0)>

// -----

// expected-error @+1 {{#pc.init<zeros> has no parameter 'value'}}
pc.param @w : tensor<4xf32> = #pc.init<zeros(value = 1.0)>

// -----

// expected-error @+1 {{#pc.init<normal> needs std > 0, not 0}}
pc.param @w : tensor<4xf32> = #pc.init<normal(std = 0.0)>

// -----

// expected-error @+1 {{#pc.init<uniform> needs low < high, not low = 1.000000e+00 and high = -1.000000e+00}}
pc.param @w : tensor<4xf32> = #pc.init<uniform(low = 1.0, high = -1.0)>

// -----

// expected-error @+1 {{#pc.init<constant> parameters must be finite}}
pc.param @w : tensor<4xf32> = #pc.init<constant(value = 0x7FF0000000000000)>

// -----

func.func @f(%x: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{'pc.relu' op operand #0 has the shape 'tensor<4294967296x4294967296xf32>', which has more elements than pc supports (2^48)}}
  %0 = pc.relu %x : (tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  return
}
