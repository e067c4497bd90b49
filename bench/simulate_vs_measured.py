#!/usr/bin/env python3
"""pc-simulate against pc's own runtime on CPU virtual devices.

    bench/simulate_vs_measured.py [--devices 4] [--steps 120] [--repeats 10]

Trains the tiny GPT under DP, TP, DP x TP and PP with each schedule on N
CPU virtual devices with pc-run --simulate, and compares the predicted step
(pc-simulate over the programs pc-run runs, with this machine's calibrated
rates) with the measured one (the median wall time of the steps after the
first third). It goes --repeats rounds: each calibrates the devices
(pc-bench-calibrate --devices N: each figure the median of 3
calibrations), then runs every plan once, the order
rotated by a plan a round, so that the machine's drift (its speed moves by
tens of percent over minutes) reaches the calibration and every plan
alike. The plans of a round share its calibration, as a user comparing
plans would: calibrating before each plan instead gave each plan its own
calibration's noise, which reordered plans the measurement ranks within
5% of each other. A plan's predicted and measured steps are the medians
over the rounds (10 of them: with 5, one bench run to the next moved a
plan's error by 10 points). Prints each plan's error, that of the medians
and the median of each round's own (its prediction against its
measurement, which the machine's drift moves alike), and the Kendall tau
of the two rankings. It then ranks the pairs the measurement resolves
(one plan faster in 9 of 10 paired rounds, a sign test at 5%) and prints
the measurement's own reproducibility (its even rounds against its odd),
and per plan the cores its step kept busy beside those predicted, with
the error in its work (step times cores).
Targets (issue 14): within 10% each, tau >= 0.8 over the resolved pairs.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("PC_BUILD", os.path.join(ROOT, "build"))
GPT = dict(layers=4, hidden=64, heads=4, batch=16, seq=32, vocab=128)


def plans(n):
    """(name, mesh, extra pc-run flags) for n devices."""
    half = n // 2
    out = [
        (f"DP{n}", f"{n}x1", []),
        (f"TP{n}", f"1x{n}", []),
    ]
    if half >= 2:
        out.append((f"DP{half} x TP2", f"{half}x2", []))
    m = 2 * n
    for sched, extra in [("gpipe", []), ("1f1b", []), ("zb-h1", []),
                         ("interleaved", ["--virtual-stages", "2"])]:
        out.append((f"PP{n} {sched}, m={m}", "1x1",
                    ["--stages", str(n), "--micro-batches", str(m),
                     "--pipeline-schedule", sched] + extra))
    return out


def gpt_model(gpt, mesh, tmp):
    model = os.path.join(tmp, f"gpt{mesh}.mlir")
    with open(model, "w") as f:
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_gpt.py")]
                       + [f"--{k}={v}" for k, v in gpt.items()] +
                       ["--mesh", mesh], stdout=f, check=True)
    return model


def step_time(report, steps):
    """The median step after the first third, from a pc-run --report."""
    r = json.load(open(report))
    return statistics.median([s["wall_s"] for s in r["steps"]][steps // 3:])


def busy_cores(report, steps):
    """(measured, predicted) cores busy: the process's CPU seconds over the
    wall time of the steps after the first third, and pc-simulate's work
    on the shared cores over its step (None where it reports none)."""
    r = json.load(open(report))
    after = r["steps"][steps // 3:]
    if not after or any(s.get("cpu_s") is None for s in after):
        return None, None  # a pc-run older than cpu_s
    measured = sum(s["cpu_s"] for s in after) / sum(s["wall_s"] for s in after)
    work = r.get("predicted_work_s")
    return measured, work / r["predicted_step_s"] if work else None


def kendall_tau(xs, ys):
    n, s = len(xs), 0
    for i in range(n):
        for j in range(i + 1, n):
            a = (xs[i] - xs[j]) * (ys[i] - ys[j])
            s += (a > 0) - (a < 0)
    return 2.0 * s / (n * (n - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--cluster", help="a spec to use instead of calibrating")
    ap.add_argument("--rounds-json", help="write every round's predicted "
                    "and measured step, per plan, to this file")
    ap.add_argument("--from-rounds", help="print the table of a --rounds-json"
                    " file instead of running")
    ap.add_argument("--no-profile", dest="profile", action="store_false",
                    help="time compute by the roofline, not by each op's "
                    "kernel timed alone (pc-run --profile-ops)")
    for k, v in GPT.items():
        ap.add_argument(f"--{k}", type=int, default=v,
                        help=f"the GPT's {k} (default {v})")
    args = ap.parse_args()
    if args.from_rounds:
        with open(args.from_rounds) as f:
            r = json.load(f)
        print_table(r["predicted"], r["measured"], r["devices"])
        print_busy(r.get("busy", {}), r["predicted"], r["measured"])
        return 0
    gpt = {k: getattr(args, k) for k in GPT}
    tmp = tempfile.mkdtemp()
    runs = plans(args.devices)
    predicted, measured, busy = {}, {}, {}
    for r in range(args.repeats):
        spec = args.cluster
        if not spec:
            spec = os.path.join(tmp, "cpu.json")
            with open(spec, "w") as f:
                subprocess.run([os.path.join(BUILD, "bench",
                                             "pc-bench-calibrate"),
                                "--devices", str(args.devices)], stdout=f,
                               check=True)
        for name, mesh, extra in runs[r % len(runs):] + runs[:r % len(runs)]:
            model = gpt_model(gpt, mesh, tmp)
            report = os.path.join(tmp, "report.json")
            cmd = [os.path.join(BUILD, "bin", "pc-run"), model, "--devices",
                   f"cpu:{args.devices}", "--train", "--steps",
                   str(args.steps), "--lr", "0.001", "--cluster", spec,
                   "--simulate", "--report", report] + extra + \
                (["--profile-ops"] if args.profile else [])
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode:
                print(f"{name}: pc-run failed:\n{run.stderr}",
                      file=sys.stderr)
                return 1
            predicted.setdefault(name, []).append(
                json.load(open(report))["predicted_step_s"])
            measured.setdefault(name, []).append(step_time(report, args.steps))
            busy.setdefault(name, []).append(busy_cores(report, args.steps))
        if args.rounds_json:  # every round, so that a failure keeps them
            with open(args.rounds_json, "w") as f:
                json.dump({"devices": args.devices, "predicted": predicted,
                           "measured": measured, "busy": busy}, f, indent=1)
    print_table(predicted, measured, args.devices)
    print_busy(busy, predicted, measured)
    return 0


def print_table(predicted, measured, devices):
    """The table: per plan, the medians over the rounds of the predicted
    and the measured step, and the median of the rounds' own errors (each
    round's prediction against its measurement, after the same
    calibration: the machine's drift moves both)."""
    rows = []
    for name in predicted:
        preds, meas = predicted[name], measured[name]
        paired = statistics.median([(p - m) / m for p, m in zip(preds, meas)])
        rows.append((name, statistics.median(preds), statistics.median(meas),
                     paired))
    print(f"{'plan':28s} {'predicted ms':>12s} {'measured ms':>12s} "
          f"{'error':>7s} {'per round':>9s}")
    worst, worst_paired = 0, 0
    for name, p, m, paired in rows:
        err = (p - m) / m
        worst = max(worst, abs(err))
        worst_paired = max(worst_paired, abs(paired))
        print(f"{name:28s} {1e3 * p:12.2f} {1e3 * m:12.2f} {100 * err:+6.1f}%"
              f" {100 * paired:+8.1f}%")
    tau = kendall_tau([r[1] for r in rows], [r[2] for r in rows])
    rounds = len(next(iter(predicted.values())))
    print(f"worst error {100 * worst:.1f}% ({100 * worst_paired:.1f}% per "
          f"round), Kendall tau {tau:.2f} ({len(rows)} plans, {devices} CPU "
          f"devices, {rounds} rounds)")
    print_resolved(predicted, measured)


