"""Checks a LoRA fine-tuning run's checkpoints.

    lora_check.py EARLY.safetensors LATE.safetensors MERGED.safetensors ALPHA

EARLY and LATE are logical checkpoints of the same --lora-rank run after
fewer and more steps; MERGED is its --merge-lora export after LATE. Prints:
- whether every weight but the adapters is unchanged between EARLY and
  LATE (frozen), and the adapters changed;
- which tensors have optimizer state (only adapters may);
- whether MERGED holds exactly the model weights, without adapters or
  state, each W equal to W + (alpha / r) A B from LATE (f32 rounding).
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32,
          "I64": np.int64}


def load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    return {name: np.frombuffer(raw[8 + n + info["data_offsets"][0]:
                                    8 + n + info["data_offsets"][1]],
                                dtype=DTYPES[info["dtype"]]).reshape(
                                    info["shape"])
            for name, info in header.items() if name != "__metadata__"}

ADAPTER = (".lora_a", ".lora_b")
STATE = (".adam_m", ".adam_v", ".momentum")


def main():
    early, late, merged = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
    alpha = float(sys.argv[4])
    weights = [k for k in late if not k.endswith(STATE)
               and not k.startswith("optimizer.")]
    frozen = all(np.array_equal(early[k], late[k])
                 for k in weights if not k.endswith(ADAPTER))
    moved = any(not np.array_equal(early[k], late[k])
                for k in weights if k.endswith(".lora_b"))
    print("base frozen:", frozen, "adapters trained:", moved)
    stated = {k.rsplit(".", 1)[0] for k in late if k.endswith(STATE)}
    print("optimizer state only for adapters:",
          bool(stated) and all(k.endswith(ADAPTER) for k in stated))
    bases = [k for k in weights if not k.endswith(ADAPTER)]
    assert sorted(merged) == sorted(bases), sorted(set(merged) ^ set(bases))
    worst = 0.0
    for k in bases:
        want = late[k].astype(np.float32)
        if k + ".lora_a" in late:
            a, b = late[k + ".lora_a"], late[k + ".lora_b"]
            want = want + (alpha / a.shape[1]) * (a @ b)
        worst = max(worst, float(np.max(np.abs(merged[k] - want))))
    print(f"merged: {len(merged)} weights, worst difference {worst:.1e}:",
          "ok" if worst <= 1e-6 else "WRONG")


main()
