#!/usr/bin/env python3
"""Where a step's time goes, from a pc-run --trace.

    bench/trace_ops.py TRACE.json [--top 12] [--skip 1]

For each rank's streams over the steps after the first --skip: how much of
the step the stream's thread was busy (its firings' summed time over the
span from its first firing to its last), and the ops that took the most
of it, by name. On CPU devices a firing's time is the kernel's; on CUDA
it is the host's time to queue the kernel (the GPU runs it later), so a
compute stream busy most of the step there says the step is bound by the
host's launches, not by the GPU, and the top ops say whose. Beside each
time, the CPU time the stream's thread used over its firings (the trace's
cpu_us): below the time where the thread slept (a collective waiting for
its members) or shared its core with another thread.
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--skip", type=int, default=1,
                    help="leading steps left out (warm-up)")
    a = ap.parse_args()
    try:
        with open(a.trace) as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"trace_ops: {a.trace}: {e}")
    events = t["traceEvents"] if isinstance(t, dict) else t
    names = {}  # (pid, tid) -> stream name
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    busy = collections.defaultdict(float)
    cpu = collections.defaultdict(float)
    span = {}
    ops = collections.defaultdict(lambda: [0, 0.0, 0.0])
    steps = set()
    for e in events:
        step = e.get("args", {}).get("step", -1)
        if e.get("ph") != "X" or step < a.skip:
            continue
        key = (e["pid"], e["tid"])
        if names.get(key) not in ("compute", "comm"):
            continue
        steps.add(step)
        busy[key] += e["dur"]
        cpu[key] += e["args"].get("cpu_us", 0)
        lo, hi = span.get(key, (e["ts"], e["ts"] + e["dur"]))
        span[key] = (min(lo, e["ts"]), max(hi, e["ts"] + e["dur"]))
        op = ops[(names[key], e["name"])]
        op[0] += 1
        op[1] += e["dur"]
        op[2] += e["args"].get("cpu_us", 0)
    if not steps:
        sys.exit(f"trace_ops: {a.trace}: no firings after step {a.skip - 1}")
    n = len(steps)
    print(f"{n} steps (after {a.skip}); per step:")
    for key in sorted(span):
        lo, hi = span[key]
        print(f"  rank {key[0]} {names[key]:7s}: busy {busy[key] / n / 1e3:8.2f} ms "
              f"of {(hi - lo) / n / 1e3:8.2f} ms "
              f"({100 * busy[key] / max(hi - lo, 1e-9):.0f} %), "
              f"cpu {cpu[key] / n / 1e3:8.2f} ms")
    for stream in ("compute", "comm"):
        keys = [k for k in busy if names[k] == stream]
        print(f"  all ranks {stream:7s}: busy "
              f"{sum(busy[k] for k in keys) / n / 1e3:8.2f} ms, "
              f"cpu {sum(cpu[k] for k in keys) / n / 1e3:8.2f} ms")
    total = sum(v[1] for v in ops.values())
    print(f"top {a.top} ops by time (all ranks), per step:")
    for (stream, name), (count, dur, used) in sorted(
            ops.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print(f"  {name:28s} {stream:7s} {count / n:7.0f} x {dur / count:8.1f} us"
              f" = {dur / n / 1e3:8.2f} ms ({100 * dur / total:4.1f} %), "
              f"cpu {used / count:8.1f} us")


if __name__ == "__main__":
    main()
