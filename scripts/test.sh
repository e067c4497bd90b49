#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh: packages, configure, build), then runs
# every test: the lit IR suite and the GoogleTest suites, in one lit run;
# then the sanitizer builds (scripts/sanitize.sh): ASan + UBSan over the
# suite and a bounded run of every fuzz target, and TSan over the actor,
# communicator and executor tests.
# Ends with one line: "pc tests: N passed, M failed, K skipped; sanitizers:
# asan ok, tsan ok". PC_SKIP_SANITIZERS=1 skips them (a quick local loop).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PC_BUILD_DIR:-$root/build}

"$root/scripts/setup.sh" || { echo "pc tests: setup or build failed"; exit 1; }

lit=/usr/lib/llvm-22/bin/lit
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$lit" -v "$build_dir/test" "$build_dir/test/unit" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

count() { # sums lit's "  <Label>: N" summary lines
  grep -E "^ *$1 *: +[0-9]+" "$log" | grep -oE '[0-9]+' | head -n 1 || true
}
passed=$(( $(count Passed) + $(count 'Expectedly Failed') + 0 ))
failed=$(( $(count Failed) + $(count 'Unexpectedly Passed') + $(count Unresolved) + $(count 'Timed Out') + 0 ))
skipped=$(( $(count Skipped) + $(count Unsupported) + 0 ))
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi

sanitizers="skipped (PC_SKIP_SANITIZERS)"
if [ -z "${PC_SKIP_SANITIZERS:-}" ]; then
  sanitizers=""
  for kind in asan tsan; do
    start=$SECONDS
    if "$root/scripts/sanitize.sh" "$kind"; then
      verdict=ok
    else
      verdict=FAILED
      rc=1
    fi
    echo "sanitize $kind: $verdict in $((SECONDS - start)) s"
    sanitizers+="${sanitizers:+, }$kind $verdict"
  done
fi
echo "pc tests: $passed passed, $failed failed, $skipped skipped; sanitizers: $sanitizers"
exit "$rc"
