"""The same-host shared-memory fast path of the GenManip transport (harness-bt to harness-bt).

The server writes each answer's arrays into a ring of slots in a per-session segment under
``/dev/shm`` and answers ``/reset`` and ``/step`` with a small descriptor; the client maps the
segment once and reads the arrays from it. Negotiated per client (:class:`ShmLink`), with
clean fallbacks to the binary frames path and the compatible encoding. ``segment`` holds the
layout, ``writer`` the server's sessions, ``reader`` the checked reading of a descriptor.
"""

from runtime_bridge.genmanip.shm.link import ShmLink
from runtime_bridge.genmanip.shm.reader import ShmReader
from runtime_bridge.genmanip.shm.segment import clean_stale
from runtime_bridge.genmanip.shm.writer import ShmConfig, ShmSessions

__all__ = ["ShmConfig", "ShmLink", "ShmReader", "ShmSessions", "clean_stale"]
