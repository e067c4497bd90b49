"""Memory techniques against plain data parallelism, in one run of this
script: each device's peak memory (measured by the allocator, and
predicted by the memory plan) and the steady step time, for every
technique, as ratios against plain DP measured alongside.

    bench/memory.py [--build build] [--steps 12] [--devices 4] [--only bf16,f16]

The model is a GPT (bench/gen_gpt.py) on DP over --devices CPU virtual
devices, one step per run (as under a budget, so that the peak is one
step's). Step times are the median of the steps after the first two; the
machine is shared and noisy, so compare the ratios, not the seconds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser(description=__doc__,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--steps", type=int, default=12)
ap.add_argument("--devices", type=int, default=4)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--hidden", type=int, default=128)
ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--vocab", type=int, default=1024)
ap.add_argument("--only", default="",
                help="comma-separated parts of technique names to run (plain "
                     "DP, the baseline, always runs)")
a = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
pc_run = os.path.join(a.build, "bin", "pc-run")
tmp = tempfile.mkdtemp(prefix="pc-bench-memory-")
model = os.path.join(tmp, "gpt.mlir")
with open(model, "w") as f:
    subprocess.run([sys.executable, os.path.join(here, "gen_gpt.py"),
                    "--mesh", f"{a.devices}x1", "--layers", str(a.layers),
                    "--hidden", str(a.hidden), "--heads", "4", "--vocab",
                    str(a.vocab), "--seq", str(a.seq), "--batch",
                    str(a.batch)], stdout=f, check=True)

TECHNIQUES = [
    ("plain DP", []),
    ("in-place updates", ["--in-place-updates"]),
    ("ZeRO-1", ["--zero", "1"]),
    ("ZeRO-2", ["--zero", "2"]),
    ("ZeRO-3", ["--zero", "3"]),
    ("recompute selective", ["--recompute", "selective"]),
    ("recompute full", ["--recompute", "full"]),
    ("8-bit Adam states", ["--state-bits", "8"]),
    ("LoRA r=16 (q, v)", ["--lora-rank", "16"]),
    ("mixed precision bf16", ["--mixed-precision", "bf16"]),
    ("mixed precision bf16, only the loss f32",
     ["--mixed-precision", "bf16", "--f32-ops", "cross_entropy,reduce_mean"]),
    ("mixed precision f16, dynamic scaling", ["--mixed-precision", "f16"]),
    ("offload optimizer (ZeRO-2)", ["--zero", "2", "--offload", "optimizer"]),
    ("offload all (ZeRO-3)", ["--zero", "3", "--offload", "all"]),
    ("ZeRO-3 + recompute full + 8-bit", ["--zero", "3", "--recompute", "full",
                                         "--state-bits", "8"]),
    ("ZeRO-2 + bf16 + recompute full", ["--zero", "2", "--mixed-precision",
                                        "bf16", "--recompute", "full"]),
    ("ZeRO-2 + recompute full + in place", ["--zero", "2", "--recompute",
                                            "full", "--in-place-updates"]),
]
if a.only:
    parts = a.only.split(",")
    TECHNIQUES = [t for i, t in enumerate(TECHNIQUES)
                  if i == 0 or any(p in t[0] for p in parts)]


def run(name, flags):
    report = os.path.join(tmp, "report.json")
    cmd = [pc_run, model, "--devices", f"cpu:{a.devices}", "--train",
           "--steps", str(a.steps), "--steps-per-run", "1", "--seed", "3",
           "--report", report] + flags
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    r = json.load(open(report))
    times = [s["wall_s"] for s in r["steps"]][2:]
    return {
        "measured": max(x["peak_bytes"] for x in r["ranks"]),
        "predicted": max(x["predicted_memory"]["peak"] for x in r["ranks"]),
        "state": max(x["predicted_memory"]["optimizer_state"]
                     for x in r["ranks"]),
        "step": statistics.median(times),
        "loss": r["steps"][-1]["loss"],
    }


rows = [(name, run(name, flags)) for name, flags in TECHNIQUES]
base = rows[0][1]
mib = 1 << 20
print(f"GPT {a.layers} layers, hidden {a.hidden}, seq {a.seq}, batch "
      f"{a.batch}, vocab {a.vocab}, DP{a.devices}; {a.steps} steps each\n")
print("| technique | peak per device (measured) | vs plain | predicted | "
      "step time | vs plain | loss after the steps |")
print("|---|---|---|---|---|---|---|")
for name, r in rows:
    print(f"| {name} | {r['measured'] / mib:.1f} MiB | "
          f"{r['measured'] / base['measured']:.2f}x | "
          f"{r['predicted'] / mib:.1f} MiB | {r['step'] * 1000:.1f} ms | "
          f"{r['step'] / base['step']:.2f}x | {r['loss']:.4f} |")
