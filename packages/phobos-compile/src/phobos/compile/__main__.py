"""``python -m phobos.compile``: the ``phobos-compile`` command."""

import sys

from phobos.compile.cli import main

sys.exit(main())
