"""Local worker processes: the default way ``harness eval`` runs its episodes.

A :class:`ProcessPool` keeps ``workers`` processes (``python -m harness_bt.eval.worker``, fresh
interpreters: no simulator state is inherited), each running one episode at a time. The
driver writes a worker an :class:`~harness_bt.eval.plan.EpisodeSpec` as a JSON line on its
stdin and reads its messages back as JSON lines (nothing crossing the pipes is unpickled). A
worker that dies (killed, out of memory, a crash in native code) is noticed by the end of its
stdout: its episode comes back as a ``crashed`` event and a fresh process takes its place on
the next submit. Workers die with the driver (``PR_SET_PDEATHSIG`` on Linux), so a killed
driver leaves no episode running.

The pool protocol (:class:`Pool`) is shared with :class:`~harness_bt.eval.ray_pool.RayPool`:
``free`` slots, ``submit(spec)``, ``wait()`` for the next :class:`Event` s, ``close()``.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Collection
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


def run_in_worker(spec: EpisodeSpec, episode_fn: str, skip: Collection[str] = (), *,
                  emit: Callable[[dict[str, Any]], None] | None = None
                  ) -> list[dict[str, Any]]:
    """What a worker does with a spec: its messages (``row`` / ``error``) as JSON-ready dicts,
    the last one ``done`` (or ``error``). Shared by processes and Ray tasks. ``emit``: send
    each row of a server worker the moment it is there (instead of in the list)."""
    out: list[dict[str, Any]] = []
    try:
        if spec.sim_url is not None:
            skipped = set(skip)
            for row in run_server_episodes(spec, skip=skipped.__contains__):
                (emit or out.append)({"kind": "row", "row": row})
        else:
            out.append({"kind": "row", "row": resolve(episode_fn)(spec)})
    except HarnessError as exc:
        out.append({"kind": "error", "code": exc.code, "detail": str(exc)})
        return out
    except Exception as exc:
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
        out.append({"kind": "error", "code": type(exc).__name__,
                    "detail": f"{type(exc).__name__}: {exc}{where}"})
        return out
    out.append({"kind": "done"})
    return out


@dataclass
class _Slot:
    process: subprocess.Popen[bytes]
    spec: EpisodeSpec | None = None
    buffer: bytearray = field(default_factory=bytearray)

    @property
    def fd(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()


class ProcessPool:
    """See the module docstring. ``episode_fn``: ``module:function`` a worker calls per spec."""

    def __init__(self, workers: int, *, episode_fn: str = DEFAULT_EPISODE_FN) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.episode_fn = episode_fn
        self._slots: list[_Slot] = []
        self.started = 0  # processes started, replacements included

    @property
    def free(self) -> int:
        return self.workers - sum(s.spec is not None for s in self._slots)

    def pids(self) -> list[int]:
        return [s.process.pid for s in self._slots if s.process.poll() is None]

    def _spawn(self) -> _Slot:
        process = subprocess.Popen(
            [sys.executable, "-m", "harness_bt.eval.worker", str(os.getpid()), self.episode_fn],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.started += 1
        slot = _Slot(process)
        self._slots.append(slot)
        return slot

    def submit(self, spec: EpisodeSpec, *, skip: Collection[str] = ()) -> None:
        slot = next((s for s in self._slots if s.spec is None), None)
        if slot is None:
            if len(self._slots) >= self.workers:
                raise RuntimeError("no free worker: submit only while free > 0")
            slot = self._spawn()
        slot.spec = spec
        assert slot.process.stdin is not None
        with contextlib.suppress(OSError):  # it died: wait() reads its end, reports a crash
            slot.process.stdin.write(orjson.dumps({"spec": spec.to_dict(),
                                                   "skip": sorted(skip)}) + b"\n")

    def wait(self) -> list[Event]:
        """Block until some worker has news (a message, or its end); return it."""
        busy = [s for s in self._slots if s.spec is not None]
        if not busy:
            return []
        ready = set(multiprocessing.connection.wait([s.fd for s in busy]))
        events: list[Event] = []
        for slot in busy:
            if slot.fd in ready:
                events.extend(self._read(slot))
        return events

    def _read(self, slot: _Slot) -> list[Event]:
        spec = slot.spec
        assert spec is not None
        chunk = os.read(slot.fd, 1 << 20)
        slot.buffer.extend(chunk)
        events: list[Event] = []
        while b"\n" in slot.buffer and slot.spec is not None:
            line, _, rest = bytes(slot.buffer).partition(b"\n")
            slot.buffer[:] = rest
            item = orjson.loads(line)
            if item["kind"] == "row":
                events.append(Event("row", spec, row=item["row"]))
                continue
            events.append(Event(item["kind"], spec, detail=item.get("detail", ""),
                                code=item.get("code", "")))
            slot.spec = None
        if not chunk:  # the end of its stdout: the worker is gone
            code = slot.process.wait()
            if slot.spec is not None:
                events.append(Event("crashed", spec, detail=f"worker pid {slot.process.pid} "
                                    f"died (exit code {code})"))
            self._end(slot)
        return events

    def _end(self, slot: _Slot) -> None:
        for stream in (slot.process.stdin, slot.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if slot.process.poll() is None:
            slot.process.kill()
        slot.process.wait()
        if slot in self._slots:
            self._slots.remove(slot)

    def close(self) -> None:
        """End every worker: stdin closed (an idle worker exits), a busy one killed."""
        for slot in list(self._slots):
            if slot.process.stdin is not None:
                with contextlib.suppress(OSError):
                    slot.process.stdin.close()
            if slot.spec is not None:
                slot.process.kill()
        for slot in list(self._slots):
            try:
                slot.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                slot.process.kill()
            self._end(slot)
