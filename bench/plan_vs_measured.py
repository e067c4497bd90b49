#!/usr/bin/env python3
"""pc-plan's ranking of a graph's plans against pc's own runtime.

    bench/plan_vs_measured.py [--devices 4] [--top 6] [--steps 20]

Writes the tiny GPT with no layout but its mesh (bench/gen_gpt.py
--unannotated), plans it with `pc-plan MODEL.mlir` on CPU virtual devices
(planner/clusters/cpu-virtual.json, or --cluster), then trains each of the
top plans, and the best plan of one stage, with pc-run for --steps steps
and prints predicted against measured step time (the median of the last
two thirds), the Kendall tau of the two rankings, and whether pc-plan's #1
is the fastest measured. Run it on an idle machine; the measured side is
noisy on shared cores.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from simulate_vs_measured import kendall_tau

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("PC_BUILD", os.path.join(ROOT, "build"))
ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+([0-9.]+)\s+[0-9.]+ [KM]iB\s*$")


def run_options(plan, mesh):
    """pc-run options for a plan string such as dp=2,tp=1,pp=2,m=4,1f1b."""
    sizes, opts = [], []
    for part in plan.split(","):
        key, _, value = part.partition("=")
        if not value:
            opts += ["--pipeline-schedule", key]
        elif key == "pp":
            opts += ["--stages", value]
        elif key == "v":
            opts += ["--virtual-stages", value]
        elif key == "m":
            opts += ["--micro-batches", value]
        else:
            sizes.append(value)
    return ["--mesh-shape", f"{mesh}={'x'.join(sizes)}"] + opts


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cluster",
                    default=os.path.join(ROOT, "planner", "clusters",
                                         "cpu-virtual.json"))
    ap.add_argument("--gpt", default="--layers 4 --hidden 64 --heads 4 "
                    "--batch 16 --seq 32 --vocab 256",
                    help="bench/gen_gpt.py's flags")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    model = os.path.join(tmp, "gpt.mlir")
    with open(model, "w") as f:
        subprocess.run([sys.executable, os.path.join(ROOT, "bench",
                                                     "gen_gpt.py"),
                        "--unannotated"] + args.gpt.split(), stdout=f,
                       check=True)
    out = subprocess.run([os.path.join(BUILD, "bin", "pc-plan"), model,
                          "--cluster", args.cluster, "--devices-per-node",
                          str(args.devices), "--top", "1000"],
                         capture_output=True, text=True, check=True).stdout
    rows = [(int(m[1]), m[2], float(m[3]) / 1e3)
            for m in map(ROW.match, out.splitlines()) if m]
    chosen = rows[:args.top]
    one_stage = next((r for r in rows if "pp=" not in r[1]), None)
    if one_stage and one_stage not in chosen:
        chosen.append(one_stage)
    results = []
    for rank, plan, predicted in chosen:
        report = os.path.join(tmp, "report.json")
        cmd = [os.path.join(BUILD, "bin", "pc-run"), model, "--train",
               "--auto-parallel", "--cluster", args.cluster, "--devices",
               f"cpu:{args.devices}", "--steps", str(args.steps), "--report",
               report] + run_options(plan, "mesh")
        subprocess.run(cmd, capture_output=True, text=True, check=True)
        steps = [s["wall_s"] for s in json.load(open(report))["steps"]]
        measured = statistics.median(steps[args.steps // 3:])
        results.append((rank, plan, predicted, measured))
    print(f"{'rank':>4s}  {'plan':36s} {'predicted ms':>12s} "
          f"{'measured ms':>12s} {'error':>7s}")
    for rank, plan, p, m in results:
        print(f"{rank:4d}  {plan:36s} {1e3 * p:12.2f} {1e3 * m:12.2f} "
              f"{100 * (p - m) / m:+6.1f}%")
    tau = (kendall_tau([r[2] for r in results], [r[3] for r in results])
           if len(results) > 1 else 1.0)
    fastest = min(results, key=lambda r: r[3])
    print(f"Kendall tau {tau:.2f} over {len(results)} plans; the fastest "
          f"measured is pc-plan's #{fastest[0]} ({fastest[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
