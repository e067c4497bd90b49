#!/usr/bin/env bash
# The GPU check, for a machine with one NVIDIA GPU or more (docs/cluster.md):
#   1. builds the CUDA backend for this machine's GPUs (build-gpu/);
#   2. runs every GPU test: each op's kernels against the CPU backend in
#      every dtype, and the GPT training step, on cuda (PcPortableKernelTests'
#      "cuda" instances, PcCudaTests);
#   3. trains the tiny GPT 20 steps on cuda:1 against cpu:1 (and on cuda:4
#      against cpu:4 as DP2 x TP2 when there are 4 GPUs): the curves agree;
#   4. runs the GPU benchmarks: matmul against bare cuBLASLt, kernels'
#      bandwidth, and training throughput (MFU) of the tiny GPT and
#      GPT-2 small (124M) on one GPU;
#   5. where the machine has 8 CPU cores or more, the pipeline bubble
#      benchmark on CPU devices with real compute, a core per stage
#      (bench/pipeline.py; a 2-core build machine measures it with
#      emulated compute).
# Prints a summary; exits non-zero when a check failed. About 5-8 minutes.
# Each check has a time limit (PC_CHECK_TIMEOUT seconds, default 300), so a
# hang fails that check instead of holding the machine.
#
#   scripts/gpu-check.sh
#
# Environment: PC_BUILD_DIR (default build-gpu), PC_PEAK_TFLOPS (the GPU's
# dense bf16 peak for MFU; default 989, an H100/H200 SXM), PC_CHECK_OUT (a
# folder to keep the training runs' reports and traces in).
#
# On a GPU machine without pc's build dependencies, unpack the archive that
# scripts/gpu-bundle.sh makes into PC_BUILD_DIR: with no build.ninja there,
# the check runs the bundle's binaries and skips the build.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PC_BUILD_DIR:-$root/build-gpu}
peak=${PC_PEAK_TFLOPS:-989}
python=${PYTHON:-python3}
limit=${PC_CHECK_TIMEOUT:-300}
summary=()
failed=0
note() { summary+=("$1"); echo "== $1"; }
check() { # check NAME COMMAND...: runs it, records ok/FAILED
  local name=$1
  shift
  local t0=$SECONDS rc=0
  if declare -F "$1" >/dev/null; then # a function runs in a child bash
    timeout --kill-after=10 "$limit" bash -c "$(declare -f "$1"); \"\$@\"" _ "$@" ||
      rc=$?
  else
    timeout --kill-after=10 "$limit" "$@" || rc=$?
  fi
  if [ $rc -eq 0 ]; then
    note "$name: ok ($((SECONDS - t0)) s)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    note "$name: FAILED (no end after $limit s)"
    failed=1
  else
    note "$name: FAILED (exit $rc)"
    failed=1
  fi
}

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "== GPUs: ${gpus:-0}"
nvidia-smi -L 2>/dev/null || true
if [ "${gpus:-0}" -eq 0 ]; then
  echo "gpu-check: no GPU visible (nvidia-smi -L lists none)"
  exit 1
fi

