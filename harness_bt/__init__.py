"""harness-bt: traceable robot tasks from intent to physical result."""

from harness_bt._version import __version__
from harness_bt.errors import BridgeError, CommandError, DefinitionError, HarnessError

__all__ = ["BridgeError", "CommandError", "DefinitionError", "HarnessError", "__version__"]
