"""PyBullet, loaded and connected without its native chatter on the terminal.

PyBullet's C library prints ``pybullet build time: ...`` when it is imported and ``argv[0]=``
on every connect, with ``printf`` straight to file descriptor 1 (bypassing ``sys.stdout``), so
Python-level redirection cannot catch it. :func:`quiet_native` points descriptors 1 and 2 at
``/dev/null`` while such code runs, flushes the C library's own buffers before putting them
back (output buffered for a pipe would otherwise come out later, on the restored descriptor),
and always restores them. Every module of the simulator imports PyBullet from here and
connects with :func:`connect_direct`.

Descriptors are process-wide: while one is redirected, what another thread writes to it is
lost too. The windows are short (the import, a connect), and happen while a world is built.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["BulletClient", "connect_direct", "pb", "quiet_native"]


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: what the C library holds for any stream goes out now."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def quiet_native(fds: tuple[int, ...] = (1, 2)) -> Iterator[None]:
    """Discard what is written to the descriptors ``fds`` (default stdout and stderr) at the
    file-descriptor level inside the block, native code included; restore them after, also
    when the block raises. A descriptor that is not open is left alone."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _flush_c_stdio()
    saved: list[tuple[int, int]] = []
    sink = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            try:
                saved.append((fd, os.dup(fd)))
            except OSError:
                continue
            os.dup2(sink, fd)
        yield
    finally:
        _flush_c_stdio()
        for fd, copy in reversed(saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(sink)


with quiet_native():
    import pybullet as pb
    from pybullet_utils.bullet_client import BulletClient


class _CachedClient(BulletClient):
    """A :class:`BulletClient` that binds each PyBullet function to its client once: the base
    class builds a new ``functools.partial`` (after an ``inspect`` check) on every attribute
    access, which a control step does some thirty times."""

    def __getattr__(self, name: str) -> Any:
        attribute = super().__getattr__(name)
        if name != "disconnect" and isinstance(attribute, functools.partial):
            self.__dict__[name] = attribute
        return attribute


def connect_direct() -> Any:
    """A new PyBullet client in DIRECT mode (no GUI, CPU), connected quietly."""
    with quiet_native():
        return _CachedClient(connection_mode=pb.DIRECT)
