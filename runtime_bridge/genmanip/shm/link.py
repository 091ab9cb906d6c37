"""The client's shared-memory session with one server, and how it falls back.

Before a ``/reset`` or ``/step`` the link opens a session if it has none (``POST
/harness/shm/open``), maps the segment it names and adds ``Accept`` (shm, then frames, then the
compatible encoding) and the ``X-Harness-Shm`` claim to the request. Fallbacks, none of which
loses an answer:

* the server has no shm route (upstream, or shm off), or the segment cannot be opened (another
  host or container, another user, vanished): shared memory is off for this client, the binary
  frames path (then the compatible encoding) carries the answers;
* the server answers another encoding with ``X-Harness-Shm-Status: unknown-session`` (it
  restarted, or closed the session): the link reopens a session before the next request;
* a descriptor that cannot be read (stale, torn) drops the session, a hostile one turns shared
  memory off; that one answer is lost (the client reports the step's outcome as unknown).

After ``MAX_FAILURES`` consecutive failures shared memory stays off for this client.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import httpx

from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.shm.reader import ShmReader
from runtime_bridge.genmanip.shm.segment import DEFAULT_DIRECTORY, check_name
from runtime_bridge.genmanip.shm.writer import CLAIM_HEADER

__all__ = ["OPEN_ROUTE", "RELEASE_ROUTE", "ShmLink"]

log = logging.getLogger(__name__)

OPEN_ROUTE = "/harness/shm/open"
RELEASE_ROUTE = "/harness/shm/release"
MAX_FAILURES = 3
ACCEPT = (f"{codec.SHM_MEDIA_TYPE}, {codec.FRAMES_MEDIA_TYPE};q=0.9, "
          f"{codec.COMPAT_MEDIA_TYPE};q=0.5")


class ShmLink:
    """See the module docstring. ``status`` says what the link does now and why."""

    def __init__(self, *, directory: str = DEFAULT_DIRECTORY, copy: bool = True) -> None:
        self.directory = directory
        self.copy = copy
        self.reader: ShmReader | None = None
        self.claim: str | None = None
        self.enabled = True
        self.failures = 0
        self.status = "not negotiated yet"

    def headers(self, http: httpx.Client, timeout: float) -> dict[str, str]:
        """Headers for the next ``/reset`` or ``/step`` (empty once shared memory is off)."""
        if self.enabled and self.reader is None:
            self._open(http, timeout)
        if self.reader is None or self.claim is None:
            return {}
        return {"accept": ACCEPT, CLAIM_HEADER: self.claim}

    def _open(self, http: httpx.Client, timeout: float) -> None:
        try:
            r = http.post(OPEN_ROUTE, json={}, timeout=timeout)
        except httpx.HTTPError as exc:  # the request itself will say what is wrong
            self.status = f"not negotiated yet (the server did not answer: {exc})"
            return
        if r.status_code in (404, 405):
            self._off(f"the server has no {OPEN_ROUTE} (not harness-bt, or shm disabled)")
            return
        try:
            info = r.json() if r.status_code == 200 else None
            name = check_name(info.get("segment") if isinstance(info, dict) else None, OPEN_ROUTE)
            session = info["session"] if isinstance(info, dict) else None
        except (ValueError, HttpError) as exc:
            self._off(f"{OPEN_ROUTE} answered HTTP {r.status_code} without a usable session "
                      f"({exc})")
            return
        if not isinstance(session, str) or not session.isalnum():
            self._off(f"{OPEN_ROUTE} answered a bad session id {str(session)[:40]!r}")
            return
        try:
            reader = ShmReader(self.directory, name, copy=self.copy)
            token = reader.token()
        except HttpError as exc:
            self._off(f"segment {name} cannot be mapped here ({exc.message})")
            return
        self.reader, self.claim = reader, f"{session}.{token.hex()}"
        self.status = f"shared memory (segment {self.directory}/{name})"
        log.info("GenManip answers through shared memory %s/%s", self.directory, name)

    def answered(self, media_type: str | None, shm_status: str | None) -> bool:
        """Note how a request that carried the claim was answered; True for a descriptor."""
        if self.reader is None:
            return False
        if media_type and media_type.split(";")[0].strip().lower() == codec.SHM_MEDIA_TYPE:
            self.failures = 0
            return True
        if shm_status == "unknown-session":
            self._drop("the server no longer knows the session (restarted or closed it)")
        return False

    def read(self, body: bytes, *, where: str, max_bytes: int | None) -> Any:
        """The payload of a descriptor body; on failure the session is dropped (stale, torn) or
        shared memory turned off (hostile), and the :class:`HttpError` raised."""
        assert self.reader is not None, "read() follows answered() == True"
        try:
            return self.reader.read(body, where=where, max_bytes=max_bytes)
        except HttpError as exc:
            if exc.code in ("SHM_STALE", "SHM_TORN"):
                self._drop(exc.message)
            else:
                self._off(exc.message)
            raise

    def release(self, http: httpx.Client, timeout: float) -> None:
        """Tell the server the session is over (best effort) and unmap."""
        if self.claim is not None:
            with contextlib.suppress(httpx.HTTPError):
                http.post(RELEASE_ROUTE, headers={CLAIM_HEADER: self.claim}, timeout=timeout)
        self._unmap()

    def _unmap(self) -> None:
        if self.reader is not None:
            self.reader.close()
        self.reader = self.claim = None

    def _drop(self, why: str) -> None:
        self._unmap()
        self._failed(why)

    def _failed(self, why: str) -> None:
        self.failures += 1
        if self.failures >= MAX_FAILURES:
            self._off(f"{self.failures} failures in a row, the last: {why}")
        else:
            self.status = f"renegotiating ({why})"
            log.info("GenManip shared memory: %s; renegotiating", why)

    def _off(self, why: str) -> None:
        self._unmap()
        self.enabled = False
        self.status = f"off: {why}"
        log.info("GenManip shared memory off: %s", why)