# 1. Build: only what the checks run, for the GPUs present; or take the
# binaries of a bundle (scripts/gpu-bundle.sh) as they are.
if [ ! -f "$build/build.ninja" ] && [ -x "$build/bin/pc-run" ]; then
  note "build: prebuilt bundle in $build"
  export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # A bundle leaves cuBLAS(Lt) and NCCL to the machine: find them where
  # the loader does not (a toolkit's lib64, a Python environment's wheels).
  for so in libcublasLt.so.13 libcublas.so.13 libnccl.so.2; do
    ldconfig -p | grep -q "$so" && continue
    dir=$(find /usr/local/cuda*/lib* /usr/local/cuda*/targets/*/lib /opt \
      /usr/lib -name "$so" -print -quit 2>/dev/null | xargs -r dirname)
    [ -n "$dir" ] && export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  done
  echo "== LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
else
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native >/dev/null ||
      { echo "gpu-check: configure failed"; exit 1; }
  fi
  check "build" cmake --build "$build" --target \
    PcPortableKernelTests PcCudaTests pc-run pc-bench-device-kernels pc-cuda
fi
# The CUDA backend's module, which the programs load on first use: named,
# as a bundle's test binaries do not sit where they look for it.
export PC_CUDA_PLUGIN=$build/lib/pc/libpc-cuda.so
[ -f "$PC_CUDA_PLUGIN" ] || { echo "gpu-check: no $PC_CUDA_PLUGIN"; exit 1; }

# 2. GPU tests: every kernel against the CPU backend.
check "CUDA device tests" "$build/test/unit/PcCudaTests"
check "kernels on cuda vs the CPU backend" \
  "$build/test/unit/PcPortableKernelTests" --gtest_filter='*/cuda:PortableMath*'

# 3. Training curves on cuda against cpu.
work=$(mktemp -d)
export root build python work
trap 'rm -rf "$work"' EXIT
sed 's/"dp"=2, "tp"=2/"dp"=1, "tp"=1/' "$root/examples/gpt_tiny_2x2.mlir" \
  >"$work/gpt1.mlir"
curves() { # curves MODEL DEVICES-CPU DEVICES-CUDA
  "$build/bin/pc-run" "$1" --devices "$2" --train --steps 20 --seed 3 \
    --report "$work/cpu.json" >/dev/null &&
    "$build/bin/pc-run" "$1" --devices "$3" --train --steps 20 --seed 3 \
      --report "$work/cuda.json" >/dev/null &&
    "$python" "$root/test/tools/Inputs/amp_check.py" curves "$work/cuda.json" \
      "$work/cpu.json" 0.001
}
check "tiny GPT, 20 steps: cuda:1 vs cpu:1" curves "$work/gpt1.mlir" cpu:1 cuda:1
if [ "$gpus" -ge 4 ]; then
  check "tiny GPT DP2 x TP2, 20 steps: cuda:4 vs cpu:4 (NCCL)" \
    curves "$root/examples/gpt_tiny_2x2.mlir" cpu:4 cuda:4
else
  note "cuda:4 curves: skipped ($gpus GPU)"
fi

# 4. Benchmarks.
timeout "$limit" "$build/bench/pc-bench-device-kernels" --gpu-only |
  tee "$work/bench.txt"
mfu() { # mfu NAME GEN-ARGS...: bf16 training throughput on cuda:1
  local name=$1
  shift
  "$python" "$root/bench/gen_gpt.py" --mesh 1x1 "$@" >"$work/m.mlir" || return 1
  timeout "$limit" "$build/bin/pc-run" "$work/m.mlir" --devices cuda:1 --train --steps 12 \
    --mixed-precision bf16 --report "$work/mfu.json" >/dev/null || return 1
  "$python" - "$work/mfu.json" "$peak" "$name" "$@" <<'EOF'
import json, sys
report, peak, name, args = json.load(open(sys.argv[1])), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
a = dict(zip(args[::2], args[1::2]))
L, h = int(a["--layers"]), int(a["--hidden"])
b, s, v = int(a["--batch"]), int(a["--seq"]), int(a["--vocab"])
params = 12 * L * h * h + v * h
flops = 6 * params * b * s + 12 * L * b * s * s * h  # weights + attention
walls = sorted(st["wall_s"] for st in report["steps"][2:])
step = report.get("steady_step_s") or walls[len(walls) // 2]  # the median
print(f"{name}: {params/1e6:.0f}M params, {step*1e3:.1f} ms/step, "
      f"{b*s/step:.0f} tokens/s, MFU {100*flops/step/(peak*1e12):.1f} %")
EOF
  # Where the step goes: a short traced run. On CUDA a firing's time in
  # the trace is the host's launch, so a busy compute stream means the
  # step waits on the host.
  echo "== $name: where the step goes (bench/trace_ops.py)"
  timeout "$limit" "$build/bin/pc-run" "$work/m.mlir" --devices cuda:1 --train \
    --steps 5 --mixed-precision bf16 --trace "$work/trace.json" >/dev/null &&
    "$python" "$root/bench/trace_ops.py" "$work/trace.json" --skip 2 --top 10
  if [ -n "${PC_CHECK_OUT:-}" ]; then
    cp "$work/mfu.json" "$PC_CHECK_OUT/report-${name// /-}.json"
    cp "$work/trace.json" "$PC_CHECK_OUT/trace-${name// /-}.json"
  fi
  return 0
}
mfu "tiny GPT" --layers 2 --hidden 256 --heads 8 --batch 8 --seq 128 \
  --vocab 1024 | tee -a "$work/bench.txt"
mfu "GPT-2 small" --layers 12 --hidden 768 --heads 12 --batch 8 --seq 1024 \
  --vocab 50257 | tee -a "$work/bench.txt"

# 5. CPU benchmarks that want a core per device.
if [ "$(nproc)" -ge 8 ]; then
  timeout "$limit" "$python" "$root/bench/pipeline.py" --build "$build" \
    --compute real --width 1024 |
    tee "$work/pipeline.txt"
else
  echo "== pipeline bubble: skipped ($(nproc) cores; it wants 8)"
fi

echo
echo "== gpu-check summary"
for line in "${summary[@]}"; do echo "  $line"; done
grep -E "matmul|% of peak|MFU" "$work/bench.txt" | sed 's/^/  /'
[ -f "$work/pipeline.txt" ] && sed 's/^/  /' "$work/pipeline.txt"
exit $failed
