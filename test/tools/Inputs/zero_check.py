"""Compares a ZeRO run with plain data parallelism.

    zero_check.py PLAIN ZERO N

PLAIN and ZERO are path prefixes of two pc-run runs on N data-parallel
devices: PREFIX.json (--report), PLAIN.safetensors (a logical checkpoint,
--save) and ZERO/ (a sharded one, --save-format sharded: each rank's own
pieces). Prints the optimizer state each device holds under ZeRO as a
fraction of plain DP's (Adam's moments; plain DP holds them whole on every
device), whether the gradients were reduce-scattered rather than
all-reduced, whether the bytes each rank moved stay within 10 % of plain
DP's, and whether the measured peak went down.
"""

import glob
import json
import struct
import sys


def sizes(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: v["data_offsets"][1] - v["data_offsets"][0]
            for k, v in header.items() if k != "__metadata__"}


def params(tensors):
    return sum(b for k, b in tensors.items()
               if not any(k.endswith(s) for s in (".adam_m", ".adam_v"))
               and not k.startswith("optimizer."))


def moments(tensors):
    return sum(b for k, b in tensors.items()
               if k.endswith(".adam_m") or k.endswith(".adam_v"))


def main():
    plain, zero, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    whole = moments(sizes(plain + ".safetensors"))
    held = [moments(sizes(f))
            for f in sorted(glob.glob(zero + "/*-rank*.safetensors"))]
    ratios = {round(whole / h, 2) for h in held}
    print(f"{len(held)} ranks hold 1/{'/'.join(map(str, sorted(ratios)))} "
          "of the optimizer state each")
    # Under ZeRO-3 the weights are sharded too.
    weights = params(sizes(plain + ".safetensors"))
    wheld = [params(sizes(f))
             for f in sorted(glob.glob(zero + "/*-rank*.safetensors"))]
    if all(w < weights for w in wheld):
        wratios = {round(weights / w, 2) for w in wheld}
        print(f"{len(wheld)} ranks hold "
              f"1/{'/'.join(map(str, sorted(wratios)))} of the parameters "
              "each")
    p = json.load(open(plain + ".json"))["ranks"]
    z = json.load(open(zero + ".json"))["ranks"]
    print("reduce_scatter instead of all_reduce:",
          all("reduce_scatter" in r["collectives"] and
              "all_reduce" not in r["collectives"] for r in z))
    ratio = max(b["bytes_sent"] / a["bytes_sent"] for a, b in zip(p, z))
    if ratio <= 1.1:
        print("bytes moved within 10% of plain DP:", True)
    else:
        print(f"bytes moved {ratio:.2f}x plain DP's")
    print("measured peak lower:",
          all(b["peak_bytes"] < a["peak_bytes"] for a, b in zip(p, z)))


main()