def print_busy(busy, predicted, measured):
    """Per plan, the medians over the rounds of the cores its step kept
    busy and of those pc-simulate predicts, and the median of the rounds'
    errors in the step's work (predicted step times its cores, against
    the measured step times its cores): where the prediction's error is
    in the work and where in the share of the cores it keeps."""
    rows = []
    for name, v in busy.items():
        meas = [m for m, _ in v if m is not None]
        if not meas:
            continue
        preds = [p for m, p in v if m is not None and p is not None]
        work = [(ps * p - ms * m) / (ms * m) for (m, p), ps, ms in
                zip(v, predicted[name], measured[name])
                if m is not None and p is not None]
        rows.append((name, meas, preds, work))
    if not rows:
        return
    print(f"{'cores busy':28s} {'predicted':>12s} {'measured':>12s} "
          f"{'work error':>10s}")
    for name, meas, preds, work in rows:
        pred = f"{statistics.median(preds):12.2f}" if preds else f"{'-':>12s}"
        err = (f"{100 * statistics.median(work):+9.1f}%" if work
               else f"{'-':>10s}")
        print(f"{name:28s} {pred} {statistics.median(meas):12.2f} {err}")


def sign_test_wins(n, alpha=0.05):
    """The fewest wins of n paired rounds that a two-sided sign test calls
    significant at `alpha`; n + 1 when none is."""
    for k in range((n + 1) // 2, n + 1):
        tail = sum(math.comb(n, x) for x in range(k, n + 1)) / 2.0**n
        if 2 * tail <= alpha:
            return k
    return n + 1


def print_resolved(predicted, measured):
    """The ranking over the pairs the measurement resolves. A pair of plans
    is resolved when one measured faster than the other in so many of the
    rounds (each round measures every plan within a minute, so the two
    share its machine state) that a sign test rejects a tie at 5%: 9 of
    10. Plans within a few percent of each other trade places from round
    to round and from run to run; no prediction can rank them better
    than the measurement itself does (docs/decisions.md). Prints the
    resolved pairs the prediction (its medians) orders the other way, and
    the measurement's own reproducibility: the Kendall tau between the
    medians of its even and its odd rounds."""
    names = list(measured)
    n = len(measured[names[0]])
    need = sign_test_wins(n)
    resolved, score, discordant = 0, 0, []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            # Rounds that measured the two alike count for neither.
            wins = sum(x < y for x, y in zip(measured[a], measured[b]))
            losses = sum(x > y for x, y in zip(measured[a], measured[b]))
            if max(wins, losses) < sign_test_wins(wins + losses):
                continue
            resolved += 1
            fast, slow = (a, b) if wins > losses else (b, a)
            pf = statistics.median(predicted[fast])
            ps = statistics.median(predicted[slow])
            if pf < ps:
                score += 1
            else:  # a predicted tie does not preserve the order either
                score -= 1
                discordant.append(f"predicted the other way: {fast} < {slow}"
                                  if pf > ps else
                                  f"predicted level: {fast} < {slow}")
    pairs = len(names) * (len(names) - 1) // 2
    if not resolved:
        print(f"the measurement resolves none of the {pairs} pairs "
              f"({n} rounds; a pair needs one plan faster in {need})")
        return
    half = kendall_tau([statistics.median(measured[k][0::2]) for k in names],
                       [statistics.median(measured[k][1::2]) for k in names])
    print(f"resolved pairs {resolved} of {pairs} (one plan faster in {need} "
          f"or more of {n} rounds): Kendall tau {score / resolved:.2f}; the "
          f"measurement's own, even rounds against odd, {half:.2f}")
    for d in discordant:
        print(f"  {d}")


if __name__ == "__main__":
    sys.exit(main())
