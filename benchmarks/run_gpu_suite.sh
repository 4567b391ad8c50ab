#!/usr/bin/env bash
# Run the GPU suite where nothing can be installed: the sources go on PYTHONPATH.
# Kernels are cached in $PHOBOS_CACHE_DIR when it is set, else in a private temporary folder
# (mktemp -d: yours, mode 0700) removed at the end; never in a fixed, shared path such as
# /tmp/phobos-cache, which another user could create first and plant kernels in
# (docs/cache.md, section 1).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH=".:src:$(ls -d packages/*/src | paste -sd:)${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH PYTHONUNBUFFERED=1
if [ -z "${PHOBOS_CACHE_DIR:-}" ]; then
    PHOBOS_CACHE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/phobos-cache.XXXXXXXX")" || exit 1
    trap 'rm -rf "$PHOBOS_CACHE_DIR"' EXIT
fi
export PHOBOS_CACHE_DIR
python3 benchmarks/gpu_suite.py "$@"
