"""``python -m runtime_bridge.testing.chaos runtime|harness ...``: the two processes of a chaos
run."""

from __future__ import annotations

import sys


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("runtime", "harness"):
        print("usage: python -m runtime_bridge.testing.chaos runtime|harness [options]",
              file=sys.stderr)
        return 2
    which, rest = sys.argv[1], sys.argv[2:]
    if which == "runtime":
        from runtime_bridge.testing.chaos.runtime import main as run
    else:
        from runtime_bridge.testing.chaos.harness import main as run
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
