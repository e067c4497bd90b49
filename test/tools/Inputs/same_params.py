"""Compares the tensors of two .safetensors checkpoints (pc's logical
format): same names, shapes and types, and values equal (tolerance 0) or
within a relative tolerance of the largest magnitude.

    same_params.py A.safetensors B.safetensors TOL
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32,
          "I64": np.int64, "BF16": np.uint16, "U8": np.uint8}


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(raw[base + begin:base + end],
                                  dtype=DTYPES[info["dtype"]]).reshape(
                                      info["shape"])
    return out


def main():
    a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    worst = 0.0
    for name in a:
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        assert x.shape == y.shape, (name, x.shape, y.shape)
        scale = max(np.abs(y).max(initial=0.0), 1e-30)
        worst = max(worst, float(np.abs(x - y).max(initial=0.0) / scale))
    print(f"{len(a)} tensors, worst relative difference {worst:.2e}")
    assert worst <= tol, f"parameters differ by {worst} > {tol}"
    print("parameters agree")


if __name__ == "__main__":
    main()
