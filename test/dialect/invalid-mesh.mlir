// RUN: pc-opt %s --split-input-file --verify-diagnostics

// Every rule of pc.mesh, pc.param and pc.get_param has a test.

// expected-error @+1 {{'pc.mesh' op needs at least one axis}}
pc.mesh @m <[]>

// -----

// expected-error @+1 {{'pc.mesh' op has a duplicate axis name "dp"}}
pc.mesh @m <["dp"=2, "dp"=4]>

// -----

// expected-error @+1 {{'pc.mesh' op axis "tp" has size 0; mesh axis sizes must be at least 1}}
pc.mesh @m <["dp"=2, "tp"=0]>

// -----

// expected-error @+1 {{'pc.mesh' op axis "dp" has size -2; mesh axis sizes must be at least 1}}
pc.mesh @m <["dp"=-2]>

// -----

// expected-error @+1 {{'pc.mesh' op has an axis with an empty name}}
pc.mesh @m <[""=2]>

// -----

// expected-error @+1 {{'pc.mesh' op has 1 axis names but 2 sizes}}
"pc.mesh"() <{sym_name = "m", axis_names = ["a"], shape = array<i64: 2, 2>}> : () -> ()

// -----

// expected-error @+1 {{unknown device kind 'tpu'; expected cpu or cuda}}
pc.mesh @m <["dp"=2]> on tpu

// -----

// expected-error @+1 {{'pc.mesh' op lists 3 ranks but its shape has 4 devices}}
pc.mesh @m <["dp"=2, "tp"=2]> ranks [0, 1, 2]

// -----

// expected-error @+1 {{'pc.mesh' op lists the negative rank -1}}
pc.mesh @m <["dp"=2]> ranks [0, -1]

// -----

// expected-error @+1 {{'pc.mesh' op lists rank 3 twice}}
pc.mesh @m <["dp"=2]> ranks [3, 3]

// -----

func.func @f() {
  // expected-error @+1 {{'pc.mesh' op expects parent op 'builtin.module'}}
  pc.mesh @m <["dp"=2]>
  return
}

// -----

// expected-error @+1 {{'pc.param' op has the dynamic shape 'tensor<?xf32>'; pc needs static shapes to plan layouts}}
pc.param @w : tensor<?xf32> = #pc.init<zeros>

// -----

// expected-error @+1 {{'pc.param' op has the encoding 1 : i64, which is not a #pc.sbp layout}}
pc.param @w : tensor<4xf32, 1 : i64> = #pc.init<zeros>

// -----

// expected-error @+1 {{'pc.param' op initializer #pc.init<normal(std = 1.000000e+00)> needs a floating-point parameter, not 'tensor<4xi64>'}}
pc.param @w : tensor<4xi64> = #pc.init<normal(std = 1.0)>

// -----

// expected-error @+1 {{'pc.param' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of}}
pc.param @w : tensor<4xf64> = #pc.init<zeros>

// -----

// expected-error @+1 {{'pc.param' op type of type 'tensor<4xf32, #pc.sbp<@q, [B]>>' refers to unknown mesh @q}}
pc.param @w : tensor<4xf32, #pc.sbp<@q, [B]>> = #pc.init<zeros>

// -----

pc.mesh @m <["dp"=2, "tp"=2]>
// expected-error @+1 {{'pc.param' op type of type 'tensor<4xf32, #pc.sbp<@m, [B]>>': SBP [B] has 1 entries but mesh @m has 2 axes}}
pc.param @w : tensor<4xf32, #pc.sbp<@m, [B]>> = #pc.init<zeros>

// -----

func.func @f() {
  // expected-error @+1 {{'pc.get_param' op refers to unknown parameter @w}}
  %0 = pc.get_param @w : tensor<4xf32>
  return
}

// -----

pc.mesh @m <["dp"=2]>
func.func @f() {
  // expected-error @+1 {{'pc.get_param' op refers to @m, which is a 'pc.mesh', not a pc.param}}
  %0 = pc.get_param @m : tensor<4xf32>
  return
}

// -----

pc.mesh @m <["dp"=2]>
pc.param @w : tensor<4xf32, #pc.sbp<@m, [S(0)]>> = #pc.init<zeros>
func.func @f() {
  // expected-error @+1 {{'pc.get_param' op result type 'tensor<4xf32, #pc.sbp<@m, [B]>>' differs from the type 'tensor<4xf32, #pc.sbp<@m, [S(0)]>>' of parameter @w}}
  %0 = pc.get_param @w : tensor<4xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

// expected-error @+1 {{'pc.mesh' op has more than 1048576 devices, the most pc supports}}
pc.mesh @m <["x"=4294967296, "y"=2]>

// -----

// expected-error @+1 {{'pc.mesh' op has 9 axes; pc meshes have at most 8}}
pc.mesh @m <["a"=1, "b"=1, "c"=1, "d"=1, "e"=1, "f"=1, "g"=1, "h"=1, "i"=2]>

// -----

// expected-error @+1 {{'pc.param' op has the shape 'tensor<9223372036854775807x2xf32>', which has more elements than pc supports (2^48)}}
pc.param @w : tensor<9223372036854775807x2xf32> = #pc.init<zeros>

// -----

// Sizes whose product overflows 64 bits are refused, not wrapped around.
// expected-error @+1 {{'pc.mesh' op has more than 1048576 devices, the most pc supports}}
pc.mesh @overflow <["a"=2, "b"=9223372036854775807]>
