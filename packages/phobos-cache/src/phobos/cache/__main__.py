"""``python -m phobos.cache``: the ``phobos-cache`` command."""

import sys

from phobos.cache.cli import main

sys.exit(main())
