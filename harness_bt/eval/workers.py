"""Local worker processes: the default way ``harness eval`` runs its episodes.

A :class:`ProcessPool` keeps ``workers`` processes (started with ``spawn``: no simulator state
is inherited), each running one episode at a time. The driver hands a worker an
:class:`~harness_bt.eval.plan.EpisodeSpec` as JSON over a pipe and reads its result rows back
as JSON (nothing crossing the pipe is unpickled). A worker that dies (killed, out of memory, a
crash in native code) is noticed through its process sentinel: its episode comes back as a
``crashed`` event and a fresh process takes its place on the next submit. Workers die with the
driver (``PR_SET_PDEATHSIG`` on Linux), so a killed driver leaves no episode running.

The pool protocol (:class:`Pool`) is shared with :class:`~harness_bt.eval.ray_pool.RayPool`:
``free`` slots, ``submit(spec)``, ``wait()`` for the next :class:`Event` s, ``close()``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import traceback
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from harness_bt.errors import HarnessError
from harness_bt.eval.episode import DEFAULT_EPISODE_FN, resolve, run_server_episodes
from harness_bt.eval.plan import EpisodeSpec

__all__ = ["Event", "Pool", "ProcessPool", "run_in_worker"]


@dataclass(frozen=True, slots=True)
class Event:
    """What a pool reports. ``kind``: ``row`` (an episode finished; ``row`` holds it; a server
    worker sends several), ``done`` (the spec's work is over), ``error`` (the episode raised:
    ``detail`` says what, ``code`` its error code), ``crashed`` (the worker died under it)."""

    kind: str
    spec: EpisodeSpec
    row: dict[str, Any] | None = None
    detail: str = ""
    code: str = ""


class Pool(Protocol):
    """Runs episode specs somewhere (see the module docstring)."""

    @property
    def free(self) -> int: ...

    def submit(self, spec: EpisodeSpec, *, skip: Collection[str] = ()) -> None: ...

    def wait(self) -> list[Event]: ...

    def close(self) -> None: ...


def run_in_worker(spec: EpisodeSpec, episode_fn: str,
                  skip: Collection[str] = ()) -> list[dict[str, Any]]:
    """What a worker does with a spec: messages (``row`` / ``error``) as JSON-ready dicts, the
    last one ``done`` (or ``error``). Shared by processes and Ray tasks."""
    out: list[dict[str, Any]] = []
    try:
        if spec.sim_url is not None:
            skipped = set(skip)
            out.extend({"kind": "row", "row": row}
                       for row in run_server_episodes(spec, skip=skipped.__contains__))
        else:
            out.append({"kind": "row", "row": resolve(episode_fn)(spec)})
    except HarnessError as exc:
        out.append({"kind": "error", "code": exc.code, "detail": str(exc)})
        return out
    except Exception as exc:  # noqa: BLE001 - any failure of one episode is that episode's
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
        out.append({"kind": "error", "code": type(exc).__name__,
                    "detail": f"{type(exc).__name__}: {exc}{where}"})
        return out
    out.append({"kind": "done"})
    return out


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PDEATHSIG


def _worker_main(conn: multiprocessing.connection.Connection, episode_fn: str,
                 parent: int) -> None:
    _die_with_parent()
    if os.getppid() != parent:  # the driver died before the signal was armed
        os._exit(1)
    os.dup2(2, 1)  # native libraries print on stdout; the driver's stdout is the report
    while True:
        try:
            message = orjson.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        spec = EpisodeSpec.from_dict(message["spec"])
        if spec.sim_url is None:
            for item in run_in_worker(spec, episode_fn):
                conn.send_bytes(orjson.dumps(item))
            continue
        try:  # a server worker streams its rows as they come
            for row in run_server_episodes(spec, skip=set(message.get("skip", ())).__contains__):
                conn.send_bytes(orjson.dumps({"kind": "row", "row": row}))
            conn.send_bytes(orjson.dumps({"kind": "done"}))
        except HarnessError as exc:
            conn.send_bytes(orjson.dumps({"kind": "error", "code": exc.code,
                                          "detail": str(exc)}))


@dataclass
class _Slot:
    process: Any
    conn: multiprocessing.connection.Connection
    spec: EpisodeSpec | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)


class ProcessPool:
    """See the module docstring. ``episode_fn``: ``module:function`` a worker calls per spec."""

    def __init__(self, workers: int, *, episode_fn: str = DEFAULT_EPISODE_FN) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.episode_fn = episode_fn
        self._ctx = multiprocessing.get_context("spawn")
        self._slots: list[_Slot] = []
        self.started = 0  # processes started, replacements included

    @property
    def free(self) -> int:
        return self.workers - sum(s.spec is not None for s in self._slots)

    def pids(self) -> list[int]:
        return [s.process.pid for s in self._slots if s.process.is_alive()]

    def _spawn(self) -> _Slot:
        ours, theirs = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(target=_worker_main, name="harness-eval-worker",
                                    args=(theirs, self.episode_fn, os.getpid()), daemon=True)
        process.start()
        theirs.close()
        self.started += 1
        slot = _Slot(process, ours)
        self._slots.append(slot)
        return slot

    def submit(self, spec: EpisodeSpec, *, skip: Collection[str] = ()) -> None:
        slot = next((s for s in self._slots if s.spec is None), None)
        if slot is None:
            if len(self._slots) >= self.workers:
                raise RuntimeError("no free worker: submit only while free > 0")
            slot = self._spawn()
        slot.spec = spec
        slot.conn.send_bytes(orjson.dumps({"spec": spec.to_dict(), "skip": sorted(skip)}))

    def wait(self) -> list[Event]:
        """Block until some worker has news; return it."""
        busy = [s for s in self._slots if s.spec is not None]
        if not busy:
            return []
        ready = multiprocessing.connection.wait(
            [s.conn for s in busy] + [s.process.sentinel for s in busy])
        events: list[Event] = []
        for slot in busy:
            if slot.conn in ready:
                events.extend(self._read(slot))
            elif slot.process.sentinel in ready and slot.spec is not None:
                events.extend(self._read(slot))  # what it sent before it died, then the death
        return events

    def _read(self, slot: _Slot) -> list[Event]:
        events: list[Event] = []
        spec = slot.spec
        assert spec is not None
        try:
            while slot.conn.poll():
                item = orjson.loads(slot.conn.recv_bytes())
                kind = item["kind"]
                if kind == "row":
                    events.append(Event("row", spec, row=item["row"]))
                    continue
                events.append(Event(kind, spec, detail=item.get("detail", ""),
                                    code=item.get("code", "")))
                slot.spec = None
                return events
        except (EOFError, OSError):
            pass
        if not slot.process.is_alive() or slot.conn.closed:
            slot.process.join(timeout=5)
            code = slot.process.exitcode
            events.append(Event("crashed", spec, detail=f"worker pid {slot.process.pid} died "
                                f"(exit code {code})"))
            slot.conn.close()
            self._slots.remove(slot)
        return events

    def close(self) -> None:
        for slot in self._slots:
            slot.conn.close()
        for slot in self._slots:
            slot.process.join(timeout=5)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join()
        self._slots.clear()
