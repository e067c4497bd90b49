// RUN: pc-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of pc.host and pc.copy.

// expected-error @+1 {{'pc.host' is a unit attribute}}
pc.param @w : tensor<8xf32> = #pc.init<zeros> {pc.host = 1 : i64}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xbf16> {
  // expected-error @+1 {{'pc.copy' op moves a value without changing it: the result type must be the input's, 'tensor<8xf32>'}}
  %y = pc.copy %x : (tensor<8xf32>) -> tensor<8xbf16>
  return %y : tensor<8xbf16>
}
