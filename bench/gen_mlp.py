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
ap.add_argument("--balanced", action="store_true",
                help="equal work per layer, for pipeline benchmarks: a "
                "trainable gain on the input (so that the first layer "
                "computes its input's gradient, as every other layer does), "
                "a last layer as wide as the others, and a mean-square "
                "loss on it (cheap next to a layer, unlike a cross-entropy "
                "over WIDTH classes)")
a = ap.parse_args()
if a.balanced:
    a.classes = a.width
n, w, b, c = a.layers, a.width, a.batch, a.classes
f0 = a.features or w
print('pc.mesh @m <["x"=1]>')
for i in range(n):
    out = c if i == n - 1 else w
    inp = f0 if i == 0 else w
    print(f"pc.param @w{i} : tensor<{inp}x{out}xf32> = "
          f"#pc.init<normal(std = {1 / w ** 0.5:.6f})>")
if a.balanced:
    print(f"pc.param @gain : tensor<{f0}xf32> = #pc.init<ones>")
    print(f"func.func @mlp(%x: tensor<{b}x{f0}xf32> {{pc.name = \"x\"}}) "
          f"-> (tensor<f32> {{pc.loss}}) {{")
    print(f"  %gain = pc.get_param @gain : tensor<{f0}xf32>")
    print(f"  %xg = pc.mul %x, %gain : (tensor<{b}x{f0}xf32>, "
          f"tensor<{f0}xf32>) -> tensor<{b}x{f0}xf32>")
    h = "%xg"
else:
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
if a.balanced:
    print(f"  %sq = pc.mul %h{n - 1}, %h{n - 1} : (tensor<{b}x{c}xf32>, "
          f"tensor<{b}x{c}xf32>) -> tensor<{b}x{c}xf32>")
    print(f"  %ce = pc.reduce_mean %sq {{axes = array<i64: 1>}} : "
          f"(tensor<{b}x{c}xf32>) -> tensor<{b}xf32>")
else:
    print(f"  %ce = pc.cross_entropy %h{n - 1}, %labels : "
          f"(tensor<{b}x{c}xf32>, tensor<{b}xi64>) -> tensor<{b}xf32>")
print(f"  %loss = pc.reduce_mean %ce {{axes = array<i64: 0>}} : "
      f"(tensor<{b}xf32>) -> tensor<f32>")
print("  return %loss : tensor<f32>")
print("}")
