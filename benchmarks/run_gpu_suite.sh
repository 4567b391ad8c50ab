#!/usr/bin/env bash
# Run the GPU suite where nothing can be installed: the sources go on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH=".:src:$(ls -d packages/*/src | paste -sd:)${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH PYTHONUNBUFFERED=1
export PHOBOS_CACHE_DIR="${PHOBOS_CACHE_DIR:-/tmp/phobos-cache}"
exec python3 benchmarks/gpu_suite.py "$@"
