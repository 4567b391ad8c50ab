#!/usr/bin/env bash
# Every tutorial kernel, every variant, under compute-sanitizer's memcheck, racecheck and
# synccheck (benchmarks/sanitize_tutorials.py says what runs).  Logs go to $OUT (or the current
# folder); exits non-zero if a tool reports an error or a variant computes a wrong output.
# Usage: bash benchmarks/sanitize_tutorials.sh [FILTER] [TOOL...]   (on the GPU machine)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
filter="${1:-}"
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck)
logs="${OUT:-.}"
failed=0
for tool in "${tools[@]}"; do
    log="$logs/sanitize_${tool}.log"
    compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 20 \
        python3 benchmarks/sanitize_tutorials.py $filter >"$log" 2>&1
    status=$?
    echo "sanitize_tutorials: $tool exit $status; $(grep -aE 'ERROR SUMMARY|RACECHECK SUMMARY|outputs checked' "$log" | tr '\n' ' ')"
    [ "$status" -ne 0 ] && failed=1
done
exit "$failed"
