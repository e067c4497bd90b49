// RUN: pc-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{'builtin.module' op 'pc.cost_model' must be a dictionary of positive f64 rates {peak_flops, memory_bandwidth, link_bandwidth, link_latency, kernel_latency (or 0)}, and optionally the unit shared_cores, a positive i64 concurrent_devices, positive f64 p2p_latency, p2p_work, call_latency, half_peak_flops, wake_work, kernel_in_step and straggler_lag, and f64 latency_busy, queued_share and core_efficiency in (0, 1), on the module}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64}} {
}

// -----

// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = -1.0 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64}} {
}

// -----

module {
  // expected-error @+1 {{'func.func' op 'pc.cost_model' must be a dictionary of positive f64 rates}}
  func.func @f() attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64}} {
    return
  }
}

// -----

// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, shared_cores = 1 : i64}} {
}

// -----

// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, concurrent_devices = 0 : i64}} {
}

// -----

// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, p2p_latency = 0.0 : f64}} {
}

// -----

// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, p2p_work = 0.0 : f64}} {
}

// -----

// A share of the cores: 1 is the default and is not written.
// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, shared_cores, core_efficiency = 1.0 : f64}} {
}

// -----

// A fraction of the latency: 1 is the default and is not written.
// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, shared_cores, latency_busy = 1.0 : f64}} {
}

// -----

// A queued collective's share of the latency: in (0, 1) too.
// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, queued_share = 0.0 : f64}} {
}

// -----

// A straggler's lag: positive, like the rates.
// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, straggler_lag = -0.5 : f64}} {
}

// -----

// expected-error @+1 {{'pc.cost_model' must be a dictionary of positive f64 rates}}
module attributes {pc.cost_model = {peak_flops = 1.0e12 : f64, memory_bandwidth = 1.0e9 : f64, link_bandwidth = 1.0e9 : f64, link_latency = 1.0e-6 : f64, kernel_latency = 0.0 : f64, call_latency = -1.0e-4 : f64}} {
}
