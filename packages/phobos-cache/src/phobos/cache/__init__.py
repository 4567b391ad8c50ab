"""The on-disk Phobos kernel cache: compiled kernels and tuning records, safe across processes.

One store shared with the inference runtime, so a kernel compiles once per chip.  The layout is
versioned and documented in docs/cache.md.
"""

from phobos.cache import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.cache.cache import Cache, Pins, Pruned, record_key
from phobos.cache.disk import STALE_TEMP_SECONDS
from phobos.cache.entry import Entry, EntryInfo, Problem
from phobos.cache.kernel import CONTRACT_FILE, CUBIN_FILE, PTX_FILE, kernel_record
from phobos.cache.key import cache_key, canonical_json
from phobos.cache.location import default_max_bytes, default_root
from phobos.cache.lock import BUILD_WAIT_SECONDS
from phobos.cache.manifest import LAYOUT_VERSION, RECORD_FILE
from phobos.cache.warn import CacheWarning

__all__ = [
    "BUILD_WAIT_SECONDS",
    "CONTRACT_FILE",
    "CUBIN_FILE",
    "LAYOUT_VERSION",
    "PTX_FILE",
    "RECORD_FILE",
    "STALE_TEMP_SECONDS",
    "Cache",
    "CacheWarning",
    "Entry",
    "EntryInfo",
    "Pins",
    "Problem",
    "Pruned",
    "cache_key",
    "canonical_json",
    "default_max_bytes",
    "default_root",
    "kernel_record",
    "record_key",
]
