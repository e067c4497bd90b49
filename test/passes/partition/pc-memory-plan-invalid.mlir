// RUN: pc-opt %s --pc-memory-plan="device-memory=4096" --verify-diagnostics

// The forward pass of pc-memory-plan.mlir needs 4608 bytes at its peak.
pc.mesh @m <["x"=1]>
pc.param @w1 : tensor<16x32xf32> = #pc.init<zeros>
pc.param @w2 : tensor<32x4xf32> = #pc.init<zeros>
// expected-error @+1 {{@mlp.part0 needs 4.5 KiB on ranks [0] (peak 4.5 KiB: parameters 2.5 KiB, gradients 0 B, optimizer state 0 B, activations 2.0 KiB, workspace 0 B), more than the device memory of 4.0 KiB}}
func.func @mlp.part0(%x: tensor<8x16xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x16xf32, #pc.sbp<@m, [B]>>}) -> (tensor<8x4xf32> {pc.index = 0 : i64, pc.logical_type = tensor<8x4xf32, #pc.sbp<@m, [B]>>}) attributes {pc.graph = "mlp", pc.ranks = array<i64: 0>} {
  %w1 = pc.get_param @w1 : tensor<16x32xf32>
  %w2 = pc.get_param @w2 : tensor<32x4xf32>
  %h = pc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = pc.reshape %h : (tensor<8x32xf32>) -> tensor<256xf32>
  %b = pc.reshape %h : (tensor<8x32xf32>) -> tensor<256xf32>
  %c = pc.add %a, %b : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %d = pc.reshape %c : (tensor<256xf32>) -> tensor<8x32xf32>
  %y = pc.matmul %d, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
