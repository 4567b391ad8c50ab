"""``python -m ph2py``: the ``ph2py`` command."""

import sys

from ph2py.cli import main

sys.exit(main())
