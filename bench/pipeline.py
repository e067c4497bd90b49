"""Pipeline benchmarks: the bubble measured from the trace against the
classic formula, the schedule's own prediction and pc-simulate's, and stage
0's peak memory under GPipe and 1F1B, from the allocator.

    bench/pipeline.py [--build build] [--stages 4] [--compute auto]

Each run trains a deep MLP of equal layers (bench/gen_mlp.py --balanced, 2
layers per stage) whose micro-batch is fixed at --rows rows, so that an
action costs the same for every M; of --steps steps, each its own run, the
last is traced. The measured bubble is, averaged over the ranks, the share
of that step (first action to last) their compute stream was idle.

Compute is real, or emulated (pc-run --emulate-compute): each compute op
waits the time it took alone on one core (--profile-ops, measured once),
holding its stage's stream but no core. With fewer than two cores per
stage (--compute auto picks emulation then: a stage's dispatcher and
communication threads want a core beside its kernels) real kernels wait
for the CPU as well as for each other, which no schedule accounts for;
emulated, the runtime's actors, streams,
sends and receives and the schedule's order run for real and stages wait
only for each other, as on devices of their own.

Predictions:
  classic    (p - 1) / (m + p - 1) (GPipe, 1F1B), (p - 1) / (vm + p - 1)
             (interleaved), (p - 1) / (3m + p - 1) (ZB-H1)
  schedule   the schedule's lists replayed with unit-cost F, B, W
             (pc-run --plan prints it)
  simulated  pc-simulate, op by op over the op profile (each action's ops
             in order, sends and receives with the cost model's latency)
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
ap.add_argument("--rows", type=int, default=128)
ap.add_argument("--width", type=int, default=2048)
ap.add_argument("--compute", choices=("auto", "real", "emulated"),
                default="auto",
                help="auto: emulated with fewer than 2 cores per stage")
ap.add_argument("--svg", default="", help="directory for the timelines")
a = ap.parse_args()

here = os.path.dirname(os.path.abspath(__file__))
pc_run = os.path.join(a.build, "bin", "pc-run")
p = a.stages
cores = len(os.sched_getaffinity(0))  # the cores this process may use
emulated = a.compute == "emulated" or (a.compute == "auto" and 2 * p > cores)
tmp = tempfile.mkdtemp(prefix="pc-bench-pipeline-")
profile = os.path.join(tmp, "ops.json")


def model(m, width, rows, balanced, features=0):
    path = os.path.join(tmp, f"mlp{m}-{width}-{rows}.mlir")
    extra = ["--balanced"] if balanced else ["--features", str(features)]
    with open(path, "w") as f:
        subprocess.run([sys.executable, os.path.join(here, "gen_mlp.py"),
                        "--layers", str(2 * p), "--width", str(width),
                        "--batch", str(rows * m), *extra], stdout=f, check=True)
    return path


def run(path, m, schedule, extra=(), svg=None, steps=a.steps):
    report = os.path.join(tmp, "r.json")
    cmd = [pc_run, path, "--devices", f"cpu:{p}", "--stages", str(p),
           "--micro-batches", str(m), "--pipeline-schedule", schedule,
           "--train", "--steps", str(steps), "--steps-per-run", "1",
           "--threads-per-device", "1", "--report", report, *extra]
    if svg:
        cmd += ["--trace-svg", svg]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    with open(report) as f:
        return json.load(f)


def bubbles():
    print(f"p = {p} stages, {a.rows} rows of {a.width} units per "
          f"micro-batch, {cores} cores, compute "
          f"{'emulated' if emulated else 'real'}\n")
    print("| schedule | M | classic | schedule | simulated | measured "
          "| measured - simulated | measured - classic |")
    print("|---|---|---|---|---|---|---|---|")
    schedules = [("gpipe", ()), ("1f1b", ()),
                 ("interleaved", ("--virtual-stages", "2")), ("zb-h1", ())]
    timing = ["--simulate", "--op-profile", profile]
    if emulated:
        timing.append("--emulate-compute")
    for m in (4, 8, 16):
        path = model(m, a.width, a.rows, balanced=True)
        if not os.path.exists(profile):  # one profile: the shapes stay
            run(path, m, "1f1b", ("--simulate", "--profile-ops",
                                  "--op-profile", profile), steps=1)
        for name, extra in schedules:
            v = 2 if name == "interleaved" else 1
            classic = ((p - 1) / (3 * m + p - 1) if name == "zb-h1"
                       else (p - 1) / (v * m + p - 1))
            svg = (os.path.join(a.svg, f"measured-{name}-p{p}-m{m}.svg")
                   if a.svg else os.path.join(tmp, "t.svg"))
            r = run(path, m, name, (*extra, *timing), svg)["pipeline"]
            got, sim = r["measured_bubble"], r["simulated_bubble"]
            print(f"| {name} | {m} | {100 * classic:.1f}% | "
                  f"{100 * r['predicted_bubble']:.1f}% | {100 * sim:.1f}% | "
                  f"{100 * got:.1f}% | {100 * (got - sim):+.1f} pp | "
                  f"{100 * (got - classic):+.1f} pp |")
            sys.stdout.flush()


def memory():
    print("\nStage 0's peak bytes from the allocator (real compute: "
          "parameters, inputs, activations; SGD, 256 rows of 256 units per "
          "micro-batch, 16 input features, so that activations dominate):\n")
    print("| M | GPipe | 1F1B | GPipe / 1F1B |")
    print("|---|---|---|---|")
    for m in (4, 8, 16):
        path = model(m, 256, 256, balanced=False, features=16)
        peak = {}
        for name in ("gpipe", "1f1b"):
            ranks = run(path, m, name, ("--optimizer", "sgd"))["ranks"]
            peak[name] = next(r["peak_bytes"] for r in ranks if r["rank"] == 0)
        print(f"| {m} | {peak['gpipe'] / 2**20:.2f} MiB | "
              f"{peak['1f1b'] / 2**20:.2f} MiB | "
              f"{peak['gpipe'] / peak['1f1b']:.2f} |")


bubbles()
memory()
