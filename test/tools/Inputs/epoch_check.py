"""Checks, from a pc-run trace, that a run's batches drew every sample of
the dataset exactly once per epoch, rank by rank as they were read.

    epoch_check.py TRACE SAMPLES SEQ [RANKS_PER_PROCESS]

Each rank's 'read inputs' event lists, per token input and iteration, the
rows it read and where each row's window starts in its file
('input #0 iteration 2 rows [4, 8): corpus.txt@64 ...'). The rows that
ranks read of one batch must tile it (data-parallel blocks; ranks of one
block, tensor-parallel peers, read the same samples), and each epoch's
batches (SAMPLES of them in all, which the batch size must divide) must
hold every window start 0, SEQ, ..., (SAMPLES-1)*SEQ exactly once. With
RANKS_PER_PROCESS (mpirun), no process may read rows another one reads.
"""

import collections
import json
import re
import sys

READ = re.compile(r"input #(\d+) iteration (\d+) rows \[(\d+), (\d+)\): (.*)")


def main():
    trace, samples, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    per_process = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    events = json.load(open(trace))["traceEvents"]
    blocks = {}  # (input, iteration, rows): the samples' window starts
    owner = collections.defaultdict(set)  # (input, iteration, rows): processes
    for e in events:
        if e.get("name") != "read inputs":
            continue
        rank = e["pid"]
        for part in e["args"].get("read", "").split("; "):
            m = READ.fullmatch(part)
            if not m:
                sys.exit(f"rank {rank}: unreadable '{part}'")
            index, it, lo, hi = (int(m.group(i)) for i in range(1, 5))
            starts = [int(s.rsplit("@", 1)[1]) for s in m.group(5).split()]
            key = (index, it, (lo, hi))
            if blocks.setdefault(key, starts) != starts:
                sys.exit(f"rank {rank} read other samples for {key}")
            owner[key].add(rank // per_process if per_process else 0)
    if not blocks:
        sys.exit("no rank read token ids")
    for index in sorted({k[0] for k in blocks}):
        batches = collections.defaultdict(list)  # iteration: [(rows, starts)]
        for (i, it, rows), starts in blocks.items():
            if i == index:
                batches[it].append((rows, starts))
        drawn = collections.defaultdict(collections.Counter)  # epoch: starts
        for it, parts in sorted(batches.items()):
            parts.sort()
            rows = [r for r, _ in parts]
            if rows[0][0] or any(a[1] != b[0] for a, b in zip(rows, rows[1:])):
                sys.exit(f"input #{index} iteration {it}: rows {rows} do not "
                         "tile the batch")
            batch = rows[-1][1]
            if samples % batch:
                sys.exit(f"a batch of {batch} does not divide {samples}")
            for _, starts in parts:
                drawn[it * batch // samples].update(starts)
        offset = min(min(c) for c in drawn.values()) % seq  # labels: +1
        want = collections.Counter(offset + k * seq for k in range(samples))
        for epoch, got in sorted(drawn.items()):
            if got != want:
                sys.exit(f"input #{index} epoch {epoch}: drew "
                         f"{sum(got.values())} samples; twice or foreign "
                         f"{sorted(got - want)[:8]}, missing "
                         f"{sorted(want - got)[:8]}")
        counts = sorted({len(p) for p in batches.values()})
        print(f"input #{index}: {len(drawn)} epochs of {samples} samples, "
              f"each once, in {counts} blocks per batch")
    if per_process:
        shared = [k for k, p in owner.items() if len(p) > 1]
        print("processes read disjoint rows" if not shared
              else f"processes share rows: {shared[:4]}")


main()
