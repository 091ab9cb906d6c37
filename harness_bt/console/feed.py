"""What the console shows of a run, read from the run's trace as it is written.

The run's thread only appends each trace event to a queue (:meth:`Feed.on_event`) and, a few
times per second, keeps a copy of the latest camera images with what the perception made of
them (:meth:`Feed.perception`). The console's thread folds the events (the same fold as the
replay: :mod:`harness_bt.viz.frames`) into a *state*: the replay's view frame
(:func:`harness_bt.viz.view.view_frame`: node statuses and labels, phases, transitions taken,
the step's events) plus the ledger with timings, the verdicts with their evidence, the
budgets left, the decision latency, the control status and the stages of a stop. Clients are
sent the difference between the state they have and the latest one (:func:`delta`), so an
update costs what changed, not the size of the tree.
"""

from __future__ import annotations

import collections
import io
import json
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness_bt.events import (
    BudgetEvent,
    CancelEvent,
    CancelSentEvent,
    CommandEvent,
    ControlEvent,
    DrainingEvent,
    Event,
    LatencyEvent,
    RunEndEvent,
    RunStartEvent,
    StopEvent,
    TaskEvent,
    VerdictEvent,
    parse_event,
)
from harness_bt.recording import project_box
from harness_bt.run.episodes import percentile
from harness_bt.runtime.observation import Observation
from harness_bt.viz.frames import FrameFolder
from harness_bt.viz.view import view_frame
from harness_bt.world import ObjectUpdate, Perception

__all__ = ["Feed", "StopStages", "delta", "image_message"]

#: State keys holding many entries: a delta carries only the entries that changed.
KEYED = ("nodes", "phases", "ledger", "verdicts")
_TERMINAL = ("SUCCEEDED", "FAILED", "CANCELED", "REJECTED")
#: The control ops that raise an alert on the page.
_ALERTED = ("breakpoint", "pause", "resume", "step", "break", "clear", "paused")


