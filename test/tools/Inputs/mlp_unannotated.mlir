// The two-layer MLP of examples/mlp_2x2.mlir with no layout but the mesh:
// for --auto-parallel.

pc.mesh @mesh <["dp"=2, "tp"=2]>

pc.param @fc1.weight : tensor<256x1024xf32>
    = #pc.init<normal(std = 0.02)>
pc.param @fc1.bias : tensor<1024xf32>
    = #pc.init<zeros>
pc.param @fc2.weight : tensor<1024x256xf32>
    = #pc.init<normal(std = 0.02)>
pc.param @fc2.bias : tensor<256xf32>
    = #pc.init<zeros>

func.func @mlp(%x: tensor<64x256xf32>,
               %labels: tensor<64xi64>)
    -> tensor<f32> {
  %w1 = pc.get_param @fc1.weight : tensor<256x1024xf32>
  %b1 = pc.get_param @fc1.bias : tensor<1024xf32>
  %w2 = pc.get_param @fc2.weight : tensor<1024x256xf32>
  %b2 = pc.get_param @fc2.bias : tensor<256xf32>

  %h = pc.matmul %x, %w1
      : (tensor<64x256xf32>,
         tensor<256x1024xf32>)
      -> tensor<64x1024xf32>
  %hb = pc.add %h, %b1
      : (tensor<64x1024xf32>,
         tensor<1024xf32>)
      -> tensor<64x1024xf32>
  %a = pc.gelu %hb {approximate}
      : (tensor<64x1024xf32>)
      -> tensor<64x1024xf32>
  %y = pc.matmul %a, %w2
      : (tensor<64x1024xf32>,
         tensor<1024x256xf32>)
      -> tensor<64x256xf32>
  %yb = pc.add %y, %b2
      : (tensor<64x256xf32>,
         tensor<256xf32>)
      -> tensor<64x256xf32>
  %loss = pc.cross_entropy %yb, %labels
      : (tensor<64x256xf32>,
         tensor<64xi64>)
      -> tensor<64xf32>
  %mean = pc.reduce_mean %loss {axes = array<i64: 0>}
      : (tensor<64xf32>)
      -> tensor<f32>
  return %mean : tensor<f32>
}

