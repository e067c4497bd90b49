"""Writes a .safetensors file for the pc-run tests: an 8-byte little-endian
header length, the JSON header, then the raw little-endian data.

usage: write_safetensors.py OUT [--drop NAME] [--rename NAME] [--reshape NAME]
                            [--truncate]
                            [--reference DIR]
Writes the parameters of examples/mlp_2x2.mlir with fixed random values.
--reference DIR also writes inputs DIR/arg0.npy, DIR/arg1.npy and the loss
that NumPy computes from them in float64, DIR/expected.npy: an oracle that
shares no code with pc."""
import json
import struct
import sys

import numpy as np

out = sys.argv[1]
args = sys.argv[2:]
rng = np.random.default_rng(7)
tensors = {
    "fc1.weight": rng.standard_normal((256, 1024)).astype(np.float32) * 0.05,
    "fc1.bias": rng.standard_normal(1024).astype(np.float32) * 0.05,
    "fc2.weight": rng.standard_normal((1024, 256)).astype(np.float32) * 0.05,
    "fc2.bias": rng.standard_normal(256).astype(np.float32) * 0.05,
}
if "--drop" in args:
    del tensors[args[args.index("--drop") + 1]]
if "--rename" in args:
    name = args[args.index("--rename") + 1]
    tensors["model." + name] = tensors.pop(name)
if "--reshape" in args:
    name = args[args.index("--reshape") + 1]
    tensors[name] = tensors[name].reshape(-1)[:16].reshape(4, 4)
if "--reference" in args:
    ref = args[args.index("--reference") + 1]
    x = rng.standard_normal((64, 256)).astype(np.float32)
    labels = rng.integers(0, 256, 64).astype(np.int64)
    np.save(ref + "/arg0.npy", x)
    np.save(ref + "/arg1.npy", labels)
    p = {k: v.astype(np.float64) for k, v in tensors.items()}
    h = x.astype(np.float64) @ p["fc1.weight"] + p["fc1.bias"]
    a = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
    y = a @ p["fc2.weight"] + p["fc2.bias"]
    m = y.max(axis=1, keepdims=True)
    lse = np.log(np.exp(y - m).sum(axis=1)) + m[:, 0]
    loss = (lse - y[np.arange(64), labels]).mean()
    np.save(ref + "/expected.npy", np.array(loss))
header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
for name, t in tensors.items():
    data = t.astype("<f4").tobytes()
    header[name] = {"dtype": "F32", "shape": list(t.shape),
                    "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
raw = json.dumps(header).encode()
body = b"".join(blobs)
if "--truncate" in args:
    body = body[: len(body) // 2]
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(raw)) + raw + body)
