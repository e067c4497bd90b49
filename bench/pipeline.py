"""Pipeline benchmarks: the bubble measured from the trace against the
prediction and the classic formula, and stage 0's peak memory under GPipe
and 1F1B, from the allocator.

    bench/pipeline.py [--build build] [--steps 3] [--stages 4]

Each run trains a deep MLP (bench/gen_mlp.py, 2 layers per stage) whose
micro-batch is fixed at --rows rows, so that an action costs the same for
every M (and GPipe's activations grow with M); the last of
--steps steps is traced. The measured bubble is, averaged over the ranks,
the share of the step (first action to last) their compute stream was
idle. The predicted bubble assumes unit-cost actions; the replayed one
replays the schedule with each action's measured compute time, so it adds
the stages' imbalance, and measured - replayed is what the runtime and the
machine add (overheads, and, with more stages than cores, waiting for the
CPU).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser(description=__doc__,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--build", default="build")
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--stages", type=int, default=4)
ap.add_argument("--rows", type=int, default=64)
ap.add_argument("--width", type=int, default=512)
ap.add_argument("--svg", default="", help="directory for the timelines")
a = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
pc_run = os.path.join(a.build, "bin", "pc-run")
p = a.stages
tmp = tempfile.mkdtemp(prefix="pc-bench-pipeline-")


def model(m, width, rows, features):
    path = os.path.join(tmp, f"mlp{m}.mlir")
    with open(path, "w") as f:
        subprocess.run([sys.executable, os.path.join(here, "gen_mlp.py"),
                        "--layers", str(2 * p), "--width", str(width),
                        "--features", str(features),
                        "--batch", str(rows * m)], stdout=f, check=True)
    return path


def run(m, schedule, extra=(), width=a.width, rows=a.rows, features=0):
    report = os.path.join(tmp, "r.json")
    cmd = [pc_run, model(m, width, rows, features), "--devices", f"cpu:{p}",
           "--stages", str(p),
           "--micro-batches", str(m), "--pipeline-schedule", schedule,
           "--train", "--steps", str(a.steps), "--threads-per-device", "1",
           "--report", report, *extra]
    if a.svg:
        cmd += ["--trace-svg", os.path.join(a.svg, f"measured-{schedule}-p{p}-m{m}.svg")]
    else:
        cmd += ["--trace-svg", os.path.join(tmp, "t.svg")]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    with open(report) as f:
        return json.load(f)


print(f"p = {p} stages, {a.rows} rows per micro-batch, width {a.width}, "
      f"{os.cpu_count()} cores\n")
print("| schedule | M | classic | predicted | replayed | measured | measured - predicted |")
print("|---|---|---|---|---|---|---|")
schedules = [("gpipe", ()), ("1f1b", ()), ("interleaved", ("--virtual-stages", "2")),
             ("zb-h1", ())]
for m in (4, 8, 16):
    classic = (p - 1) / (m + p - 1)
    for name, extra in schedules:
        r = run(m, name, extra)["pipeline"]
        print(f"| {name} | {m} | {100 * classic:.1f}% | "
              f"{100 * r['predicted_bubble']:.1f}% | "
              f"{100 * r['replayed_bubble']:.1f}% | "
              f"{100 * r['measured_bubble']:.1f}% | "
              f"{100 * (r['measured_bubble'] - r['predicted_bubble']):+.1f} pp |")
    sys.stdout.flush()

print("\nStage 0's peak bytes from the allocator (parameters, inputs, "
      "activations; SGD, 256 rows of 256 units per micro-batch, 16 input "
      "features, so that activations dominate):\n")
print("| M | GPipe | 1F1B | GPipe / 1F1B |")
print("|---|---|---|---|")
for m in (4, 8, 16):
    peak = {}
    for name in ("gpipe", "1f1b"):
        ranks = run(m, name, ("--optimizer", "sgd"), width=256, rows=256,
                    features=16)["ranks"]
        peak[name] = next(r["peak_bytes"] for r in ranks if r["rank"] == 0)
    print(f"| {m} | {peak['gpipe'] / 2**20:.2f} MiB | {peak['1f1b'] / 2**20:.2f} MiB "
          f"| {peak['gpipe'] / peak['1f1b']:.2f} |")
