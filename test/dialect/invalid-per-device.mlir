// RUN: pc-opt %s --split-input-file --verify-diagnostics

// A per-device program's rank-dependent types are, for every rank it runs
// on, that rank's piece: the runtime hands each rank its pieces and its
// kernels trust the local types.

// Uneven pieces are fine when each rank's program has its own: of 5
// elements split in two, rank 0 holds 3 and rank 1 holds 2.
pc.mesh @m <["x"=2]>
func.func @f.part0(%arg0: tensor<3xf32> {pc.index = 0 : i64, pc.logical_type = tensor<5xf32, #pc.sbp<@m, [S(0)]>>}) -> (tensor<3xf32> {pc.index = 0 : i64, pc.logical_type = tensor<5xf32, #pc.sbp<@m, [S(0)]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0>} {
  return %arg0 : tensor<3xf32>
}
func.func @f.part1(%arg0: tensor<2xf32> {pc.index = 0 : i64, pc.logical_type = tensor<5xf32, #pc.sbp<@m, [S(0)]>>}) -> (tensor<2xf32> {pc.index = 0 : i64, pc.logical_type = tensor<5xf32, #pc.sbp<@m, [S(0)]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 1>} {
  return %arg0 : tensor<2xf32>
}

// -----

// One program for both ranks, but rank 1's piece is smaller.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op has argument #0 of type 'tensor<3xf32>', but rank 1's piece of 'tensor<5xf32, #pc.sbp<@m, [S(0)]>>' is 'tensor<2xf32>'}}
func.func @f.part0(%arg0: tensor<3xf32> {pc.index = 0 : i64, pc.logical_type = tensor<5xf32, #pc.sbp<@m, [S(0)]>>}) -> (tensor<3xf32> {pc.index = 0 : i64, pc.logical_type = tensor<5xf32, #pc.sbp<@m, [S(0)]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  return %arg0 : tensor<3xf32>
}

// -----

// A result of the whole logical shape where the layout splits it.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op has result #0 of type 'tensor<4xf32>', but rank 0's piece of 'tensor<4xf32, #pc.sbp<@m, [S(0)]>>' is 'tensor<2xf32>'}}
func.func @f.part0(%arg0: tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) -> (tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [S(0)]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  return %arg0 : tensor<4xf32>
}

// -----

// Another element type than the logical value's.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op has argument #0 of type 'tensor<4xi32>', but rank 0's piece of 'tensor<4xf32, #pc.sbp<@m, [B]>>' is 'tensor<4xf32>'}}
func.func @f.part0(%arg0: tensor<4xi32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  return
}

// -----

// A rank that is not on the mesh of its arguments.
pc.mesh @m <["x"=2]>
pc.mesh @other <["x"=2]> ranks [2, 3]
// expected-error @+1 {{'func.func' op runs on rank 2 (pc.ranks of @f.part0), which is not on mesh @m that the layout of argument #0 uses}}
func.func @f.part0(%arg0: tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 2>} {
  return
}

// -----

// A logical type on a mesh that does not exist.
// expected-error @+1 {{'func.func' op 'pc.logical_type' of argument #0 of type 'tensor<4xf32, #pc.sbp<@nowhere, [B]>>' refers to unknown mesh @nowhere}}
func.func @f.part0(%arg0: tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@nowhere, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0>} {
  return
}

// -----

// A logical type whose layout does not fit its mesh.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op 'pc.logical_type' of result #0 of type 'tensor<4xf32, #pc.sbp<@m, [B, B]>>': }}
func.func @f.part0() -> (tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B, B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0>} {
  %0 = pc.constant dense<1.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A parameter's value in a per-device program is the rank's piece of it.
pc.mesh @m <["x"=2]>
pc.param @w : tensor<4x6xf32, #pc.sbp<@m, [S(1)]>> = #pc.init<zeros>
func.func @f.part0() attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  // expected-error @+1 {{'pc.get_param' op has the value of @w of type 'tensor<4x2xf32>', but rank 0's piece of 'tensor<4x6xf32, #pc.sbp<@m, [S(1)]>>' is 'tensor<4x3xf32>'}}
  %0 = pc.get_param @w : tensor<4x2xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
pc.param @w : tensor<4x6xf32, #pc.sbp<@m, [S(1)]>> = #pc.init<zeros>
func.func @f.part0() attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  %0 = pc.constant dense<1.0> : tensor<4x6xf32>
  // expected-error @+1 {{'pc.set_param' op has the value of @w of type 'tensor<4x6xf32>', but rank 0's piece of 'tensor<4x6xf32, #pc.sbp<@m, [S(1)]>>' is 'tensor<4x3xf32>'}}
  pc.set_param @w, %0 : tensor<4x6xf32>
  return
}

// -----

// A send sends the rank's piece of `from`; a receive receives its piece of
// `to`.
pc.mesh @a <["x"=2]>
pc.mesh @b <["y"=2]> ranks [2, 3]
func.func @f.part0(%arg0: tensor<10x6xf32> {pc.index = 0 : i64, pc.logical_type = tensor<10x6xf32, #pc.sbp<@a, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  // expected-error @+1 {{'pc.send' op has the operand of type 'tensor<10x6xf32>', but rank 0's piece of 'tensor<10x6xf32, #pc.sbp<@a, [S(0)]>>' is 'tensor<5x6xf32>'}}
  pc.send %arg0 {from = tensor<10x6xf32, #pc.sbp<@a, [S(0)]>>, to = tensor<10x6xf32, #pc.sbp<@b, [B]>>} : tensor<10x6xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["y"=2]> ranks [2, 3]
func.func @f.part1() attributes {pc.graph = "f", pc.ranks = array<i64: 2, 3>} {
  // expected-error @+1 {{'pc.recv' op has the result of type 'tensor<10x6xf32>', but rank 2's piece of 'tensor<10x6xf32, #pc.sbp<@b, [S(1)]>>' is 'tensor<10x3xf32>'}}
  %0 = pc.recv {from = tensor<10x6xf32, #pc.sbp<@a, [B]>>, to = tensor<10x6xf32, #pc.sbp<@b, [S(1)]>>} : tensor<10x6xf32>
  return
}

// -----

// A redistribution turns the rank's piece of `from` into its piece of `to`.
pc.mesh @a <["x"=2, "y"=2]>
func.func @f.part0(%arg0: tensor<5x3xf32> {pc.index = 0 : i64, pc.logical_type = tensor<10x6xf32, #pc.sbp<@a, [S(0), S(1)]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1, 2, 3>} {
  // expected-error @+1 {{'pc.redistribute' op has the result of type 'tensor<5x3xf32>', but rank 0's piece of 'tensor<10x6xf32, #pc.sbp<@a, [S(1), B]>>' is 'tensor<10x3xf32>'}}
  %0 = pc.redistribute %arg0 {from = tensor<10x6xf32, #pc.sbp<@a, [S(0), S(1)]>>, to = tensor<10x6xf32, #pc.sbp<@a, [S(1), B]>>} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  return
}

// -----

// A receive on a rank that is not on the receiving mesh.
pc.mesh @a <["x"=2]>
pc.mesh @b <["y"=2]> ranks [2, 3]
func.func @f.part1() attributes {pc.graph = "f", pc.ranks = array<i64: 0>} {
  // expected-error @+1 {{'pc.recv' op runs on rank 0 (pc.ranks of @f.part1), which is not on mesh @b that the layout of the result uses}}
  %0 = pc.recv {from = tensor<10x6xf32, #pc.sbp<@a, [B]>>, to = tensor<10x6xf32, #pc.sbp<@b, [B]>>} : tensor<10x6xf32>
  return
}

// -----

// A rank that no mesh holds.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op runs on rank 5, which is on no pc.mesh of the module}}
func.func @f.part0() attributes {pc.graph = "f", pc.ranks = array<i64: 5>} {
  return
}

// -----

// A per-device program names its graph and its ranks together.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op is a per-device program only with both 'pc.graph' and 'pc.ranks'}}
func.func @f.part0() attributes {pc.ranks = array<i64: 0>} {
  return
}

// -----

pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op is a per-device program only with both 'pc.graph' and 'pc.ranks'}}
func.func @f.part0() attributes {pc.graph = "f"} {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.memory' must be a dictionary of i64 byte counts (peak, parameters, gradients, optimizer_state, activations, workspace, and optionally activations_peak) on a func.func}}
func.func @g() attributes {pc.memory = {peak = 1 : i64}} {
  return
}

// -----

// pc.memory written before activations_peak existed still reads.
func.func @h() attributes {pc.memory = {activations = 0 : i64, gradients = 0 : i64, optimizer_state = 0 : i64, parameters = 0 : i64, peak = 0 : i64, workspace = 0 : i64}} {
  return
}
