// pc-cost-model records a cluster spec's rates on the module; every cost
// after it is figured with them: here the boxing planner's, whose fixed
// cost per collective becomes the bytes the link moves in its latency.
// RUN: pc-opt %s --pc-cost-model=cluster=%pc_src_root/planner/clusters/pcie-a100.json | FileCheck %s --check-prefix=ATTR
// Matmuls on 16-bit floats (mixed precision) have a peak of their own:
// the spec's bf16 figure, 312 TFLOP/s against 19.5 for f32, times the
// matmul efficiency (0.7).
// ATTR: module attributes {pc.cost_model = {half_peak_flops = 2.184000e+14 : f64, kernel_latency = {{[0-9.]+E-6}} : f64, link_bandwidth = 1.120000e+10 : f64, link_latency = {{[0-9.]+E-6}} : f64, memory_bandwidth = 1.644750e+12 : f64, peak_flops = 1.365000e+13 : f64}}
// CPU virtual devices' communicator runs on their compute cores: the
// simulator shares the host's cores among both streams. The host's cores
// run two devices at once, and a pipeline hop has a latency of its own.
// RUN: pc-opt %s --pc-cost-model=cluster=%pc_src_root/planner/clusters/cpu-virtual.json | FileCheck %s --check-prefix=CPU
// CPU: module attributes {pc.cost_model = {concurrent_devices = 2 : i64, kernel_latency = {{.*}}, p2p_latency = {{[0-9.]+e-0[3-6]}} : f64, {{.*}}, shared_cores}}
// A calibrated spec's collective latency parts, and the share of the cores
// it holds, the share a queued collective pays and a straggler's lag, are
// recorded too (latency_busy and queued_share only below 1, their
// default).
// RUN: sed 's/"p2p_latency": 0.0001028/&, "call_latency": 1.5e-4, "latency_busy": 0.75, "queued_share": 0.5, "straggler_lag": 0.25/' %pc_src_root/planner/clusters/cpu-virtual.json > %t.json
// RUN: pc-opt %s --pc-cost-model=cluster=%t.json | FileCheck %s --check-prefix=PARTS
// PARTS: module attributes {pc.cost_model = {call_latency = 1.500000e-04 : f64, {{.*}}, latency_busy = 7.500000e-01 : f64, {{.*}}, queued_share = 5.000000e-01 : f64, shared_cores, straggler_lag = 2.500000e-01 : f64}}
// With more devices than cores, a hop's seconds of the cores (p2p_work) and
// the share of the cores the runtime keeps busy (efficiency.shared_cores,
// recorded as core_efficiency below 1) too.
// RUN: sed -e 's/"p2p_latency": 0.0001028/"p2p_latency": 2e-5, "p2p_work": 8e-5/' -e 's/"usable_memory"/"shared_cores": 0.875, &/' %pc_src_root/planner/clusters/cpu-virtual.json > %t.work.json
// RUN: pc-opt %s --pc-cost-model=cluster=%t.work.json | FileCheck %s --check-prefix=WORK
// WORK: module attributes {pc.cost_model = {concurrent_devices = 2 : i64, core_efficiency = 8.750000e-01 : f64, {{.*}}, p2p_latency = 2.000000e-05 : f64, p2p_work = 8.000000e-05 : f64, {{.*}}shared_cores}}
// A stream's wake-up (efficiency.wake_work), a queued collective's share
// (queued_share) and a straggler's lag are recorded on shared cores only; a
// kernel's slowdown in a step (kernel_in_step) on any cluster.
// RUN: sed 's/"usable_memory"/"wake_work": 1e-5, "kernel_in_step": 1.25, &/' %pc_src_root/planner/clusters/cpu-virtual.json > %t.wake.json
// RUN: pc-opt %s --pc-cost-model=cluster=%t.wake.json | FileCheck %s --check-prefix=WAKE
// WAKE: module attributes {pc.cost_model = {{{.*}}kernel_in_step = 1.250000e+00 : f64, {{.*}}, shared_cores, wake_work = 1.000000e-05 : f64}}
// RUN: sed 's/"usable_memory"/"wake_work": "10 us", "kernel_in_step": 1.25, &/' %pc_src_root/planner/clusters/pcie-a100.json | sed 's/"latency": "10 us"/&, "queued_share": 0.5, "straggler_lag": 0.25/' > %t.gpu-wake.json
// RUN: pc-opt %s --pc-cost-model=cluster=%t.gpu-wake.json | FileCheck %s --check-prefix=GPU-WAKE
// GPU-WAKE: module attributes {pc.cost_model = {{{.*}}kernel_in_step = 1.250000e+00 : f64,
// GPU-WAKE-NOT: wake_work
// GPU-WAKE-NOT: queued_share
// GPU-WAKE-NOT: straggler_lag
//
// RUN: pc-opt %s --pc-sbp-propagate --pc-insert-boxing --pc-boxing-report | FileCheck %s --check-prefix=DEFAULT
// The axis swap is one redistribution: 4096 B to the busiest device, plus
// the fixed cost of a collective.
// DEFAULT: total: 1 collectives, sent 8192 B, received 8192 B, planning cost 20596
// RUN: pc-opt %s --pc-cost-model=cluster=%pc_src_root/planner/clusters/pcie-a100.json --pc-sbp-propagate --pc-insert-boxing --pc-boxing-report | FileCheck %s --check-prefix=PCIE
// PCIE: total: 1 collectives, sent 8192 B, received 8192 B, planning cost 116096
//
// RUN: not pc-opt %s --pc-cost-model=cluster=%t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: pc-cost-model: {{.*}}missing.json: cannot read the cluster spec
// RUN: not pc-opt %s --pc-cost-model 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: pc-cost-model: give cluster=<spec.json>
// RUN: not pc-opt %s --pc-cost-model="cluster=%pc_src_root/planner/clusters/pcie-a100.json dtype=f8" 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: pc-cost-model: cluster '{{.*}}' gives no peak FLOP/s for f8

pc.mesh @m <["a"=2, "b"=2]>
func.func @swap(%x: tensor<64x64xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<64x64xf32, #pc.sbp<@m, [S(1), S(0)]>> {
  %0 = pc.to_sbp %x : (tensor<64x64xf32, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<64x64xf32, #pc.sbp<@m, [S(1), S(0)]>>
  return %0 : tensor<64x64xf32, #pc.sbp<@m, [S(1), S(0)]>>
}
