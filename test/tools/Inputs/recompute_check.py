"""Checks recompute's memory against the formulas of docs/memory.md.

    recompute_check.py DIR S B H A L1 L2

DIR holds pc-run --report files MODE-LN.json for MODE in none, selective
and full and N in L1 < L2: one training step of the same GPT (sequence S,
batch B, hidden H, A heads) with N layers, on one device. Per layer, in
f32 and without dropout, the backward pass keeps (bytes):

    none       sbh(64 + 4as/h)   every activation a layer's backward reads
    selective  64 sbh            the same without the softmax's a s^2 b
    full       4 sbh             the layer's input, its checkpoint

The predicted most activations live at once grow by exactly that per
layer. The measured peak, from the allocator, must fall by at least 95 %
of the predicted amount, and by no more than 110 % of it: the prediction
replays one order of the step's firings, while the runtime's order
depends on when the dispatcher hears of finished ones (the inputs'
arrival among the parameters' reads), and some orders keep less alive.
"""

import json
import sys


def main():
    d = sys.argv[1]
    s, b, h, a, l1, l2 = map(int, sys.argv[2:8])
    sbh = s * b * h
    formula = {"none": sbh * (64 + 4 * a * s // h), "selective": 64 * sbh,
               "full": 4 * sbh}
    rank = {(m, n): json.load(open(f"{d}/{m}-L{n}.json"))["ranks"][0]
            for m in formula for n in (l1, l2)}
    for m, want in formula.items():
        grow = (rank[m, l2]["predicted_memory"]["activations_peak"] -
                rank[m, l1]["predicted_memory"]["activations_peak"]) / (l2 - l1)
        print(f"{m}: {grow / sbh:.2f} sbh per layer, formula "
              f"{want / sbh:.2f} sbh: {'ok' if abs(grow - want) <= 0.01 * want else 'WRONG'}")
    for m in ("selective", "full"):
        predicted = (rank["none", l2]["predicted_memory"]["peak"] -
                     rank[m, l2]["predicted_memory"]["peak"])
        measured = rank["none", l2]["peak_bytes"] - rank[m, l2]["peak_bytes"]
        ratio = measured / predicted
        print(f"{m}: measured saving {measured} B, predicted {predicted} B, "
              f"ratio {ratio:.3f}: {'ok' if 0.95 <= ratio <= 1.10 else 'WRONG'}")


main()
