"""The in-process runtime: hosts the executors, steps a GenManip backend (the built-in
simulator in-process, or any GenManip server), and is the harness's bridge to it."""

from runtime_bridge.inproc.open import DEFAULT_CAMERAS, open_runtime
from runtime_bridge.inproc.runtime import InProcRuntime

__all__ = ["DEFAULT_CAMERAS", "InProcRuntime", "open_runtime"]
