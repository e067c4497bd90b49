// RUN: pc-opt %s --split-input-file --verify-diagnostics

// Every rule of the boxing step ops, the transfer ops and the attributes
// that passes attach.

pc.mesh @m <["a"=2, "b"=2]>
pc.mesh @n <["a"=2, "b"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P, B]>>) {
  // expected-error @+1 {{'pc.all_reduce' op runs on mesh @n but its operand and result are on @m and @m}}
  %0 = pc.all_reduce %x {mesh = @n, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P, B]>>) -> tensor<8xf32, #pc.sbp<@m, [B, B]>>
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2, "c"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P, B, P]>>) {
  // expected-error @+1 {{'pc.all_reduce' op axes must be a contiguous ascending run of the mesh's 3 axes}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0, 2>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P, B, P]>>) -> tensor<8xf32, #pc.sbp<@m, [B, B, B]>>
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P, S(0)]>>) {
  // expected-error @+1 {{'pc.all_reduce' op changes the entry of mesh axis 1, which is not in axes}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P, S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B, B]>>
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P, S(0)]>>) {
  // expected-error @+1 {{'pc.all_reduce' op needs one entry before and one after on all of its axes, but mesh axis 1 has S(0) -> B}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0, 1>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P, S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B, B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+1 {{'pc.all_reduce' op changes S(0) to B, which is not a all-reduce}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P(max)]>>) {
  // expected-error @+1 {{'pc.all_reduce' op reduces by sum but the operand holds P(max) partials}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P(max)]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0), S(0)]>>) {
  // expected-error @+1 {{'pc.all_gather' op cannot change [S(0), S(0)] to [B, S(0)]: mesh axis 1 after the group splits dim 0, which the change touches; change that axis first}}
  %0 = pc.all_gather %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [S(0), S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B, S(0)]>>
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P(max), P]>>) {
  // expected-error @+1 {{'pc.all_reduce' op cannot change [P(max), P] to [B, P]: mesh axis 1 after the group holds P partials, which must be reduced before P(max)}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<max>} : (tensor<8xf32, #pc.sbp<@m, [P(max), P]>>) -> tensor<8xf32, #pc.sbp<@m, [B, P]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+1 {{'pc.all_gather' op dim is 1 but the layouts say 0}}
  %0 = pc.all_gather %x {mesh = @m, axes = array<i64: 0>, dim = 1 : i64} : (tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x4xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+1 {{'pc.all_to_all' op dst_dim is 0 but the layouts say 1}}
  %0 = pc.all_to_all %x {mesh = @m, axes = array<i64: 0>, src_dim = 0 : i64, dst_dim = 0 : i64} : (tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x4xf32, #pc.sbp<@m, [S(1)]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+1 {{'pc.reduce_scatter' op needs #pc.sbp layouts on both the operand and the result, or on neither (the per-device form)}}
  %0 = pc.reduce_scatter %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64, reduce = #pc.reduction<sum>} : (tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x4xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+1 {{'pc.local_partial' op needs `dim` when the operand entry is S(0)}}
  %0 = pc.local_partial %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.local_partial' op makes max partials but the result holds P}}
  %0 = pc.local_partial %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<max>} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [S(0)]>>) {
  // expected-error @+1 {{'pc.local_partial' op changes S(0) to P(max), which is not a local-partial}}
  %0 = pc.local_partial %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<max>, dim = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [P(max)]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_gather' op local piece 4x6 is larger than the group's whole 3x6 along dim 0}}
  %0 = pc.all_gather %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<4x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_gather' op local shapes 4x6 and 9x6 do not match sizes [4, 4] along dim 0}}
  %0 = pc.all_gather %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64, sizes = array<i64: 4, 4>} : (tensor<4x6xf32>) -> tensor<9x6xf32>
  return
}

// -----

