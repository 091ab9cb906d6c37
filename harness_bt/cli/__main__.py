"""``python -m harness_bt.cli``: the ``harness`` command."""

import sys

from harness_bt.cli import entry

sys.exit(entry())
