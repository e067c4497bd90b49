#!/usr/bin/env bash
# The data loader against a training step of the main job's model
# (scripts/demo.sh: a byte-level GPT on DP x TP, cpu:4), in one run:
#   1. pc-run trains it for STEPS steps on the fortunes corpus and reports
#      its median step time and tokens per step;
#   2. pc-bench-loader draws and reads batches of the same shape from the
#      same corpus: seconds per batch, tokens per second;
#   3. their ratio: the share of a step the loader would take if none of it
#      overlapped (target <= 2 %).
#
#   bench/loader.sh [STEPS]      (default 40)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PC_BUILD_DIR:-$root/build}
steps=${1:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec=$("$root/scripts/corpus.sh")
"$build/bin/pc-run" "$root/examples/gpt_bytes_2x2.mlir" --devices cpu:4 \
  --train --steps "$steps" --lr 2e-3 --data "$spec" --report "$tmp/r.json" \
  > /dev/null
read -r batch seq < <(python3 - "$root/examples/gpt_bytes_2x2.mlir" <<'PY'
import re, sys
m = re.search(r"func.func @\w+\(%\w+: tensor<(\d+)x(\d+)xi64", open(sys.argv[1]).read())
print(m.group(1), m.group(2))
PY
)
"$build/bench/pc-bench-loader" "$spec" "$batch" "$seq" 200 | tee "$tmp/l.txt"
python3 - "$tmp/r.json" "$tmp/l.txt" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
step = statistics.median(s["wall_s"] for s in r["steps"][2:])
tokens = r["data"]["tokens_per_step"]
loader = float(open(sys.argv[2]).read().split("loader_s_per_batch")[1])
print(f"step: {step * 1e3:.1f} ms for {tokens} tokens ({tokens / step:.3g} tokens/s); "
      f"prefetcher {r['data']['prefetch_s'] * 1e3:.1f} ms over the run")
print(f"loader / step: {100 * loader / step:.3f} % (target <= 2 %), "
      f"loader throughput / step's consumption: {step / loader:.0f}x")
PY
