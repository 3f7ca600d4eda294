"""``python -m mbjax``: the ``mbjax`` command (as ``python -m mbjax.cli``)."""

import sys

from .cli.main import main

sys.exit(main())
