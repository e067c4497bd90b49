#!/usr/bin/env python3
"""Feeds pc-opt mutated copies of the test inputs and fails on any crash.

pc-opt must answer every input with exit status 0 or 1 and diagnostics; a
signal, an assertion or an LLVM crash report is a bug. The mutations are
seeded, so a failure reproduces: the failing batch is written next to the
test's output for bisection.
"""
import argparse
import pathlib
import random
import re
import subprocess
import sys

NUMBERS = ["0", "-1", "1", "2", "3", "7", "-9223372036854775808",
           "9223372036854775807", "4294967296", "65536", "1.0e308", "nan"]
TOKENS = ["S(0)", "S(5)", "B", "P", "P(max)", "#pc.sbp<@m, [S(0)]>",
          "@m", "@q", "tensor<?x4xf32>", "tensor<0x4xf32>", "f64", "i1",
          "dense<1.0>", "{axis = 9 : i64}", "{axes = array<i64: 0, 0>}",
          "{perm = array<i64: 1>}", "(", ")", "<", ">", "[", "]", ",", ":"]


def mutate(text, rng):
    kind = rng.randrange(6)
    if kind == 0:  # replace a number
        nums = list(re.finditer(r"-?\d+", text))
        if nums:
            m = rng.choice(nums)
            return text[:m.start()] + rng.choice(NUMBERS) + text[m.end():]
    if kind == 1:  # delete a span
        i = rng.randrange(len(text))
        return text[:i] + text[i + rng.randrange(1, 40):]
    if kind == 2:  # insert a token
        i = rng.randrange(len(text))
        return text[:i] + " " + rng.choice(TOKENS) + " " + text[i:]
    if kind == 3:  # swap two lines
        lines = text.split("\n")
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        return "\n".join(lines)
    if kind == 4:  # truncate
        return text[:rng.randrange(len(text))]
    # duplicate a line
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pc-opt", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--out", required=True, help="where a failing batch goes")
    ap.add_argument("--pass-args", default="",
                    help="passes to run on each mutant, e.g. --pc-distribute")
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()

    seeds = []
    for path in args.inputs:
        p = pathlib.Path(path)
        files = sorted(p.rglob("*.mlir")) if p.is_dir() else [p]
        for f in files:
            for chunk in f.read_text().split("// -----"):
                # Drop RUN and expected-* lines: they are test directives.
                body = "\n".join(l for l in chunk.split("\n")
                                 if "RUN:" not in l and "expected-" not in l)
                if body.strip():
                    seeds.append(body)
    rng = random.Random(args.seed)
    mutants = []
    for _ in range(args.count):
        text = rng.choice(seeds)
        for _ in range(rng.randrange(1, 4)):
            if text:
                text = mutate(text, rng)
        mutants.append(text)

    def run(text, timeout):
        """None when pc-opt answered; otherwise why it did not."""
        try:
            proc = subprocess.run([args.pc_opt, "--split-input-file", "-"] +
                                  args.pass_args.split(),
                                  input=text, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"no answer within {timeout} s (a hang)"
        if (proc.returncode not in (0, 1) or "Stack dump" in proc.stderr or
                "PLEASE submit a bug report" in proc.stderr or
                "Assertion" in proc.stderr):
            return f"crashed (status {proc.returncode})\n" + proc.stderr[-3000:]
        return None

    for start in range(0, len(mutants), args.batch):
        batch = mutants[start:start + args.batch]
        if run("\n// -----\n".join(batch), 120) is None:
            continue
        # Find the mutant that fails on its own, for a short reproducer.
        for i, text in enumerate(batch):
            why = run(text, 20)
            if why is not None:
                pathlib.Path(args.out).write_text(text)
                print(f"pc-opt {why}\non mutant {start + i}, saved to {args.out}")
                return 1
        pathlib.Path(args.out).write_text("\n// -----\n".join(batch))
        print(f"pc-opt failed on the batch starting at mutant {start} but on "
              f"no single mutant; saved to {args.out}")
        return 1
    print(f"{len(mutants)} mutants, no crash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
