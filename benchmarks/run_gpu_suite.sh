#!/usr/bin/env bash
# Run the GPU suite where nothing can be installed (benchmarks/gpu_env.sh sets the paths and a
# private kernel cache).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
python3 benchmarks/gpu_suite.py "$@"
