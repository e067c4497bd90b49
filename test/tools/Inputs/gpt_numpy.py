"""An independent NumPy implementation (float64, backward by hand) of the
GPT that bench/gen_gpt.py writes, trained with AdamW: the oracle for pc's
single-device GPT training curve. It shares no code with pc.

  gpt_numpy.py inputs DIR B T V        DIR/arg0.npy (ids), DIR/arg1.npy (labels)
  gpt_numpy.py greedy PARAMS HEADS PROMPT N   PROMPT and the N bytes
      greedy decoding gives after it, as pc-run --generate prints them
  gpt_numpy.py train PARAMS DIR HEADS STEPS LR OUT.json
      PARAMS: a logical checkpoint of the initial state (pc-run --train
      --steps 0 --save), DIR: the inputs; writes the loss curve."""
import json
import struct
import sys

import numpy as np

K = np.sqrt(2 / np.pi)
EPS_LN = 1e-5


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype=np.float32).reshape(
            t["shape"]).astype(np.float64)
    return out


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdims=True)
    r = 1 / np.sqrt(var + EPS_LN)
    xh = xc * r
    return xh * g + b, (xh, r, g)


def layer_norm_back(dy, cache):
    xh, r, g = cache
    dg = (dy * xh).reshape(-1, xh.shape[-1]).sum(0)
    db = dy.reshape(-1, xh.shape[-1]).sum(0)
    d = dy * g
    dx = r * (d - d.mean(-1, keepdims=True) -
              xh * (d * xh).mean(-1, keepdims=True))
    return dx, dg, db


def gelu(x):
    t = np.tanh(K * (x + 0.044715 * x ** 3))
    return 0.5 * x * (1 + t), t


def gelu_back(dy, x, t):
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K *
                 (1 + 3 * 0.044715 * x * x))


