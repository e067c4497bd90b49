#!/usr/bin/env python3
"""Writes a GPT-style logical graph (forward pass and loss) as pc IR.

    gen_gpt.py --layers 96 --hidden 4096 --heads 64 --mesh 8x8 > gpt.mlir

The input ids and labels are split over the first mesh axis (data
parallel); the attention and MLP weights are annotated Megatron-style over
the last axis (column-parallel, then row-parallel). Everything else is left
to SBP propagation.
"""
import argparse

# GPT-3 (Brown et al. 2020): layers, hidden, heads.
PRESETS = {
    "gpt3-125m": (12, 768, 12), "gpt3-350m": (24, 1024, 16),
    "gpt3-1.3b": (24, 2048, 16), "gpt3-2.7b": (32, 2560, 32),
    "gpt3-6.7b": (32, 4096, 32), "gpt3-13b": (40, 5120, 40),
    "gpt3-175b": (96, 12288, 96),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--mesh", default="2x2", help="dp x tp, e.g. 8x8")
    ap.add_argument("--unannotated", action="store_true",
                    help="no layouts but the mesh, for --pc-auto-parallel")
    ap.add_argument("--preset", choices=sorted(PRESETS),
                    help="a GPT-3 size (sets layers, hidden, heads, seq, "
                         "vocab): the graph is shapes only, so GPT-3 175B "
                         "plans without allocating a tensor")
    a = ap.parse_args()
    if a.preset:
        a.layers, a.hidden, a.heads = PRESETS[a.preset]
        a.seq, a.vocab = 2048, 51200
    dp, tp = (int(x) for x in a.mesh.split("x"))
    h, nh, b, t, v = a.hidden, a.heads, a.batch, a.seq, a.vocab
    hd = h // nh
    assert nh * hd == h, "hidden must be a multiple of heads"

    out = []
    w = out.append
    sbp = lambda e: f"#pc.sbp<@mesh, [{e}]>"
    col, row = sbp("B, S(1)"), sbp("B, S(0)")
    data = sbp("S(0), B")
    out = []
    if a.unannotated:
        emit(a, h, nh, b, t, v, hd, dp, tp, None, None, None, out)
    else:
        emit(a, h, nh, b, t, v, hd, dp, tp, col, row, data, out)
    print("\n".join(out))


def emit(a, h, nh, b, t, v, hd, dp, tp, col, row, data, out):
    """Appends the module's lines to `out`; col/row/data None: unannotated."""
    def typed(shape, layout):
        return f"tensor<{shape}, {layout}>" if layout else f"tensor<{shape}>"
    w = out.append
    w(f'pc.mesh @mesh <["dp"={dp}, "tp"={tp}]>')
    w(f"pc.param @wte : tensor<{v}x{h}xf32> = #pc.init<normal(std = 0.02)>")
    w(f"pc.param @wpe : tensor<{t}x{h}xf32> = #pc.init<normal(std = 0.01)>")
    for i in range(a.layers):
        p = f"h{i}"
        for n in ("ln1.weight", "ln2.weight"):
            w(f"pc.param @{p}.{n} : tensor<{h}xf32> = #pc.init<ones>")
        for n in ("ln1.bias", "ln2.bias"):
            w(f"pc.param @{p}.{n} : tensor<{h}xf32> = #pc.init<zeros>")
        for n in ("q", "k", "v"):
            w(f"pc.param @{p}.attn.{n} : {typed(f'{h}x{h}xf32', col)} = #pc.init<normal(std = 0.02)>")
        w(f"pc.param @{p}.attn.out : {typed(f'{h}x{h}xf32', row)} = #pc.init<normal(std = 0.02)>")
        w(f"pc.param @{p}.mlp.fc : {typed(f'{h}x{4*h}xf32', col)} = #pc.init<normal(std = 0.02)>")
        w(f"pc.param @{p}.mlp.proj : {typed(f'{4*h}x{h}xf32', row)} = #pc.init<normal(std = 0.02)>")
    w(f"pc.param @lnf.weight : tensor<{h}xf32> = #pc.init<ones>")
    w(f"pc.param @lnf.bias : tensor<{h}xf32> = #pc.init<zeros>")
    w(f"pc.param @head : {typed(f'{h}x{v}xf32', col)} = #pc.init<normal(std = 0.02)>")

    X = f"tensor<{b}x{t}x{h}xf32>"
    H4 = f"tensor<{b}x{t}x{nh}x{hd}xf32>"
    HT = f"tensor<{b}x{nh}x{t}x{hd}xf32>"
    KT = f"tensor<{b}x{nh}x{hd}x{t}xf32>"
    S = f"tensor<{b}x{nh}x{t}x{t}xf32>"
    F = f"tensor<{b}x{t}x{4*h}xf32>"
    ids_t = typed(f"{b}x{t}xi64", data)
    w(f"func.func @gpt(%ids: {ids_t}, %labels: {ids_t}) -> tensor<f32> {{")
    n = [0]

    def val():
        n[0] += 1
        return f"%v{n[0]}"

    def op(text):
        r = val()
        w(f"  {r} = {text}")
        return r

    wte = op(f"pc.get_param @wte : tensor<{v}x{h}xf32>")
    wpe = op(f"pc.get_param @wpe : tensor<{t}x{h}xf32>")
    e = op(f"pc.embedding %ids, {wte} : ({ids_t}, tensor<{v}x{h}xf32>) -> {X}")
    x = op(f"pc.add {e}, {wpe} : ({X}, tensor<{t}x{h}xf32>) -> {X}")
    scale = op(f"pc.constant dense<{1.0 / hd ** 0.5}> : tensor<f32>")
    for i in range(a.layers):
        p = f"h{i}"
        g = {k: op(f"pc.get_param @{p}.{k} : tensor<{h}xf32>")
             for k in ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias")}
        wq, wk, wv = (op(f"pc.get_param @{p}.attn.{k} : {typed(f'{h}x{h}xf32', col)}")
                      for k in ("q", "k", "v"))
        wo = op(f"pc.get_param @{p}.attn.out : {typed(f'{h}x{h}xf32', row)}")
        w1 = op(f"pc.get_param @{p}.mlp.fc : {typed(f'{h}x{4*h}xf32', col)}")
        w2 = op(f"pc.get_param @{p}.mlp.proj : {typed(f'{4*h}x{h}xf32', row)}")
        ln = op(f"pc.layer_norm {x}, {g['ln1.weight']}, {g['ln1.bias']} : ({X}, tensor<{h}xf32>, tensor<{h}xf32>) -> {X}")
        heads = []
        for wm, perm, ty in ((wq, "0, 2, 1, 3", HT), (wk, "0, 2, 3, 1", KT), (wv, "0, 2, 1, 3", HT)):
            m = op(f"pc.matmul {ln}, {wm} : ({X}, {typed(f'{h}x{h}xf32', col)}) -> {X}")
            r = op(f"pc.reshape {m} : ({X}) -> {H4}")
            heads.append(op(f"pc.transpose {r} {{perm = array<i64: {perm}>}} : ({H4}) -> {ty}"))
        q, k, vv = heads
        s = op(f"pc.matmul {q}, {k} : ({HT}, {KT}) -> {S}")
        ss = op(f"pc.mul {s}, {scale} : ({S}, tensor<f32>) -> {S}")
        mk = op(f"pc.causal_mask {ss} : ({S}) -> {S}")
        pr = op(f"pc.softmax {mk} {{axis = -1 : i64}} : ({S}) -> {S}")
        o = op(f"pc.matmul {pr}, {vv} : ({S}, {HT}) -> {HT}")
        ot = op(f"pc.transpose {o} {{perm = array<i64: 0, 2, 1, 3>}} : ({HT}) -> {H4}")
        o3 = op(f"pc.reshape {ot} : ({H4}) -> {X}")
        at = op(f"pc.matmul {o3}, {wo} : ({X}, {typed(f'{h}x{h}xf32', row)}) -> {X}")
        x = op(f"pc.add {x}, {at} : ({X}, {X}) -> {X}")
        ln2 = op(f"pc.layer_norm {x}, {g['ln2.weight']}, {g['ln2.bias']} : ({X}, tensor<{h}xf32>, tensor<{h}xf32>) -> {X}")
        f = op(f"pc.matmul {ln2}, {w1} : ({X}, {typed(f'{h}x{4*h}xf32', col)}) -> {F}")
        fa = op(f"pc.gelu {f} {{approximate}} : ({F}) -> {F}")
        y = op(f"pc.matmul {fa}, {w2} : ({F}, {typed(f'{4*h}x{h}xf32', row)}) -> {X}")
        x = op(f"pc.add {x}, {y} : ({X}, {X}) -> {X}")
    gf = op(f"pc.get_param @lnf.weight : tensor<{h}xf32>")
    bf = op(f"pc.get_param @lnf.bias : tensor<{h}xf32>")
    wh = op(f"pc.get_param @head : {typed(f'{h}x{v}xf32', col)}")
    lf = op(f"pc.layer_norm {x}, {gf}, {bf} : ({X}, tensor<{h}xf32>, tensor<{h}xf32>) -> {X}")
    L = f"tensor<{b}x{t}x{v}xf32>"
    lo = op(f"pc.matmul {lf}, {wh} : ({X}, {typed(f'{h}x{v}xf32', col)}) -> {L}")
    ce = op(f"pc.cross_entropy {lo}, %labels : ({L}, {ids_t}) -> tensor<{b}x{t}xf32>")
    loss = op(f"pc.reduce_mean {ce} {{axes = array<i64: 0, 1>}} : (tensor<{b}x{t}xf32>) -> tensor<f32>")
    w(f"  return {loss} : tensor<f32>")
    w("}")


if __name__ == "__main__":
    main()
