#!/usr/bin/env python3
"""The runtime's own cost where devices share a few cores.

    bench/shared_cores.py [--baseline OTHER/pc-run] [--repeats 3]

Trains the tiny GPT (4 layers, hidden 64, batch 16, sequence 32), whose
kernels are a small part of its step, on 1, 2 and 4 CPU devices (one
device; DP2; a 2-stage pipeline; DP4; TP4; a 4-stage GPipe), 40 steps in
one run each, and prints the median step after the first third and the
process's CPU seconds. With --baseline (another build's pc-run, e.g. from
a worktree of an earlier commit), the two binaries take turns, each case
--repeats times, and each figure is the median of its turns, with the
ratio baseline / this build.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("PC_BUILD", os.path.join(ROOT, "build"))
GPT = ["--layers=4", "--hidden=64", "--heads=4", "--batch=16", "--seq=32",
       "--vocab=128"]
CASES = [
    ("1 device", "1x1", ["--devices", "cpu:1"]),
    ("DP2", "2x1", ["--devices", "cpu:2"]),
    ("PP2 GPipe, m=4", "1x1", ["--devices", "cpu:2", "--stages", "2",
                               "--micro-batches", "4"]),
    ("DP4", "4x1", ["--devices", "cpu:4"]),
    ("TP4", "1x4", ["--devices", "cpu:4"]),
    ("PP4 GPipe, m=8", "1x1", ["--devices", "cpu:4", "--stages", "4",
                               "--micro-batches", "8"]),
]
STEPS = 40


def run(binary, model, extra, report):
    """(median step seconds, CPU seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, model, "--train", "--steps", str(STEPS),
                    "--steps-per-run", str(STEPS), "--lr", "0.001",
                    "--report", report] + extra,
                   stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                 before.ru_stime)
    walls = [s["wall_s"] for s in json.load(open(report))["steps"]]
    return statistics.median(walls[STEPS // 3:]), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--baseline", help="another build's pc-run to compare")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    binaries = [os.path.join(BUILD, "bin", "pc-run")]
    if args.baseline:
        binaries.insert(0, args.baseline)
    tmp = tempfile.mkdtemp()
    models = {}
    for _, mesh, _ in CASES:
        path = os.path.join(tmp, f"gpt{mesh}.mlir")
        with open(path, "w") as f:
            subprocess.run([sys.executable, os.path.join(ROOT, "bench",
                                                         "gen_gpt.py")] +
                           GPT + ["--mesh", mesh], stdout=f, check=True)
        models[mesh] = path
    figures = {}
    report = os.path.join(tmp, "report.json")
    for _ in range(args.repeats):
        for name, mesh, extra in CASES:
            for b in binaries:
                figures.setdefault((name, b), []).append(
                    run(b, models[mesh], extra, report))
    med = {k: (statistics.median(x[0] for x in v),
               statistics.median(x[1] for x in v))
           for k, v in figures.items()}
    head = f"{'case':16s}"
    for b in binaries:
        label = "baseline" if b == args.baseline else "this build"
        head += f" {label + ' step':>16s} {'CPU s':>6s}"
    print(head + (f" {'ratio':>6s}" if args.baseline else ""))
    for name, _, _ in CASES:
        line = f"{name:16s}"
        for b in binaries:
            step, cpu = med[(name, b)]
            line += f" {1e3 * step:13.2f} ms {cpu:6.2f}"
        if args.baseline:
            line += f" {med[(name, binaries[0])][0] / med[(name, binaries[1])][0]:6.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
