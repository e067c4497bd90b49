#!/usr/bin/env bash
# repeat.sh N OUT CMD...: runs CMD N times, its output to OUT1..OUTN; fails
# when any run exits 0 (each run must fail), unless ALLOW_ZERO is set (an
# mpirun with --enable-recovery exits 0 even when its processes failed).
n=$1 out=$2
shift 2
for i in $(seq 1 "$n"); do
  if "$@" > "$out$i" 2>&1 && [ -z "${ALLOW_ZERO:-}" ]; then
    echo "run $i exited 0" >&2
    exit 1
  fi
done
