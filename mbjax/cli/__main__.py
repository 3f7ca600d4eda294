"""``python -m mbjax.cli``: the ``mbjax`` command."""

import sys

from .main import main

sys.exit(main())
