"""Compares the optimizer state of an f32-state run and an 8-bit one.

    state_bits_check.py F32 BITS8     (path prefixes of two pc-run runs)
    state_bits_check.py BITS8         (one run)

Each prefix has PREFIX.json (--report) and PREFIX.safetensors (--save).
With two, prints how many times smaller the 8-bit run's optimizer state is
in the checkpoint and in the predicted peak, and whether its measured peak
is lower. With one, lists the weights whose moments are 8-bit.
"""
import json
import struct
import sys

SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "U8": 1}


def header(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return {k: v for k, v in json.loads(raw[8:8 + n]).items()
            if k != "__metadata__"}


def state_bytes(h):
    total = 0
    for name, info in h.items():
        if ".adam_" in name or name.startswith("optimizer."):
            n = 1
            for d in info["shape"]:
                n *= d
            total += n * SIZES[info["dtype"]]
    return total


def main():
    if len(sys.argv) == 2:
        h = header(sys.argv[1] + ".safetensors")
        names = sorted(k[:-len(".adam_m")] for k, v in h.items()
                       if k.endswith(".adam_m") and v["dtype"] == "U8")
        print("8-bit states:", ", ".join(names))
        return
    a, b = sys.argv[1], sys.argv[2]
    ratio = state_bytes(header(a + ".safetensors")) / state_bytes(
        header(b + ".safetensors"))
    print(f"optimizer state in the checkpoint: {ratio:.2f}x smaller")
    ra = json.load(open(a + ".json"))["ranks"]
    rb = json.load(open(b + ".json"))["ranks"]
    p = (ra[0]["predicted_memory"]["optimizer_state"] /
         rb[0]["predicted_memory"]["optimizer_state"])
    print(f"predicted optimizer state at the peak: {p:.2f}x smaller")
    print("measured peak lower:",
          all(y["peak_bytes"] < x["peak_bytes"] for x, y in zip(ra, rb)))


main()
