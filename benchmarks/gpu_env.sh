# Sourced by the GPU scripts (run_gpu_suite.sh, sanitize_tutorials.sh, sanitizer_assert.sh):
# from the repo root, the sources on PYTHONPATH (nothing can be installed on the GPU machine),
# and kernels cached in $PHOBOS_CACHE_DIR when it is set, else in a private temporary folder
# (mktemp -d: yours, mode 0700) removed at the end; never in a fixed, shared path such as
# /tmp/phobos-cache, which another user could create first and plant kernels in
# (docs/cache.md, section 1).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
PYTHONPATH=".:src:$(ls -d packages/*/src | paste -sd:)${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH PYTHONUNBUFFERED=1
# A script that sets an EXIT trap of its own calls phobos_cleanup in it.
phobos_private_cache=""
if [ -z "${PHOBOS_CACHE_DIR:-}" ]; then
    PHOBOS_CACHE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/phobos-cache.XXXXXXXX")" || exit 1
    phobos_private_cache="$PHOBOS_CACHE_DIR"
fi
export PHOBOS_CACHE_DIR
phobos_cleanup() { [ -n "$phobos_private_cache" ] && rm -rf "$phobos_private_cache"; }
trap phobos_cleanup EXIT
