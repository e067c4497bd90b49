"""The MLP training tests' helper: the model for any mesh, its initial
state, an independent NumPy implementation of its training, and a curve
comparison.

  train_mlp.py gen DPxTP OUT.mlir      the model, DP x TP (Megatron MLP)
  train_mlp.py init DIR                DIR/init.safetensors, DIR/x.npy, DIR/y.npy
  train_mlp.py numpy DIR --steps K --lr LR [--wd W] [--kind sgd|adam|adamw]
                 [--momentum M] [--clip C] [--lrs-from REPORT] [--out NAME]
                                       DIR/NAME (numpy.json): the loss curve
                                       in float64, from the same state; the
                                       rates of REPORT's steps if given
  train_mlp.py compare A B TOL [tail]  the loss curves of two reports (or
                                       numpy.json) agree within TOL, relative;
                                       with tail, A is the end of B

The NumPy side shares no code with pc: forward, backward (by hand) and
AdamW are written here again."""
import json
import struct
import sys

import numpy as np

B, D, H, C = 8, 16, 32, 10
K = np.sqrt(2 / np.pi)


def gen(mesh, out):
    dp, tp = (int(v) for v in mesh.split("x"))
    s = lambda e: f"#pc.sbp<@mesh, [{e}]>"
    t = lambda shape, e: f"tensor<{shape}xf32, {s(e)}>"
    w1, b1, w2, b2 = t(f"{D}x{H}", "B, S(1)"), t(f"{H}", "B, S(0)"), \
        t(f"{H}x{C}", "B, S(0)"), t(f"{C}", "B, B")
    x = f"tensor<{B}x{D}xf32, {s('S(0), B')}>"
    y = f"tensor<{B}xi64, {s('S(0), B')}>"
    text = f"""pc.mesh @mesh <["dp"={dp}, "tp"={tp}]>
pc.param @w1 : {w1} = #pc.init<normal(std = 0.3)>
pc.param @b1 : {b1} = #pc.init<zeros>
pc.param @w2 : {w2} = #pc.init<normal(std = 0.3)>
pc.param @b2 : {b2} = #pc.init<zeros>
func.func @mlp(%x: {x} {{pc.name = "x"}}, %y: {y} {{pc.name = "y"}}) -> (tensor<f32> {{pc.loss}}) {{
  %w1 = pc.get_param @w1 : {w1}
  %b1 = pc.get_param @b1 : {b1}
  %w2 = pc.get_param @w2 : {w2}
  %b2 = pc.get_param @b2 : {b2}
  %h = pc.matmul %x, %w1 : ({x}, {w1}) -> tensor<{B}x{H}xf32>
  %hb = pc.add %h, %b1 : (tensor<{B}x{H}xf32>, {b1}) -> tensor<{B}x{H}xf32>
  %a = pc.gelu %hb {{approximate}} : (tensor<{B}x{H}xf32>) -> tensor<{B}x{H}xf32>
  %z = pc.matmul %a, %w2 : (tensor<{B}x{H}xf32>, {w2}) -> tensor<{B}x{C}xf32>
  %zb = pc.add %z, %b2 : (tensor<{B}x{C}xf32>, {b2}) -> tensor<{B}x{C}xf32>
  %l = pc.cross_entropy %zb, %y : (tensor<{B}x{C}xf32>, {y}) -> tensor<{B}xf32>
  %loss = pc.reduce_mean %l {{axes = array<i64: 0>}} : (tensor<{B}xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}}
"""
    open(out, "w").write(text)


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        data = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def state():
    rng = np.random.default_rng(21)
    params = {
        "w1": (rng.standard_normal((D, H)) * 0.3).astype(np.float32),
        "b1": (rng.standard_normal(H) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((H, C)) * 0.3).astype(np.float32),
        "b2": (rng.standard_normal(C) * 0.1).astype(np.float32),
    }
    x = rng.standard_normal((B, D)).astype(np.float32)
    y = rng.integers(0, C, B).astype(np.int64)
    return params, x, y


