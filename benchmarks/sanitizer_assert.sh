#!/usr/bin/env bash
# Run a kernel whose device assert fails under compute-sanitizer, and check that the report
# names the Python file and line of the assert (docs/errors.md, "Device asserts").
# Usage: bash benchmarks/sanitizer_assert.sh   (on a machine with an NVIDIA GPU, torch and
# compute-sanitizer; benchmarks/gpu_env.sh sets the paths)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
example=docs/examples/device_assert.py
line=$(grep -n 'assert t >= 0.0' "$example" | cut -d: -f1)
report=$(mktemp)
trap 'rm -f "$report"; phobos_cleanup' EXIT
compute-sanitizer --tool memcheck python3 "$example" --gpu >"$report" 2>&1
status=$?
cat "$report"
if [ "$status" -eq 0 ]; then
    echo "sanitizer_assert: expected the failed assert to fail the run" >&2
    exit 1
fi
if ! grep -q "device_assert.py:${line}" "$report"; then
    echo "sanitizer_assert: the report does not name ${example}:${line}" >&2
    exit 1
fi
echo "sanitizer_assert: the report names ${example}:${line}"
