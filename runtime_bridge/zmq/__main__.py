"""``python -m runtime_bridge.zmq serve ...``: the same as ``harness runtime serve ...``."""

import sys

from harness_bt.errors import HarnessError
from runtime_bridge.zmq.cli import app

if __name__ == "__main__":
    try:
        app(prog_name="harness runtime")
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