def forward(p, ids, heads, layers):
    """The logits, and what the backward pass needs."""
    B, T = ids.shape
    V, H = p["wte"].shape
    hd = H // heads
    scale = 1 / np.sqrt(hd)
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    x = p["wte"][ids] + p["wpe"][:T]
    caches = []
    for i in range(layers):
        q_ = f"h{i}."
        ln, c1 = layer_norm(x, p[q_ + "ln1.weight"], p[q_ + "ln1.bias"])
        split = lambda m: m.reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
        q, k, v = (split(ln @ p[q_ + "attn." + n]) for n in "qkv")
        s = q @ k.transpose(0, 1, 3, 2) * scale
        s = np.where(mask, -np.inf, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        pr = e / e.sum(-1, keepdims=True)
        o = pr @ v
        o3 = o.transpose(0, 2, 1, 3).reshape(B, T, H)
        x1 = x + o3 @ p[q_ + "attn.out"]
        ln2, c2 = layer_norm(x1, p[q_ + "ln2.weight"], p[q_ + "ln2.bias"])
        f = ln2 @ p[q_ + "mlp.fc"]
        fa, t = gelu(f)
        x2 = x1 + fa @ p[q_ + "mlp.proj"]
        caches.append((x, ln, c1, q, k, v, pr, o3, x1, ln2, c2, f, fa, t))
        x = x2
    lf, cf = layer_norm(x, p["lnf.weight"], p["lnf.bias"])
    return lf @ p["head"], caches, lf, cf


def step(p, ids, labels, heads, layers):
    B, T = ids.shape
    V, H = p["wte"].shape
    hd = H // heads
    scale = 1 / np.sqrt(hd)
    logits, caches, lf, cf = forward(p, ids, heads, layers)
    m = logits.max(-1, keepdims=True)
    z = np.exp(logits - m)
    sm = z / z.sum(-1, keepdims=True)
    n = B * T
    picked = np.take_along_axis(np.log(sm), labels[..., None], -1)
    loss = -picked.mean()

    g = {}
    dlogits = sm.copy()
    np.put_along_axis(dlogits, labels[..., None],
                      np.take_along_axis(dlogits, labels[..., None], -1) - 1,
                      -1)
    dlogits /= n
    g["head"] = lf.reshape(-1, H).T @ dlogits.reshape(-1, V)
    dx, g["lnf.weight"], g["lnf.bias"] = layer_norm_back(
        dlogits @ p["head"].T, cf)
    for i in reversed(range(layers)):
        q_ = f"h{i}."
        (x0, ln, c1, q, k, v, pr, o3, x1, ln2, c2, f, fa, t) = caches[i]
        # MLP
        g[q_ + "mlp.proj"] = fa.reshape(-1, 4 * H).T @ dx.reshape(-1, H)
        dfa = dx @ p[q_ + "mlp.proj"].T
        df = gelu_back(dfa, f, t)
        g[q_ + "mlp.fc"] = ln2.reshape(-1, H).T @ df.reshape(-1, 4 * H)
        dln2 = df @ p[q_ + "mlp.fc"].T
        d1, g[q_ + "ln2.weight"], g[q_ + "ln2.bias"] = layer_norm_back(dln2, c2)
        dx1 = dx + d1
        # Attention
        g[q_ + "attn.out"] = o3.reshape(-1, H).T @ dx1.reshape(-1, H)
        do3 = dx1 @ p[q_ + "attn.out"].T
        do = do3.reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
        dpr = do @ v.transpose(0, 1, 3, 2)
        dv = pr.transpose(0, 1, 3, 2) @ do
        ds = pr * (dpr - (dpr * pr).sum(-1, keepdims=True)) * scale
        dq = ds @ k
        dk = ds.transpose(0, 1, 3, 2) @ q
        merge = lambda a: a.transpose(0, 2, 1, 3).reshape(B, T, H)
        dln = 0
        for name, dm in (("q", dq), ("k", dk), ("v", dv)):
            dm = merge(dm)
            g[q_ + "attn." + name] = ln.reshape(-1, H).T @ dm.reshape(-1, H)
            dln = dln + dm @ p[q_ + "attn." + name].T
        d0, g[q_ + "ln1.weight"], g[q_ + "ln1.bias"] = layer_norm_back(dln, c1)
        dx = dx1 + d0
    g["wpe"] = dx.sum(0)
    dwte = np.zeros_like(p["wte"])
    np.add.at(dwte, ids, dx)
    g["wte"] = dwte
    return loss, g


def train(params_path, d, heads, steps, lr, out):
    state = read_safetensors(params_path)
    p = {k: v for k, v in state.items()
         if not k.endswith((".adam_m", ".adam_v")) and k != "optimizer.step"}
    layers = len({k.split(".")[0] for k in p
                  if k[0] == "h" and k.split(".")[0][1:].isdigit()})
    ids = np.load(f"{d}/arg0.npy")
    labels = np.load(f"{d}/arg1.npy")
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(w) for k, w in p.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8
    curve = []
    for t in range(1, steps + 1):
        loss, g = step(p, ids, labels, heads, layers)
        assert set(g) == set(p), set(p) ^ set(g)
        curve.append(loss)
        for k in p:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
            mh = m[k] / (1 - b1 ** t)
            vh = v[k] / (1 - b2 ** t)
            p[k] = p[k] - lr * mh / (np.sqrt(vh) + eps)
    json.dump({"steps": [{"loss": l} for l in curve]}, open(out, "w"))


def greedy(params_path, heads, prompt, n):
    """Greedy decoding, the context recomputed per token, after `prompt`
    (its bytes as ids)."""
    p = read_safetensors(params_path)
    layers = sum(1 for k in p if k.endswith(".ln1.weight"))
    T = p["wpe"].shape[0]
    context = list(prompt.encode())
    for _ in range(n):
        window = np.array([context[-T:]])
        logits = forward(p, window, heads, layers)[0]
        context.append(int(np.argmax(logits[0, -1])))
    # As pc-run prints a sample: printable ASCII and newlines as they are,
    # other bytes escaped.
    print(prompt + "".join(
        chr(i) if i == 10 or 32 <= i < 127 else "\\x%02x" % i
        for i in context[len(prompt.encode()):]))


if sys.argv[1] == "inputs":
    d, B, T, V = sys.argv[2], *map(int, sys.argv[3:6])
    rng = np.random.default_rng(4)
    np.save(f"{d}/arg0.npy", rng.integers(0, V, (B, T)).astype(np.int64))
    np.save(f"{d}/arg1.npy", rng.integers(0, V, (B, T)).astype(np.int64))
elif sys.argv[1] == "greedy":
    greedy(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
elif sys.argv[1] == "train":
    train(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
          float(sys.argv[6]), sys.argv[7])
