"""Compares the per-step losses of two pc-run reports.

    same_losses.py A.json B.json RTOL

Prints "same losses" when every step's loss agrees within RTOL (relative),
else the first step that differs.
"""

import json
import sys

a = [s["loss"] for s in json.load(open(sys.argv[1]))["steps"]]
b = [s["loss"] for s in json.load(open(sys.argv[2]))["steps"]]
rtol = float(sys.argv[3])
if not a or len(a) != len(b):
    print(f"{len(a)} steps against {len(b)}")
    sys.exit(1)
for i, (x, y) in enumerate(zip(a, b)):
    if abs(x - y) > rtol * max(abs(x), abs(y)):
        print(f"step {i}: {x} against {y}")
        sys.exit(1)
print("same losses")