// Sizes whose sum overflows do not match any shape.
pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_gather' op local shapes 4x6 and 9x6 do not match sizes [9223372036854775807, 4] along dim 0}}
  %0 = pc.all_gather %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64, sizes = array<i64: 9223372036854775807, 4>} : (tensor<4x6xf32>) -> tensor<9x6xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'pc.reduce_scatter' op local shapes 4x5 and 8x6 differ outside dim 0}}
  %0 = pc.reduce_scatter %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64, reduce = #pc.reduction<sum>, sizes = array<i64: 4, 4>} : (tensor<8x6xf32>) -> tensor<4x5xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{'pc.all_to_all' op local shapes 8x6 and 4x6 are not a piece whole along dim 1 and pieces along dim 0}}
  %0 = pc.all_to_all %x {mesh = @m, axes = array<i64: 0>, src_dim = 0 : i64, dst_dim = 1 : i64} : (tensor<8x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_to_all' op local shapes 4x6 and 8x2 do not match src_sizes and dst_sizes}}
  %0 = pc.all_to_all %x {mesh = @m, axes = array<i64: 0>, src_dim = 0 : i64, dst_dim = 1 : i64, src_sizes = array<i64: 4, 4>, dst_sizes = array<i64: 3, 2>} : (tensor<4x6xf32>) -> tensor<8x2xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_reduce' op keeps the local type, but has 'tensor<4x6xf32>' -> 'tensor<4x5xf32>'}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<4x6xf32>) -> tensor<4x5xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@a, [P]>>) {
  // expected-error @+1 {{'pc.transfer' op cannot move partial values ([P] -> [B]); reduce them on the source mesh first}}
  %0 = pc.transfer %x : (tensor<8xf32, #pc.sbp<@a, [P]>>) -> tensor<8xf32, #pc.sbp<@b, [B]>>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@a, [B]>>) {
  // expected-error @+1 {{'pc.transfer' op changes the logical type from 'tensor<8xf32, #pc.sbp<@a, [B]>>' to 'tensor<4xf32, #pc.sbp<@b, [B]>>'}}
  %0 = pc.transfer %x : (tensor<8xf32, #pc.sbp<@a, [B]>>) -> tensor<4xf32, #pc.sbp<@b, [B]>>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<4xi32>) {
  // expected-error @+1 {{'pc.send' op has the local type 'tensor<4xi32>', which is not a piece of 'tensor<8xf32, #pc.sbp<@a, [S(0)]>>'}}
  pc.send %x {from = tensor<8xf32, #pc.sbp<@a, [S(0)]>>, to = tensor<8xf32, #pc.sbp<@b, [B]>>} : tensor<4xi32>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f() {
  // expected-error @+1 {{'pc.recv' op cannot move partial values}}
  %0 = pc.recv {from = tensor<8xf32, #pc.sbp<@a, [P]>>, to = tensor<8xf32, #pc.sbp<@b, [B]>>} : tensor<8xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
func.func @f() {
  // expected-error @+1 {{'pc.recv' op needs `from` and `to` tensor types with #pc.sbp layouts}}
  %0 = pc.recv {from = tensor<8xf32>, to = tensor<8xf32, #pc.sbp<@a, [B]>>} : tensor<8xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f() {
  // expected-error @+1 {{'pc.recv' op moves 'tensor<8xf32, #pc.sbp<@a, [B]>>' into 'tensor<4xf32, #pc.sbp<@b, [B]>>', which is another logical type}}
  %0 = pc.recv {from = tensor<8xf32, #pc.sbp<@a, [B]>>, to = tensor<4xf32, #pc.sbp<@b, [B]>>} : tensor<8xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.exp' op 'pc.operand_sbps' must be an array of one #pc.sbp per operand (1)}}
  %0 = pc.exp %x {pc.operand_sbps = []} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.exp' op the wanted layout of operand #0 of type 'tensor<8xf32, #pc.sbp<@m, [B, B]>>': SBP [B, B] has 2 entries but mesh @m has 1 axes}}
  %0 = pc.exp %x {pc.operand_sbps = [#pc.sbp<@m, [B, B]>]} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
pc.mesh @n <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.exp' op result #0 is on mesh @m but operand #0 is on mesh @n}}
  %0 = pc.exp %x {pc.operand_sbps = [#pc.sbp<@n, [B]>]} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.ranks' lists the ranks that run a per-device program: a non-empty array<i64> on a func.func}}
func.func @f() attributes {pc.ranks = array<i64>} {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.graph' names the logical graph of a per-device program: a string on a func.func}}
func.func @f() attributes {pc.graph = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op has the unknown pc attribute 'pc.bogus'}}
func.func @f() attributes {pc.bogus} {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.logical_type' of an argument must be a tensor type with a #pc.sbp layout}}
func.func @f(%x: tensor<4xf32> {pc.logical_type = tensor<8xf32>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.index' of a result must be an integer}}
func.func @f() -> (tensor<4xf32> {pc.index = "zero"}) {
  %0 = pc.constant dense<0.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op 'pc.name' of argument #1 must be a non-empty string of letters, digits, '_', '.' and '-' that does not start with '.'}}
func.func @f(%x: tensor<4xf32> {pc.name = "x"}, %y: tensor<4xf32> {pc.name = "../y"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'pc.name' of result #0 must be a non-empty string}}
func.func @f() -> (tensor<4xf32> {pc.name = 3 : i64}) {
  %0 = pc.constant dense<0.0> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op arguments #0 and #2 have the same 'pc.name' "x"}}
func.func @f(%a: tensor<4xf32> {pc.name = "x"}, %b: tensor<4xf32> {pc.name = "y"}, %c: tensor<4xf32> {pc.name = "x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op results #0 and #1 have the same 'pc.name' "loss"}}
func.func @f() -> (tensor<4xf32> {pc.name = "loss"}, tensor<4xf32> {pc.name = "loss"}) {
  %0 = pc.constant dense<0.0> : tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op has the unknown pc argument attribute 'pc.other'}}
func.func @f(%x: tensor<4xf32> {pc.other}) {
  return
}

// -----

pc.mesh @m <["x"=2]>
pc.param @w : tensor<8xf32, #pc.sbp<@m, [S(0)]>> = #pc.init<zeros>
func.func @f() {
  // A per-device read is a piece of the parameter, never larger.
  // expected-error @+1 {{'pc.get_param' op result type 'tensor<9xf32>' differs from the type 'tensor<8xf32, #pc.sbp<@m, [S(0)]>>' of parameter @w}}
  %0 = pc.get_param @w : tensor<9xf32>
  return
}

// -----

pc.mesh @m <["a"=2, "b"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B, S(0)]>>) {
  // expected-error @+1 {{'pc.broadcast' op broadcasts over mesh axis 1, where the layout [B, S(0)] is not B}}
  %0 = pc.broadcast %x {mesh = @m, axes = array<i64: 1>, root = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [B, S(0)]>>) -> tensor<8xf32, #pc.sbp<@m, [B, S(0)]>>
  return
}

// -----

pc.mesh @m <["a"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.broadcast' op keeps the type, but has 'tensor<8xf32, #pc.sbp<@m, [B]>>' -> 'tensor<8xf32, #pc.sbp<@m, [S(0)]>>'}}
  %0 = pc.broadcast %x {mesh = @m, axes = array<i64: 0>, root = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [S(0)]>>
  return
}

// -----

pc.mesh @m <["a"=2]>
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pc.broadcast' op root -1 must be non-negative}}
  %0 = pc.broadcast %x {mesh = @m, axes = array<i64: 0>, root = -1 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) {
  // expected-error @+1 {{'pc.all_reduce' op needs at least one mesh axis in `axes`}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [P]>>) {
  // expected-error @+1 {{'pc.all_reduce' op operand and result layouts have 1 and 2 entries}}
  %0 = pc.all_reduce %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>} : (tensor<8xf32, #pc.sbp<@m, [P]>>) -> tensor<8xf32, #pc.sbp<@m, [B, B]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<8xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.local_partial' op must not have `dim` when the operand entry is B}}
  %0 = pc.local_partial %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>, dim = 0 : i64} : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.local_slice' op dim 2 does not fit shapes 2x6 and 4x6}}
  %0 = pc.local_slice %x {mesh = @m, axes = array<i64: 0>, dim = 2 : i64} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_to_all' op dims 0 and 0 do not fit shapes 4x6 and 8x3}}
  %0 = pc.all_to_all %x {mesh = @m, axes = array<i64: 0>, src_dim = 0 : i64, dst_dim = 0 : i64} : (tensor<4x6xf32>) -> tensor<8x3xf32>
  return
}

// -----

pc.mesh @m <["x"=2]>
func.func @f(%x: tensor<4xf32, #pc.sbp<@m, [B]>>) {
  // expected-error @+1 {{'pc.exp' op operand #0: split dim 1 of SBP entry #0 in #pc.sbp<@m, [S(1)]> is out of range for a rank-1 tensor}}
  %0 = pc.exp %x {pc.operand_sbps = [#pc.sbp<@m, [S(1)]>]} : (tensor<4xf32, #pc.sbp<@m, [B]>>) -> tensor<4xf32, #pc.sbp<@m, [B]>>
  return
}

// -----

func.func @f(%z: tensor<8x50xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'pc.pick_labels' op labels have shape 4 but logits 8x50 need labels of shape 8}}
  %0 = pc.pick_labels %z, %y : (tensor<8x50xf32>, tensor<4xi64>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%z: tensor<8x50xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'pc.pick_labels' op result type 'tensor<8xf16>' should have shape 8 and element type 'f32'}}
  %0 = pc.pick_labels %z, %y : (tensor<8x50xf32>, tensor<8xi64>) -> tensor<8xf16>
  return
}

// -----

// A per-device collective's axes are axes of its mesh.
pc.mesh @m <["x"=2]>
func.func @axes_outside(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.all_reduce' op axes [5] must be distinct ascending axes of @m, which has 1}}
  %0 = pc.all_reduce %a {axes = array<i64: 5>, mesh = @m, reduce = #pc.reduction<sum>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_mesh(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pc.broadcast' op runs on mesh @nowhere, which is not a pc.mesh of the module}}
  %0 = pc.broadcast %a {axes = array<i64: 0>, mesh = @nowhere, root = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A per-device program's ranks are distinct and non-negative.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op 'pc.ranks' lists rank 0, which is negative or listed twice}}
func.func @f.part0(%arg0: tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) -> (tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 0>} {
  return %arg0 : tensor<4xf32>
}

// -----

// Every argument and result of a per-device program names its logical value.
pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op is a per-device program, but its argument #0 has no 'pc.index' and 'pc.logical_type'}}
func.func @f.part0(%arg0: tensor<4xf32>) -> (tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  return %arg0 : tensor<4xf32>
}

// -----

pc.mesh @m <["x"=2]>
// expected-error @+1 {{'func.func' op is a per-device program, but its result #1 has 'pc.index' 0, negative or given to another result}}
func.func @f.part0(%arg0: tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) -> (tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}, tensor<4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0, 1>} {
  return %arg0, %arg0 : tensor<4xf32>, tensor<4xf32>
}

// -----

pc.mesh @m <["x"=2]>
func.func @all_to_all_sizes_overflow(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.all_to_all' op local shapes 4x6 and 8x2 do not match src_sizes and dst_sizes}}
  %0 = pc.all_to_all %x {mesh = @m, axes = array<i64: 0>, src_dim = 0 : i64, dst_dim = 1 : i64, src_sizes = array<i64: 4, 4>, dst_sizes = array<i64: 9223372036854775807, 2>} : (tensor<4x6xf32>) -> tensor<8x2xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
pc.mesh @b <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pc.redistribute' op moves between the meshes @a and @b; a transfer between meshes is pc.send and pc.recv}}
  %0 = pc.redistribute %x {from = tensor<8xf32, #pc.sbp<@a, [S(0)]>>, to = tensor<8xf32, #pc.sbp<@b, [S(0)]>>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

pc.mesh @a <["x"=2, "y"=2]>
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'pc.redistribute' op cannot move partial values}}
  %0 = pc.redistribute %x {from = tensor<8x8xf32, #pc.sbp<@a, [S(0), P]>>, to = tensor<8x8xf32, #pc.sbp<@a, [S(1), S(0)]>>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

pc.mesh @a <["x"=2]>
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pc.redistribute' op has the local type 'tensor<4x1xf32>', which is not a piece of 'tensor<8xf32, #pc.sbp<@a, [S(0)]>>'}}
  %0 = pc.redistribute %x {from = tensor<8xf32, #pc.sbp<@a, [S(0)]>>, to = tensor<8xf32, #pc.sbp<@a, [B]>>} : (tensor<4xf32>) -> tensor<4x1xf32>
  return
}
