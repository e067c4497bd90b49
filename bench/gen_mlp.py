"""Writes a deep MLP with a classification loss as pc IR: LAYERS tanh
layers of WIDTH units on a one-device mesh, for pipelining benchmarks
(pc-run --stages cuts it into balanced stages).

    gen_mlp.py --layers 8 --width 512 --batch 1024 > mlp.mlir
"""
import argparse

ap = argparse.ArgumentParser(description=__doc__,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--layers", type=int, default=8)
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--batch", type=int, default=1024)
ap.add_argument("--classes", type=int, default=16)
ap.add_argument("--features", type=int, default=0,
                help="input features (default: the width)")
a = ap.parse_args()
n, w, b, c = a.layers, a.width, a.batch, a.classes
f0 = a.features or w
print('pc.mesh @m <["x"=1]>')
for i in range(n):
    out = c if i == n - 1 else w
    inp = f0 if i == 0 else w
    print(f"pc.param @w{i} : tensor<{inp}x{out}xf32> = "
          f"#pc.init<normal(std = {1 / w ** 0.5:.6f})>")
print(f"func.func @mlp(%x: tensor<{b}x{f0}xf32> {{pc.name = \"x\"}}, "
      f"%labels: tensor<{b}xi64> {{pc.name = \"labels\"}}) "
      f"-> (tensor<f32> {{pc.loss}}) {{")
h = "%x"
for i in range(n):
    out = c if i == n - 1 else w
    inp = f0 if i == 0 else w
    print(f"  %w{i} = pc.get_param @w{i} : tensor<{inp}x{out}xf32>")
    print(f"  %h{i} = pc.matmul {h}, %w{i} : (tensor<{b}x{inp}xf32>, "
          f"tensor<{inp}x{out}xf32>) -> tensor<{b}x{out}xf32>")
    if i < n - 1:
        print(f"  %a{i} = pc.tanh %h{i} : (tensor<{b}x{w}xf32>) -> "
              f"tensor<{b}x{w}xf32>")
        h = f"%a{i}"
print(f"  %ce = pc.cross_entropy %h{n - 1}, %labels : (tensor<{b}x{c}xf32>, "
      f"tensor<{b}xi64>) -> tensor<{b}xf32>")
print(f"  %loss = pc.reduce_mean %ce {{axes = array<i64: 0>}} : "
      f"(tensor<{b}xf32>) -> tensor<f32>")
print("  return %loss : tensor<f32>")
print("}")
