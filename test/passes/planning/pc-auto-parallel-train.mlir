// A training step (after pc-autodiff, before pc-optimizer): each gradient
// goes to its weight's layout, so the data-parallel all-reduce is part of
// the plan. Memory is a replay of the step as pc-memory-plan replays its
// programs: weights with Adam's moments, inputs, activations and their
// gradients, copies in other layouts, and the update's new weight and
// moments beside the old.
//
// Unconstrained, tensor parallelism needs no communication here: the
// loss's partial sum is returned as it is, and every gradient lands in its
// weight's layout; but every device holds the whole input.
// RUN: pc-opt %s --pc-autodiff --pc-auto-parallel=report=true | FileCheck %s --check-prefix=FREE
// FREE: pc-auto-parallel: {{.*}} solved exactly; predicted {{.*}} boxing 0.000), 19.3 MiB per device
// FREE: pc.param @w1 : tensor<256x256xf32, #pc.sbp<@m, [S(1)]>>
// FREE: pc.param @w2 : tensor<256x256xf32, #pc.sbp<@m, [S(0)]>>
// FREE: func.func @step(%arg0: tensor<4096x256xf32, #pc.sbp<@m, [B]>>)
//
// Under 17 MB per device the input is split (data parallel) and one
// weight is stored split; under 15.8 MB both are, gathered at each use.
// What auto-parallel says fits, the memory plan of the programs that come
// of it accepts under the same budget.
// RUN: pc-opt %s --pc-autodiff --pc-auto-parallel="report=true device-memory=17000000" | FileCheck %s --check-prefix=BUDGET
// BUDGET: pc-auto-parallel: {{.*}} 15.1 MiB per device
// BUDGET: pc.param @w1 : tensor<256x256xf32, #pc.sbp<@m, [S(0)]>>
// BUDGET: pc.param @w2 : tensor<256x256xf32, #pc.sbp<@m, [B]>>
// BUDGET: func.func @step(%arg0: tensor<4096x256xf32, #pc.sbp<@m, [S(0)]>>)
// RUN: pc-opt %s --pc-autodiff --pc-auto-parallel=device-memory=17000000 --pc-optimizer --pc-distribute --pc-memory-plan=device-memory=17000000
// RUN: pc-opt %s --pc-autodiff --pc-auto-parallel="report=true device-memory=15800000" | FileCheck %s --check-prefix=TIGHTER
// TIGHTER: pc-auto-parallel: {{.*}} 15.0 MiB per device
// TIGHTER: pc.param @w1 : tensor<256x256xf32, #pc.sbp<@m, [S(0)]>>
// TIGHTER: pc.param @w2 : tensor<256x256xf32, #pc.sbp<@m, [S(0)]>>
// RUN: pc-opt %s --pc-autodiff --pc-auto-parallel=device-memory=15800000 --pc-optimizer --pc-distribute --pc-memory-plan=device-memory=15800000 | FileCheck %s --check-prefix=DIST
// DIST: pc.all_gather
//
// Nothing fits 15 MB.
// RUN: not pc-opt %s --pc-autodiff --pc-auto-parallel=device-memory=15000000 2>&1 | FileCheck %s --check-prefix=TIGHT
// TIGHT: error: pc-auto-parallel: no layout fits device-memory = 15000000 bytes; the smallest found needs {{[0-9]+}} bytes per device

pc.mesh @m <["x"=2]>
pc.param @w1 : tensor<256x256xf32> = #pc.init<normal(std = 0.02)>
pc.param @w2 : tensor<256x256xf32> = #pc.init<normal(std = 0.02)>
func.func @step(%x: tensor<4096x256xf32>) -> tensor<f32> {
  %w1 = pc.get_param @w1 : tensor<256x256xf32>
  %w2 = pc.get_param @w2 : tensor<256x256xf32>
  %h = pc.matmul %x, %w1 : (tensor<4096x256xf32>, tensor<256x256xf32>) -> tensor<4096x256xf32>
  %a = pc.gelu %h : (tensor<4096x256xf32>) -> tensor<4096x256xf32>
  %y = pc.matmul %a, %w2 : (tensor<4096x256xf32>, tensor<256x256xf32>) -> tensor<4096x256xf32>
  %l = pc.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<4096x256xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
