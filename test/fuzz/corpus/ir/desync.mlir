// Per-device programs whose collectives differ: rank 1 all-reduces its
// piece before the all-gather that rank 0 issues first. The ranks' programs
// are checked against each other before anything runs, and every rank fails
// naming both ranks and both ops, instead of mixing the data of different
// calls (or hanging).
module {
  pc.mesh @mesh <["dp"=2]>
  pc.param @w : tensor<8x4xf32, #pc.sbp<@mesh, [S(1)]>> = #pc.init<normal(std = 5.000000e-01)>
  func.func @f.rank0(%arg0: tensor<6x8xf32> {pc.index = 0 : i64, pc.logical_type = tensor<6x8xf32, #pc.sbp<@mesh, [B]>>}) -> (tensor<6x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<6x4xf32, #pc.sbp<@mesh, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 0>} {
    %0 = pc.get_param @w : tensor<8x2xf32>
    %1 = pc.matmul %arg0, %0 : (tensor<6x8xf32>, tensor<8x2xf32>) -> tensor<6x2xf32>
    %2 = pc.all_gather %1 {axes = array<i64: 0>, dim = 1 : i64, mesh = @mesh} : (tensor<6x2xf32>) -> tensor<6x4xf32>
    return %2 : tensor<6x4xf32>
  }
  func.func @f.rank1(%arg0: tensor<6x8xf32> {pc.index = 0 : i64, pc.logical_type = tensor<6x8xf32, #pc.sbp<@mesh, [B]>>}) -> (tensor<6x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<6x4xf32, #pc.sbp<@mesh, [B]>>}) attributes {pc.graph = "f", pc.ranks = array<i64: 1>} {
    %0 = pc.get_param @w : tensor<8x2xf32>
    %1 = pc.matmul %arg0, %0 : (tensor<6x8xf32>, tensor<8x2xf32>) -> tensor<6x2xf32>
    %r = pc.all_reduce %1 {axes = array<i64: 0>, mesh = @mesh, reduce = #pc.reduction<sum>} : (tensor<6x2xf32>) -> tensor<6x2xf32>
    %2 = pc.all_gather %r {axes = array<i64: 0>, dim = 1 : i64, mesh = @mesh} : (tensor<6x2xf32>) -> tensor<6x4xf32>
    return %2 : tensor<6x4xf32>
  }
}
