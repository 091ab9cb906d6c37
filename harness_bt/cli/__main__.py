"""``python -m harness_bt.cli``: the ``harness`` command."""

import sys

from harness_bt.cli import main

sys.exit(main())
