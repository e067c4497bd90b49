#!/usr/bin/env python3
"""A GPT training step and forward pass: pc against PyTorch, side by side.

The model of issue 17: 4 layers, hidden 256, 8 heads, vocabulary 512,
sequence 128, batch 16 (bench/gen_gpt.py writes it; bench/torch_gpt.py is
the same model in PyTorch, the baseline, installed by bench/setup-torch.sh).
Each figure is a median of the same run, so the ratios hold on a noisy
machine:

  - pc on 1 device with 1 thread against PyTorch with 1 thread: a training
    step (forward, backward, AdamW) and a forward pass;
  - pc on cpu:2 (data parallel, one thread each) against PyTorch's best
    single-process step on the machine's cores;
  - pc's step over its forward pass;
  - pc's time from session creation to the first step's first kernel, and
    its per-step time outside kernels (from a trace of the last step).

    bench/gpt_step.py [--build build] [--steps 12] [--steps-per-run 4]
                      [--repeat 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = dict(layers=4, hidden=256, heads=8, vocab=512, seq=128, batch=16)


def gen(path, mesh):
    args = [sys.executable, os.path.join(HERE, "gen_gpt.py"), "--mesh", mesh]
    for k, v in MODEL.items():
        args += ["--" + k, str(v)]
    with open(path, "w") as f:
        subprocess.run(args, stdout=f, check=True)


def pc_run(build, model, out, devices, threads, steps, train, per_run):
    report = os.path.join(out, "report.json")
    trace = os.path.join(out, "trace.json")
    args = [os.path.join(build, "bin", "pc-run"), model, "--devices",
            f"cpu:{devices}", "--threads-per-device", str(threads), "--steps",
            str(steps), "--report", report]
    args += ["--trace", trace]
    if train:
        args += ["--train", "--steps-per-run", str(per_run)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(report) as f:
        r = json.load(f)
    if not train:
        return {"kernels_s": kernel_span(trace)}
    walls = [s["wall_s"] for s in r["steps"]]
    result = {"step_s": statistics.median(walls[2:]), "first_s": walls[0]}
    # The traced last run of steps: rank 0's kernels, and when the first
    # one began (the run's start-up, which binds nothing any more).
    traced = steps % per_run or per_run
    with open(trace) as f:
        t = json.load(f)
    events = t["traceEvents"] if isinstance(t, dict) else t
    fired = [e for e in events if e.get("ph") == "X" and e.get("pid", 0) == 0
             and e.get("cat") == "compute"]
    busy = sum(e["dur"] for e in fired) / 1e6
    result["kernel_s"] = busy / traced
    result["start_s"] = min(e["ts"] for e in fired) / 1e6
    result["last_step_s"] = sum(walls[-traced:]) / traced
    result["traced"] = traced
    return result


def kernel_span(trace):
    """Seconds from rank 0's first kernel to its last."""
    with open(trace) as f:
        t = json.load(f)
    events = t["traceEvents"] if isinstance(t, dict) else t
    fired = [e for e in events if e.get("ph") == "X"
             and e.get("pid", 0) == 0 and e.get("cat") == "compute"]
    return (max(e["ts"] + e["dur"] for e in fired) -
            min(e["ts"] for e in fired)) / 1e6


def forward_time(build, model, out, steps):
    """Seconds per forward: the kernel span of a run of `steps` forwards
    less that of a run of a third as many, per extra forward. Forwards run
    ahead of each other, so no single forward's end marks a step (the
    report's steady_step_s, end of the last - end of the first, comes out
    low), and the difference cancels the start-up both runs share (oneDNN
    making its kernels, fresh pages)."""
    few = max(2, steps // 3)
    spans = [pc_run(build, model, out, 1, 1, k, False, 1)["kernels_s"]
             for k in (few, steps)]
    return {"forward_s": (spans[1] - spans[0]) / (steps - few)}


def torch_run(threads):
    p = subprocess.run([sys.executable, os.path.join(HERE, "torch_gpt.py"),
                        str(threads)] + [f"--{k}={v}" for k, v in MODEL.items()],
                       check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--steps-per-run", type=int, default=4,
                    help="pc's training steps per run of its actor graph")
    ap.add_argument("--repeat", type=int, default=3,
                    help="interleaved repeats of the pc runs (medians)")
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        one, two = os.path.join(tmp, "gpt1.mlir"), os.path.join(tmp, "gpt2.mlir")
        gen(one, "1x1")
        gen(two, "2x1")
        k = a.steps_per_run
        # The pc runs interleaved, --repeat times, each figure the median
        # over the repeats: the machine's speed drifts within minutes, and
        # a ratio of two figures taken minutes apart would carry the drift.
        runs = {"pc1": [], "pcf": [], "pc2": [], "pc1_single": []}
        for _ in range(a.repeat):
            runs["pc1"].append(pc_run(a.build, one, tmp, 1, 1, a.steps, True, k))
            runs["pcf"].append(forward_time(a.build, one, tmp, a.steps))
            runs["pc1_single"].append(
                pc_run(a.build, one, tmp, 1, 1, a.steps, True, 1))
            runs["pc2"].append(pc_run(a.build, two, tmp, 2, 1, a.steps, True, k))
        pc1, pcf, pc2, pc1_single = (
            {key: statistics.median(r[key] for r in runs[name])
             for key in runs[name][0]}
            for name in ("pc1", "pcf", "pc2", "pc1_single"))
        t1 = torch_run(1)
        tbest = min((torch_run(n) for n in range(1, cores + 1)),
                    key=lambda r: r["step_s"])
    rows = [
        ("training step, 1 device 1 thread vs torch 1 thread",
         pc1["step_s"], t1["step_s"], "<= 1.0"),
        ("forward, 1 device 1 thread vs torch 1 thread",
         pcf["forward_s"], t1["forward_s"], "<= 1.0"),
        (f"training step, cpu:2 vs torch best ({tbest['threads']} threads)",
         pc2["step_s"], tbest["step_s"], "<= 0.6"),
    ]
    print(f"{'':58s} {'pc s':>8s} {'torch s':>8s} {'ratio':>6s}  target")
    for name, p, t, target in rows:
        print(f"{name:58s} {p:8.3f} {t:8.3f} {p / t:6.2f}  {target}")
    print(f"pc step / pc forward: {pc1['step_s'] / pcf['forward_s']:.2f} "
          f"(target <= 3.2); torch: {t1['step_s'] / t1['forward_s']:.2f}")
    for name, r in ((f"{k} steps per run", pc1), ("1 step per run", pc1_single)):
        outside = max(0.0, r["last_step_s"] - r["kernel_s"])
        print(f"pc, {name}: step {r['step_s']:.3f} s; first step (session "
              f"creation, binding) {r['first_s']:.3f} s; last run's start to "
              f"its first kernel {r['start_s'] * 1e3:.1f} ms; outside kernels "
              f"{outside * 1e3:.1f} ms of a {r['last_step_s'] * 1e3:.1f} ms "
              f"step ({100 * outside / r['last_step_s']:.1f}%, target <= 5%)")
    print(f"{k} steps per run / 1 step per run: "
          f"{pc1['step_s'] / pc1_single['step_s']:.3f}")


if __name__ == "__main__":
    main()