def init(d):
    params, x, y = state()
    write_safetensors(f"{d}/init.safetensors", params)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/y.npy", y)


def loss_and_grads(p, x, y):
    h = x @ p["w1"] + p["b1"]
    u = K * (h + 0.044715 * h ** 3)
    t = np.tanh(u)
    a = 0.5 * h * (1 + t)
    z = a @ p["w2"] + p["b2"]
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    logp = z - m - np.log(s)
    loss = -logp[np.arange(B), y].mean()
    dz = e / s
    dz[np.arange(B), y] -= 1
    dz /= B
    g = {"w2": a.T @ dz, "b2": dz.sum(axis=0)}
    da = dz @ p["w2"].T
    dh = da * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * K *
               (1 + 3 * 0.044715 * h * h))
    g["w1"] = x.T @ dh
    g["b1"] = dh.sum(axis=0)
    return loss, g


def numpy_curve(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--wd", type=float, default=0.0)
    ap.add_argument("--kind", default="adamw")
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=0.0)
    ap.add_argument("--lrs-from")
    ap.add_argument("--out", default="numpy.json")
    a = ap.parse_args(argv)
    params, x, y = state()
    p = {k: v.astype(np.float64) for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(w) for k, w in p.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8
    rates = [a.lr] * a.steps
    if a.lrs_from:
        rates = [s["lr"] for s in json.load(open(a.lrs_from))["steps"]]
    curve, norms = [], []
    for step in range(1, a.steps + 1):
        lr = rates[step - 1]
        loss, g = loss_and_grads(p, x, y)
        curve.append(loss)
        if a.clip > 0:
            norm = np.sqrt(sum((gk ** 2).sum() for gk in g.values()))
            norms.append(norm)
            factor = min(1.0, a.clip / (norm + 1e-6))
            g = {k: gk * factor for k, gk in g.items()}
        for k in p:
            gk = g[k]
            if a.kind == "sgd":
                gk = gk + a.wd * p[k]
                if a.momentum > 0:
                    m[k] = a.momentum * m[k] + gk
                    gk = m[k]
                p[k] = p[k] - lr * gk
                continue
            if a.kind == "adam":
                gk = gk + a.wd * p[k]
            m[k] = b1 * m[k] + (1 - b1) * gk
            v[k] = b2 * v[k] + (1 - b2) * gk ** 2
            mh = m[k] / (1 - b1 ** step)
            vh = v[k] / (1 - b2 ** step)
            update = mh / (np.sqrt(vh) + eps)
            if a.kind == "adamw":
                update = update + a.wd * p[k]
            p[k] = p[k] - lr * update
    json.dump({"steps": [{"loss": l} for l in curve], "grad_norms": norms},
              open(f"{a.dir}/{a.out}", "w"))


def curve(path):
    return [s["loss"] for s in json.load(open(path))["steps"]]


def compare(a, b, tol, tail=False):
    ca, cb = curve(a), curve(b)
    if tail:
        cb = cb[len(cb) - len(ca):]
    assert len(ca) == len(cb), (len(ca), len(cb))
    worst = max(abs(x - y) / (1e-6 + abs(y)) for x, y in zip(ca, cb))
    falls = cb[-1] < cb[0]
    print(f"{len(ca)} steps, worst relative difference {worst:.2e}, "
          f"loss {cb[0]:.4f} -> {cb[-1]:.4f}")
    assert worst <= tol, f"curves differ by {worst} > {tol}"
    assert falls, "the loss did not fall"
    print("curves agree")


cmd = sys.argv[1]
if cmd == "gen":
    gen(sys.argv[2], sys.argv[3])
elif cmd == "init":
    init(sys.argv[2])
elif cmd == "numpy":
    numpy_curve(sys.argv[2:])
elif cmd == "compare":
    compare(sys.argv[2], sys.argv[3], float(sys.argv[4]),
            len(sys.argv) > 5 and sys.argv[5] == "tail")
