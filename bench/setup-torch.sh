#!/usr/bin/env bash
# The baseline of bench/gpt_step.py: Debian's PyTorch (python3-torch 1.13).
# A benchmark-only dependency: neither scripts/setup.sh nor the tests need it.
set -euo pipefail
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "setup-torch: python3-torch present"
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends python3-torch
