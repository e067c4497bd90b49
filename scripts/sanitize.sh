#!/usr/bin/env bash
# Builds pc with sanitizers and runs the tests that matter under them.
#
#   scripts/sanitize.sh asan   clang-22, ASan + UBSan + libFuzzer coverage,
#                              in build-asan: every lit test and unit test
#                              (the tools, the hostile-file corpus, the
#                              fuzz seeds), then each fuzz target for
#                              PC_FUZZ_SECONDS (default 30) from the seeds
#   scripts/sanitize.sh tsan   clang-22, TSan, in build-tsan: the actor,
#                              device/communicator, launcher and executor
#                              tests, and the portable kernels' tests
#
# Ends with one line: "pc sanitize <kind>: ok" or "... FAILED".
# Environment: PC_SANITIZE_DIR (default: build-<kind>), PC_FUZZ_SECONDS.
set -uo pipefail

kind=${1:?usage: scripts/sanitize.sh asan|tsan}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PC_SANITIZE_DIR:-$root/build-$kind}
lit=/usr/lib/llvm-22/bin/lit
supp=$root/test/sanitizers

fail() { echo "pc sanitize $kind: FAILED ($1)"; exit 1; }

PC_SKIP_BUILD=1 "$root/scripts/setup.sh" || fail "setup"

case "$kind" in
asan)
  flags=(-DPC_SANITIZE=address,undefined -DPC_FUZZ=ON)
  targets=()
  # Every allocation is filled with 0xbe bytes, not only its first 4 KiB
  # (ASan's default): a kernel or a collective that reads memory before
  # writing it then gives wrong bits, which the tests compare.
  export ASAN_OPTIONS="abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:max_malloc_fill_size=1073741824"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  ;;
tsan)
  flags=(-DPC_SANITIZE=thread)
  targets=(PcActorTests PcDeviceTests PcLauncherTests PcCpuExecutorTests
    PcPortableKernelTests)
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  ;;
*) fail "unknown kind '$kind'" ;;
esac

build_start=$SECONDS
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DPC_ENABLE_CUDA=OFF "${flags[@]}" >/dev/null || fail "configure"
fi
cmake --build "$build_dir" ${targets[@]+--target "${targets[@]}"} || fail "build"
echo "$kind: built in $((SECONDS - build_start)) s"

# One BLAS thread: OpenBLAS's own threads synchronize in ways the
# sanitizers cannot see, and pc's ranks are the parallelism under test.
export OPENBLAS_NUM_THREADS=1

start=$SECONDS
case "$kind" in
asan)
  "$lit" -q "$build_dir/test" "$build_dir/test/unit" || fail "lit"
  echo "asan: lit and unit suites passed in $((SECONDS - start)) s"
  seconds=${PC_FUZZ_SECONDS:-30}
  for target in npy safetensors index ir; do
    work=$(mktemp -d)
    cp -r "$root/test/fuzz/corpus/$target/." "$work/"
    log="$build_dir/fuzz-$target.log"
    # -rss_limit_mb: readers that check a claim against the file's size
    # never come near it; one that does not is a finding.
    if ! (cd "$build_dir" && "$build_dir/bin/pc-fuzz-$target" "$work" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 \
        -print_final_stats=1 >"$log" 2>&1); then
      tail -n 40 "$log"
      rm -rf "$work"
      fail "fuzz target $target (log: $log)"
    fi
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
    echo "fuzz $target: ${runs:-?} inputs in ${seconds} s, no finding"
    rm -rf "$work"
  done
  ;;
tsan)
  "$lit" -q "$build_dir/test/unit" || fail "lit"
  echo "tsan: actor, device, launcher, executor and portable-kernel tests passed in $((SECONDS - start)) s"
  ;;
esac
echo "pc sanitize $kind: ok"
