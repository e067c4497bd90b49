// RUN: pc-opt %s --pc-memory-plan | FileCheck %s

// A backward pass in miniature on one of four devices under ZeRO-2: each
// layer's gradient g (1 KiB) is made, then reduce-scattered to this
// device's quarter r. Were the reduce-scatters to keep up, each g would go
// as the next layer starts: x, one y and two g's live at most, 4 KiB and a
// quarter. But a collective waits for its slowest member while this
// device's compute goes on, and each g waits with it. The plan also replays
// the collectives as late as the program lets them run, after the last
// gradient: x, the last y and all three g's live at once, 5 KiB. It takes
// the larger (on the bench's GPT under ZeRO-2 and full recompute on four
// devices sharing two cores, the first alone predicted 14.4 MiB where up
// to 16.4 MiB was measured).
// CHECK: pc.memory = {activations = 5120 : i64, activations_peak = 5120 : i64, gradients = 0 : i64, optimizer_state = 0 : i64, parameters = 0 : i64, peak = 5120 : i64, workspace = 0 : i64}
pc.mesh @m <["x"=4]>
func.func @step.part0(%x: tensor<16x16xf32> {pc.index = 0 : i64, pc.logical_type = tensor<16x16xf32, #pc.sbp<@m, [B]>>}) -> (tensor<4x16xf32> {pc.index = 0 : i64, pc.logical_type = tensor<16x16xf32, #pc.sbp<@m, [S(0)]>>}, tensor<4x16xf32> {pc.index = 1 : i64, pc.logical_type = tensor<16x16xf32, #pc.sbp<@m, [S(0)]>>}, tensor<4x16xf32> {pc.index = 2 : i64, pc.logical_type = tensor<16x16xf32, #pc.sbp<@m, [S(0)]>>}) attributes {pc.graph = "step", pc.ranks = array<i64: 0>} {
  %y1 = pc.exp %x : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %g1 = pc.mul %y1, %x : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %r1 = pc.reduce_scatter %g1 {axes = array<i64: 0>, dim = 0 : i64, mesh = @m, reduce = #pc.reduction<sum>} : (tensor<16x16xf32>) -> tensor<4x16xf32>
  %y2 = pc.exp %y1 : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %g2 = pc.mul %y2, %x : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %r2 = pc.reduce_scatter %g2 {axes = array<i64: 0>, dim = 0 : i64, mesh = @m, reduce = #pc.reduction<sum>} : (tensor<16x16xf32>) -> tensor<4x16xf32>
  %y3 = pc.exp %y2 : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %g3 = pc.mul %y3, %x : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %r3 = pc.reduce_scatter %g3 {axes = array<i64: 0>, dim = 0 : i64, mesh = @m, reduce = #pc.reduction<sum>} : (tensor<16x16xf32>) -> tensor<4x16xf32>
  return %r1, %r2, %r3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
