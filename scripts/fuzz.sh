#!/usr/bin/env bash
# The long, nightly-style fuzz run: each fuzz target for MINUTES (default
# 10) in the ASan + UBSan + libFuzzer build (build-asan, made by
# scripts/sanitize.sh asan). The corpus grows in build-asan/fuzz-corpus/
# <target> across runs, starting from the seeds in test/fuzz/corpus.
#
#   scripts/fuzz.sh [MINUTES] [TARGET...]     targets: npy safetensors index ir
#
# A finding leaves its input as build-asan/fuzz-<target>-crash-* and fails
# the run; replay it with build/bin/pc-fuzz-<target> FILE (any build), and
# add it to test/fuzz/corpus/<target> with the fix. Prints, per target, the
# inputs executed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PC_SANITIZE_DIR:-$root/build-asan}
minutes=${1:-10}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(npy safetensors index ir)

if [ ! -x "$build_dir/bin/pc-fuzz-npy" ]; then
  PC_FUZZ_SECONDS=1 "$root/scripts/sanitize.sh" asan || exit 1
fi
export ASAN_OPTIONS="abort_on_error=1"
export LSAN_OPTIONS="suppressions=$root/test/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export OPENBLAS_NUM_THREADS=1

status=0
for target in "${targets[@]}"; do
  corpus=$build_dir/fuzz-corpus/$target
  mkdir -p "$corpus"
  cp -rn "$root/test/fuzz/corpus/$target/." "$corpus/"
  log=$build_dir/fuzz-$target-long.log
  if (cd "$build_dir" && "$build_dir/bin/pc-fuzz-$target" "$corpus" \
      -max_total_time=$((minutes * 60)) -rss_limit_mb=2048 -timeout=20 \
      -artifact_prefix="$build_dir/fuzz-$target-" -print_final_stats=1 \
      >"$log" 2>&1); then
    verdict="no finding"
  else
    verdict="FINDING (log: $log)"
    status=1
  fi
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
  echo "fuzz $target: ${runs:-?} inputs in $minutes min, $(ls "$corpus" | wc -l) in the corpus, $verdict"
done
exit $status
