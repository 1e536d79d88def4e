"""``python -m tests.chaos``: see :mod:`tests.chaos.cli`."""

import sys

from tests.chaos.cli import main

sys.exit(main())
