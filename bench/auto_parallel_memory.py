#!/usr/bin/env python3
"""--pc-auto-parallel's memory estimate against pc-memory-plan's.

    bench/auto_parallel_memory.py [--check]

For training graphs with no layout but their mesh (bench/gen_gpt.py
--unannotated, and test/tools/Inputs/mlp_unannotated.mlir), under budgets,
ZeRO stages, recompute modes and in-place updates, runs
--pc-auto-parallel (which reports the peak bytes per device its replay of
the step predicts for the layouts it chose), then compiles those layouts to per-device programs and reads
their predicted peak from --pc-memory-plan (the figure a --device-memory
budget is held to at compile and run time). Prints both and their ratio:
at or above 1, what auto-parallel says fits is accepted downstream.
No timing: it runs anywhere, in a few seconds. --check exits non-zero
when an estimate is below the memory plan's peak (beyond its rounding),
or a case fails to compile.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("PC_BUILD", os.path.join(ROOT, "build"))
# PC_OPT: a pc-opt to use instead of the build's (a name is looked up on
# PATH, as lit's tests do).
OPT = shutil.which(os.environ.get("PC_OPT", os.path.join(BUILD, "bin",
                                                          "pc-opt"))) or ""
CLUSTER = os.path.join(ROOT, "planner", "clusters", "cpu-virtual.json")
ESTIMATE = re.compile(r"([0-9.]+) MiB per device")
PEAK = re.compile(r"peak = (\d+)")


def gpt(tmp, name, mesh, **sizes):
    path = os.path.join(tmp, f"{name}.mlir")
    args = [sys.executable, os.path.join(ROOT, "bench", "gen_gpt.py"),
            "--unannotated", "--mesh", mesh]
    for key, value in sizes.items():
        args += [f"--{key}", str(value)]
    with open(path, "w") as out:
        subprocess.run(args, stdout=out, check=True)
    return path


def mlp(tmp, mesh):
    path = os.path.join(tmp, f"mlp_{mesh}.mlir")
    text = open(os.path.join(ROOT, "test", "tools", "Inputs",
                             "mlp_unannotated.mlir")).read()
    dp, tp = mesh.split("x")
    text = text.replace('"dp"=2, "tp"=2', f'"dp"={dp}, "tp"={tp}')
    open(path, "w").write(text)
    return path


def compare(model, budget=0, zero="", recompute="", in_place=False):
    """(estimate MiB, memory plan MiB) or an error line."""
    ap = f"report=true device-memory={budget} {zero}"
    passes = ["--pc-optimizer=" + zero, "--pc-fuse", "--pc-sbp-propagate"]
    if recompute:
        ap += f" recompute={recompute}"
        passes.append(f"--pc-recompute=mode={recompute}")
    if in_place:
        ap += " in-place-updates=true"
    passes += ["--pc-insert-boxing", "--pc-optimize-boxing",
               "--pc-lower-boxing", "--pc-optimize-boxing", "--pc-partition",
               "--pc-pipeline-schedule",
               "--pc-memory-plan=in-place-updates=" + str(in_place).lower()]
    cmd = [OPT, model, f"--pc-cost-model=cluster={CLUSTER}", "--pc-autodiff",
           f"--pc-auto-parallel={ap}"] + passes
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        error = [l for l in run.stderr.splitlines() if "error" in l]
        return (error or ["failed"])[0].split("error: ")[-1]
    estimate = float(ESTIMATE.search(run.stdout).group(1))
    peak = max(int(p) for p in PEAK.findall(run.stdout)) / 2**20
    return estimate, peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="fail when an estimate is below the plan")
    args = parser.parse_args()
    if not OPT:
        sys.exit("auto_parallel_memory.py: no pc-opt (build it, or set "
                 "PC_OPT)")
    with tempfile.TemporaryDirectory() as tmp:
        gpt_small = dict(layers=2, hidden=64, heads=4, batch=16, seq=64,
                         vocab=128)
        gpt_wide = dict(layers=4, hidden=256, heads=4, batch=16, seq=64,
                        vocab=512)
        cases = [
            ("mlp 1x4", mlp(tmp, "1x4"), {}),
            ("mlp 1x4, 6 MiB", mlp(tmp, "1x4"), dict(budget=6 << 20)),
            ("GPT h64 4x1", gpt(tmp, "g41", "4x1", **gpt_small), {}),
            ("GPT h64 2x2", gpt(tmp, "g22", "2x2", **gpt_small), {}),
        ]
        g41 = cases[2][1]
        for zero in ["zero=1 zero-axis=dp", "zero=2 zero-axis=dp",
                     "zero=3 zero-axis=dp"]:
            cases.append((f"GPT h64 4x1, {zero.split()[0]}", g41,
                          dict(zero=zero)))
        for mode in ["selective", "full"]:
            cases.append((f"GPT h64 4x1, recompute {mode}", g41,
                          dict(recompute=mode)))
            cases.append((f"GPT h64 4x1, zero=3, recompute {mode}", g41,
                          dict(zero="zero=3 zero-axis=dp", recompute=mode)))
        cases.append(("GPT h64 2x2, in place", cases[3][1],
                      dict(in_place=True)))
        cases.append(("GPT h64 4x1, recompute full, in place", g41,
                      dict(recompute="full", in_place=True)))
        wide = gpt(tmp, "wide", "2x2", **gpt_wide)
        for budget in [0, 50_000_000]:
            cases.append((f"GPT h256 2x2, budget {budget / 1e6:g} MB", wide,
                          dict(budget=budget)))
        cases.append(("GPT h256 2x2, in place", wide, dict(in_place=True)))
        print(f"{'case':44} {'estimate':>10} {'plan':>10} {'ratio':>7}")
        ratios, bad = [], []
        for name, model, kw in cases:
            got = compare(model, **kw)
            if isinstance(got, str):
                print(f"{name:44} {got}")
                bad.append(name)
                continue
            estimate, peak = got
            ratios.append(estimate / peak)
            if estimate + 0.05 < peak:
                bad.append(name)
            print(f"{name:44} {estimate:7.2f} MiB {peak:6.2f} MiB "
                  f"{estimate / peak:7.3f}")
        if ratios:
            print(f"ratio estimate / plan: {min(ratios):.3f} to "
                  f"{max(ratios):.3f} over {len(ratios)} cases (the estimate "
                  "is rounded to 0.1 MiB)")
        if args.check and bad:
            sys.exit("auto_parallel_memory.py: below the memory plan or "
                     "failed: " + ", ".join(bad))


if __name__ == "__main__":
    main()
