#!/usr/bin/env bash
# repeat.sh N OUT CMD...: runs CMD N times, its output to OUT1..OUTN; fails
# when any run exits 0 (each run must fail), unless ALLOW_ZERO is set (an
# mpirun with --enable-recovery exits 0 even when its processes failed).
#
# Each run gets REPEAT_TIMEOUT seconds (default 120). Open MPI's mpirun with
# --enable-recovery has been seen to hang after every process it started
# had ended; such a run is started again (twice at most) rather than left
# to hang the suite. A run that times out three times fails.
n=$1 out=$2
shift 2
limit=${REPEAT_TIMEOUT:-120}
for i in $(seq 1 "$n"); do
  for attempt in 1 2 3; do
    start=$SECONDS
    timeout -k 10 "$limit" "$@" < /dev/null > "$out$i" 2>&1
    rc=$?
    # Not the exit status: mpirun exits 137 itself when a process was
    # killed (the tests kill one on purpose).
    [ $((SECONDS - start)) -lt "$limit" ] && break
    echo "run $i: timed out after $limit s (attempt $attempt)" >&2
    [ "$attempt" -eq 3 ] && exit 1
  done
  if [ "$rc" -eq 0 ] && [ -z "${ALLOW_ZERO:-}" ]; then
    echo "run $i exited 0" >&2
    exit 1
  fi
done
