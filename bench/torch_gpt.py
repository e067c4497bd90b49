#!/usr/bin/env python3
"""The baseline of bench/gpt_step.py: the same GPT in PyTorch (Debian's
python3-torch 1.13, which bench/setup-torch.sh installs), a training step
(forward, backward, AdamW) and a forward pass, medians of 10 after 2 warm-up
steps. Prints one JSON line.

    torch_gpt.py THREADS [--layers 4 --hidden 256 --heads 8 --vocab 512
                          --seq 128 --batch 16]
"""
import argparse, json, math, time
import torch

ap = argparse.ArgumentParser()
ap.add_argument("threads", type=int)
for k, v in dict(layers=4, hidden=256, heads=8, vocab=512, seq=128, batch=16).items():
    ap.add_argument("--" + k, type=int, default=v)
a = ap.parse_args()
torch.set_num_threads(a.threads)
L, H, NH, V, T, B = a.layers, a.hidden, a.heads, a.vocab, a.seq, a.batch
hd = H // NH
g = torch.Generator().manual_seed(0)


def param(*shape, std=0.02):
    return (torch.randn(*shape, generator=g) * std).requires_grad_()


def ones(n):
    return torch.ones(n, requires_grad=True)


def zeros(n):
    return torch.zeros(n, requires_grad=True)


wte, wpe = param(V, H), param(T, H, std=0.01)
layers = [dict(l1w=ones(H), l1b=zeros(H), l2w=ones(H), l2b=zeros(H),
               q=param(H, H), k=param(H, H), v=param(H, H), o=param(H, H),
               fc=param(H, 4 * H), pr=param(4 * H, H)) for _ in range(L)]
lfw, lfb, head = ones(H), zeros(H), param(H, V)
params = [wte, wpe, lfw, lfb, head] + [p for l in layers for p in l.values()]
ids = torch.randint(0, V, (B, T), generator=g)
labels = torch.randint(0, V, (B, T), generator=g)
mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
F = torch.nn.functional


def forward():
    x = wte[ids] + wpe
    for l in layers:
        h = F.layer_norm(x, (H,), l["l1w"], l["l1b"])
        q = (h @ l["q"]).view(B, T, NH, hd).transpose(1, 2)
        k = (h @ l["k"]).view(B, T, NH, hd).permute(0, 2, 3, 1)
        v = (h @ l["v"]).view(B, T, NH, hd).transpose(1, 2)
        s = ((q @ k) * (1 / math.sqrt(hd))).masked_fill(mask, float("-inf"))
        o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, H)
        x = x + o @ l["o"]
        h = F.layer_norm(x, (H,), l["l2w"], l["l2b"])
        x = x + F.gelu(h @ l["fc"], approximate="tanh") @ l["pr"]
    x = F.layer_norm(x, (H,), lfw, lfb)
    return F.cross_entropy((x @ head).view(-1, V), labels.view(-1))


opt = torch.optim.AdamW(params, lr=1e-3)


def step():
    opt.zero_grad()
    loss = forward()
    loss.backward()
    opt.step()


def median(fn, n=10):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[n // 2]


for _ in range(2):
    step()
step_s = median(step)
with torch.no_grad():
    forward_s = median(forward)
print(json.dumps({"threads": torch.get_num_threads(), "step_s": step_s,
                  "forward_s": forward_s}))
