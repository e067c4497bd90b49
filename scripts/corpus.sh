#!/usr/bin/env bash
# Prints the --data spec of the main job's corpus: English text from
# Debian's fortunes package (installed by scripts/setup.sh), byte-level, the
# last 5 % of each file held out for validation (docs/data.md).
set -euo pipefail
dir=/usr/share/games/fortunes
files=()
for f in fortunes wisdom literature science people computers cookie; do
  if [ ! -f "$dir/$f" ]; then
    echo "corpus.sh: $dir/$f is missing; run scripts/setup.sh (package fortunes)" >&2
    exit 1
  fi
  files+=("$dir/$f")
done
(IFS=+; echo "format=text,train=${files[*]},validation_fraction=0.05")