def delta(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """What turns state ``before`` into ``after``: changed keys; for the keyed maps only the
    changed entries (``{"nodes": {"n4": [...]}}``) and the removed ones under ``"-nodes"``."""
    if before is None:
        return {"full": True, **after}
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if key in KEYED and isinstance(old, dict):
            changed = {k: v for k, v in value.items() if old.get(k) != v}
            gone = [k for k in old if k not in value]
            if changed:
                out[key] = changed
            if gone:
                out["-" + key] = gone
        elif old != value:
            out[key] = value
    return out


def image_message(header: Mapping[str, Any], data: bytes) -> bytes:
    """A binary WebSocket message: 4 bytes (big-endian length of the header), the header as
    JSON, the image bytes."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return struct.pack(">I", len(head)) + head + data


class StopStages:
    """The stages of a stop, as the trace shows them happen: requested, the harness halted,
    each cancel accepted (or refused) by the runtime, each command's end: CANCELED (the stop
    confirmed), UNKNOWN (not confirmed), or another end it reached first; then the run's end.
    Nothing is called confirmed that the runtime has not confirmed."""

    def __init__(self) -> None:
        self.stages: list[list[Any]] = []
        self.pending: set[str] = set()
        self.active = False

    def _add(self, stage: str, text: str, e: Event) -> list[Any]:
        row = [stage, text, e.tick, e.wall]
        self.stages.append(row)
        return row

    def apply(self, event: Event | Mapping[str, Any]) -> list[list[Any]]:
        """The stages event ``event`` adds."""
        e = parse_event(event)
        cid = e.command_id
        new: list[list[Any]] = []
        if isinstance(e, ControlEvent) and e.op == "stop":
            self.active = True
            new.append(self._add("requested", f"stop asked for by "
                                 f"{e.who.get('client', '?')} ({e.who.get('peer', '')})", e))
            return new
        if not self.active:
            return new
        match e:
            case StopEvent():
                new.append(self._add("halted", "the harness stopped ticking (halted "
                                     f"{', '.join(e.configuration) or 'nothing'})", e))
            case CancelEvent() if cid:
                self.pending.add(cid)
            case DrainingEvent():
                opened = [c for c in e.open if c in self.pending]
                if not self.pending:
                    new.append(self._add("nothing_open", "no command was in flight: the "
                                         "runtime had nothing of this run to stop", e))
                else:
                    new.append(self._add("canceling", f"{len(opened)} command(s) waiting for "
                                         f"the runtime: {', '.join(opened) or '-'}", e))
            case CancelSentEvent() if cid in self.pending:
                if e.sent and e.accepted:
                    new.append(self._add("cancel_accepted", f"the runtime accepted the cancel "
                                         f"of {cid} ({e.runtime_state})", e))
                else:
                    new.append(self._add("cancel_refused", f"the cancel of {cid} was not "
                                         f"accepted ({e.reason or e.error})", e))
            case CommandEvent() if cid in self.pending:
                new += self._command(e)
            case RunEndEvent():
                new.append(self._add("run_end", f"the run ended {e.outcome} ({e.reason})", e))
                self.active = False
        return new

    def _command(self, e: CommandEvent) -> list[list[Any]]:
        cid, state, reason = e.command_id, e.state_after, e.reason
        new = []
        if state == "CANCELED" and e.op.startswith("event"):
            new.append(self._add("confirmed", f"the runtime confirmed {cid} stopped "
                                 f"(CANCELED: {reason})", e))
        elif state == "CANCELED":
            new.append(self._add("closed", f"{cid} closed by the harness (CANCELED: "
                                 f"{reason}): its control action had ended", e))
        elif state == "UNKNOWN":
            new.append(self._add("unknown", f"{cid} UNKNOWN: the stop was not confirmed "
                                 f"({reason}); reconciling", e))
        elif state in _TERMINAL:
            new.append(self._add("ended", f"{cid} ended {state} before the cancel took "
                                 f"({reason})", e))
        if state in _TERMINAL:
            self.pending.discard(str(cid))
        return new


class Feed:
    """The run as the console shows it (see the module docstring). ``image_hz``: camera
    images kept per second (wall time), at most; ``fold``: idioms drawn folded."""

    def __init__(self, structure: Mapping[str, Any], *, image_hz: float = 5.0,
                 fold: bool = True, max_events: int = 40) -> None:
        self.structure = dict(structure)
        self.fold = fold
        self.max_events = max_events
        self.image_period = 1.0 / image_hz if image_hz > 0 else 0.0
        self.watching = False  # any client connected: cameras worth copying
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._lock = threading.Lock()
        self._raw: dict[str, tuple[Observation, list[ObjectUpdate]]] = {}
        self._encoded: dict[str, bytes] = {}
        self._grabbed_at = 0.0
        self.episode = -1
        self.state: dict[str, Any] | None = None
        self.dirty = False
        self._reset()

    def _reset(self) -> None:
        self._folder = FrameFolder(self.structure)
        self.stop = StopStages()
        self._ledger: dict[str, list[Any]] = {}
        self._verdicts: dict[str, list[list[Any]]] = {}
        self._budget: dict[str, Any] = {}
        self._max_time_s: float | None = None
        self._started = 0.0
        #: decision latencies by clock (``run``, ``wall``): the wall ones, when the run
        #: measures them, are what its summary reports, so they are the ones shown
        self._latency: dict[str, list[float]] = {"run": [], "wall": []}
        self.control: dict[str, Any] = {}
        self._images = 0

    # ------------------------------------------------------------ the run's thread

    def on_event(self, event: dict[str, Any]) -> None:
        """A trace listener: queue the event (the run does nothing more)."""
        self._queue.append(event)

    def perception(self, perceive: Perception) -> Perception:
        """``perceive``, keeping the latest camera images and what it made of them."""
        def watched(obs: Observation) -> Sequence[ObjectUpdate]:
            updates = perceive(obs)
            if obs.cameras:
                now = time.monotonic()
                if now - self._grabbed_at >= self.image_period:
                    self._grabbed_at = now
                    kept = list(updates)
                    with self._lock:
                        for name, cam in obs.cameras.items():
                            if cam.rgb is not None:
                                self._raw[name] = (obs, kept)
            return updates

        return watched

    # ------------------------------------------------------------ the console's thread

    def drain(self) -> list[dict[str, Any]]:
        """Fold what the run wrote since the last call; returns the alerts it raised
        (breakpoints reached, stop stages, a new episode, the run's end)."""
        alerts: list[dict[str, Any]] = []
        while self._queue:
            e = parse_event(self._queue.popleft())
            self.dirty = True
            if isinstance(e, TaskEvent):
                self.structure = e.structure
                self.episode += 1
                self._reset()
                alerts.append({"type": "alert", "kind": "episode", "episode": self.episode,
                               "run_id": e.run_id})
            self._folder.apply(e)
            alerts += self._extra(e)
        return alerts

    def _extra(self, e: Event) -> list[dict[str, Any]]:
        alerts = [{"type": "stage", "stage": s[0], "text": s[1], "tick": s[2], "wall": s[3]}
                  for s in self.stop.apply(e)]
        mono = round(e.mono, 3)
        match e:
            case CommandEvent(command_id=str(cid)) if cid:
                row = self._ledger.get(cid)
                if row is None:
                    row = self._ledger[cid] = [e.skill, "", "", mono, mono, 0.0]
                row[1], row[2] = e.state_after, e.reason or row[2]
                row[4] = mono
                row[5] = round(mono - row[3], 3)
            case VerdictEvent():
                rows = self._verdicts.setdefault(str(e.command_id or e.node_path), [])
                rows.append([e.verdict, list(e.evidence)[:4], e.final, mono, e.node_path])
                del rows[:-3]
            case RunStartEvent():
                self._budget = dict(e.budget)
                self._max_time_s = e.max_time_s
                self._started = mono
            case BudgetEvent():
                for key, value in (("retries_used", e.retries_used),
                                   ("retries_left", e.retries_left),
                                   ("time_left_s", e.time_left_s)):
                    if value is not None:
                        self._budget[key] = value
            case LatencyEvent(which="decision", seconds=float(seconds)):
                self._latency.setdefault(e.clock, []).append(seconds)
            case ControlEvent(op=op) if op in _ALERTED:
                alerts.append({"type": "alert", "kind": "control", "op": op, "node": e.node,
                               "when": e.when, "who": e.who or None, "tick": e.tick,
                               "status": e.status})
            case StopEvent():  # who stopped it: the console (by) or the runner itself
                alerts.append({"type": "alert", "kind": "stop", "reason": e.reason,
                               "by": dict(e.by) or None})
            case RunEndEvent():
                alerts.append({"type": "alert", "kind": "run_end", "outcome": e.outcome,
                               "reason": e.reason})
        return alerts

    def build(self) -> dict[str, Any]:
        """The latest state (a new dict: states already sent are never changed)."""
        frame = self._folder.frame
        view = view_frame(self.structure, frame, fold=self.fold)
        view["events"] = view["events"][-self.max_events:]
        frame.events = []
        view.pop("images", None)
        view.pop("commands", None)
        clock = "wall" if self._latency.get("wall") else "run"
        shown = self._latency.get(clock, [])
        lat = sorted(shown)
        budget = dict(self._budget)
        if self._max_time_s is not None:
            budget["time_left_s"] = round(max(0.0, self._max_time_s - (
                frame.mono - self._started)), 2)
        view.update(
            episode=self.episode, ledger={k: list(v) for k, v in self._ledger.items()},
            verdicts={k: [list(r) for r in v] for k, v in self._verdicts.items()},
            budget=budget, control=dict(self.control),
            latency={"n": len(lat), "last_ms": _ms(shown[-1] if lat else None), "clock": clock,
                     "p50_ms": _ms(percentile(lat, 50)), "p99_ms": _ms(percentile(lat, 99))},
            stop=[list(s) for s in self.stop.stages])
        self.state = view
        self.dirty = False
        return view

    def encode(self) -> None:
        """Compress the camera images kept since the last call (JPEG, with the perceived
        objects' boxes in the header), while someone watches. Called on the run's thread
        between two ticks, outside any decision: compressing on the console's thread would
        hold the interpreter while the run decides."""
        if not self.watching:
            return
        with self._lock:
            raw, self._raw = self._raw, {}
        out = {}
        for name, (obs, updates) in raw.items():
            cam = obs.cameras[name]
            if cam.rgb is None:
                continue
            height, width = cam.rgb.shape[:2]
            boxes = {u.object_id: box for u in updates if not u.removed
                     and u.camera in ("", name) and (box := project_box(u, cam)) is not None}
            self._images += 1
            header = {"camera": name, "id": self._images, "w": int(width), "h": int(height),
                      "boxes": boxes, "timestep": obs.timestep, "mime": "image/jpeg",
                      "objects": sorted(u.object_id for u in updates if not u.removed)}
            out[name] = image_message(header, _jpeg(cam.rgb))
        if out:
            with self._lock:
                self._encoded.update(out)

    def images(self, *, held: bool = False) -> list[tuple[str, bytes]]:
        """The camera images compressed since the last call (camera, binary message);
        ``held``: the run is paused or over (it decides nothing), so what it kept last is
        compressed here."""
        if held:
            self.encode()
        with self._lock:
            out, self._encoded = self._encoded, {}
        return list(out.items())


def _jpeg(rgb: Any) -> bytes:
    import numpy as np
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)).save(
        out, format="JPEG", quality=75)
    return out.getvalue()


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)
