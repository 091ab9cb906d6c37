"""A client for any GenManip HTTP server (upstream's or ours), safe on untrusted networks.

* Every call has a timeout (:class:`Timeouts`); nothing is retried behind the caller's back.
* ``/step`` is not idempotent. A step whose answer was lost (timeout, connection dropped, 502 /
  503 / 504) raises :class:`StepOutcomeUnknown` and is settled from the ``timestep`` of the next
  observation: a ``step_settled`` notice then says how many of the unknown steps were applied.
  A step that never left (connection refused) raises ``BridgeError`` code ``STEP_NOT_SENT``.
* Responses are read with an unpickler that refuses every global, within a size limit.
* Episode rollover, workers finishing with their final metric, and unknown / settled steps are
  surfaced as :class:`~harness_bt.runtime.bridge.BridgeNotice` events
  (:meth:`GenManipClient.notices`).
* A harness-bt server's answers carry the faults its simulator injected in the step (an extra
  ``faults`` key beside ``obs`` and ``metric``): :attr:`WorkerResult.faults`.
* With ``fast_path`` the client asks for the harness-bt frames encoding; a server that does not
  speak it (upstream) answers in the compatible encoding, which is read as well. With ``shm``
  too (the default) it first negotiates the same-host shared-memory path with a harness-bt
  server (:mod:`runtime_bridge.genmanip.shm`); ``shm_status`` says whether it is in use and why
  not. ``shm_copy=False`` reads arrays as views on the segment (valid for the server's ring).
* ``transport`` is an ``httpx`` seam: tests pass an ``httpx.MockTransport``.

Not thread-safe: one client per control loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx
import numpy as np

from harness_bt.clock import Clock, SystemClock
from harness_bt.errors import BridgeError
from harness_bt.runtime.bridge import BridgeNotice
from harness_bt.runtime.faults import FaultFired, faults_from_wire
from harness_bt.runtime.observation import Observation
from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.actions import GenManipEmbodiment, validate_action
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.observations import observation_from_wire
from runtime_bridge.genmanip.shm.link import ShmLink
from runtime_bridge.genmanip.shm.segment import DEFAULT_DIRECTORY
from runtime_bridge.genmanip.shm.writer import STATUS_HEADER

__all__ = ["ClientOptions", "GenManipClient", "StepOutcomeUnknown", "Timeouts", "WorkerResult"]

_UNKNOWN_STATUSES = {502, 503, 504}
#: the values of a harness-bt server's ``episode_ended`` (anything else is left out)
ENDINGS = ("success", "timeout", "not_judged")


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds per call. Upstream's own client waits 300 s for ``/create_workers`` and 60 s for
    ``/kill``; it never gives up on ``/reset`` or ``/step`` (we do)."""

    connect: float = 5.0
    create_workers: float = 300.0
    reset: float = 120.0
    step: float = 60.0
    kill: float = 60.0
    health: float = 5.0


@dataclass(frozen=True, slots=True, eq=False)
class WorkerResult:
    """One worker's answer: ``obs`` (None once the worker is done) and ``metric`` (the final
    ``{task: mean_success}`` when done, else None)."""

    worker_id: str
    obs: Observation | None
    metric: dict[str, float] | None = None
    #: the faults the simulator injected in this step (a harness-bt server's extra ``faults``)
    faults: tuple[FaultFired, ...] = ()
    #: how the episode that ended in this step ended (a harness-bt server's extra
    #: ``episode_ended``: ``success`` / ``timeout`` / ``not_judged``), else None
    ended: str | None = None

    @property
    def done(self) -> bool:
        return self.obs is None


class StepOutcomeUnknown(BridgeError):
    """The ``/step`` request left but its answer did not arrive: the step may or may not have
    been applied. Do not resend it; the next observation's ``timestep`` settles it."""


@dataclass
class _Unknown:
    steps: int
    known_timestep: dict[str, int | None] = field(default_factory=dict)


def _plain(value: Any) -> Any:
    """Actions as plain builtins (tuples kept) so any server, upstream's included, reads them."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How a :class:`GenManipClient` talks to its server: ``timeouts``; ``token`` (sent as a
    bearer token); ``fast_path`` (harness-bt's binary frames when the server offers them) and,
    with it, ``shm`` / ``shm_copy`` / ``shm_directory`` (camera frames through shared memory
    on one machine); ``embodiment`` (the robot the actions are checked against);
    ``validate_actions`` (refuse a malformed action before sending it);
    ``max_response_bytes`` (the largest answer read)."""

    timeouts: Timeouts | None = None
    token: str | None = None
    fast_path: bool = True
    shm: bool = True
    shm_copy: bool = True
    shm_directory: str = DEFAULT_DIRECTORY
    embodiment: GenManipEmbodiment | str = GenManipEmbodiment.FRANKA_PANDA
    validate_actions: bool = True
    max_response_bytes: int = codec.DEFAULT_MAX_BODY_BYTES


class GenManipClient:
    """Drives the workers ``worker_ids`` of the GenManip server at ``url``.

    ``create_workers()``, then ``reset()`` once, then ``step({wid: {"control_type": ...,
    "action": ...}})`` until :attr:`done`; ``kill()`` at the end. ``reset`` and ``step`` return
    ``{wid: WorkerResult}``.
    """

    def __init__(
        self,
        url: str,
        worker_ids: Iterable[str] = ("0",),
        *,
        options: ClientOptions | None = None,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        o = options if options is not None else ClientOptions()
        self.options = o
        self.url = url.rstrip("/")
        self.worker_ids = [str(w) for w in worker_ids]
        if not self.worker_ids or len(set(self.worker_ids)) != len(self.worker_ids):
            raise BridgeError("BAD_WORKER_IDS", f"worker ids {self.worker_ids!r} must be a "
                              "non-empty list without repeats", fix="pass e.g. ['0', '1']")
        self.timeouts = o.timeouts or Timeouts()
        self.fast_path = o.fast_path
        self._shm = ShmLink(directory=o.shm_directory, copy=o.shm_copy) \
            if o.fast_path and o.shm else None
        self.embodiment = GenManipEmbodiment(o.embodiment)
        self.validate_actions = o.validate_actions
        self.max_response_bytes = o.max_response_bytes
        self.clock = clock or SystemClock()
        headers = {"user-agent": "harness-bt-genmanip-client"}
        if o.token:
            headers["authorization"] = f"Bearer {o.token}"
        self._http = httpx.Client(base_url=self.url, headers=headers, transport=transport,
                                  timeout=httpx.Timeout(self.timeouts.step,
                                                        connect=self.timeouts.connect))
        self._notices: list[BridgeNotice] = []
        self.last_timestep: dict[str, int | None] = dict.fromkeys(self.worker_ids)
        self.metrics: dict[str, dict[str, float]] = {}
        self.unknown: _Unknown | None = None
        self.last_media_type: str | None = None
        self.episodes_seen: dict[str, int] = dict.fromkeys(self.worker_ids, 0)

    # -- lifecycle ---------------------------------------------------------------------------
    def health(self) -> bool:
        """True when ``GET /docs`` answers 200 (upstream has no health route)."""
        try:
            return self._http.get("/docs", timeout=self.timeouts.health).status_code == 200
        except httpx.HTTPError:
            return False

    def info(self) -> dict[str, Any] | None:
        """``GET /harness/info`` of a harness-bt server; None from any other server."""
        return self._get_json("/harness/info")

    def sim_info(self) -> dict[str, Any] | None:
        """``GET /harness/sim`` of the built-in simulator (tasks, episodes, ``num_steps``,
        ``success_hold_steps``, cameras); None from any other server."""
        return self._get_json("/harness/sim")

    def _get_json(self, route: str) -> dict[str, Any] | None:
        try:
            r = self._http.get(route, timeout=self.timeouts.health)
        except httpx.HTTPError:
            return None
        if r.status_code != 200:
            return None
        try:
            data = r.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def create_workers(self) -> None:
        self._json("/create_workers", self.timeouts.create_workers)

    def kill(self) -> None:
        self._json("/kill", self.timeouts.kill)

    @property
    def shm_status(self) -> str:
        """Whether answers come through shared memory, and if not, why."""
        return self._shm.status if self._shm is not None else "off: not asked for"

    def close(self) -> None:
        if self._shm is not None:
            self._shm.release(self._http, self.timeouts.health)
        self._http.close()

    def __enter__(self) -> GenManipClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def done(self) -> bool:
        """Every worker has sent its final metric."""
        return all(w in self.metrics for w in self.worker_ids)

    def notices(self) -> list[BridgeNotice]:
        """The notices since the last call, oldest first."""
        out, self._notices = self._notices, []
        return out

    # -- episodes ----------------------------------------------------------------------------
    def reset(self) -> dict[str, WorkerResult]:
        """``/reset``: the first observation of each worker's next episode."""
        body = codec.dumps({"worker_ids": list(self.worker_ids)})
        try:
            payload = self._post_pickle("/reset", body, self.timeouts.reset, self.worker_ids)
        except _LostAnswer as lost:
            raise BridgeError("RESET_ANSWER_LOST", f"/reset for workers {self.worker_ids}: "
                              f"{lost.what}", where=f"{self.url}/reset",
                              fix="check the server; calling /reset again advances the episode "
                              "queue (upstream skips the episode)",
                              details={"route": "/reset", "worker_ids": self.worker_ids}) from None
        results = self._results(payload, "/reset", self.worker_ids)
        if self.unknown is not None:
            for wid in self.worker_ids:
                self._notice("step_settled", wid, applied=None, unknown_steps=self.unknown.steps,
                             reason="a /reset came before any /step answered")
            self.unknown = None
        return results

    def step(self, actions: Mapping[str, Mapping[str, Any]]) -> dict[str, WorkerResult]:
        """``/step`` with one action message per worker; answers when all have stepped."""
        ids = [str(w) for w in actions]
        strange = sorted(set(ids) - set(self.worker_ids))
        if strange or not ids:
            raise BridgeError("BAD_STEP_REQUEST", f"/step: worker ids {strange or ids} are not "
                              f"this client's ({self.worker_ids})", where=f"{self.url}/step",
                              fix="send one action per worker id given to the client")
        if self.validate_actions:
            for wid, msg in actions.items():
                validate_action(msg, self.embodiment, where=f"step worker {wid!r}")
        body = codec.dumps({str(w): _plain(m) for w, m in actions.items()})
        try:
            payload = self._post_pickle("/step", body, self.timeouts.step, ids)
        except _LostAnswer as lost:
            if self.unknown is None:
                self.unknown = _Unknown(0, {w: self.last_timestep.get(w) for w in ids})
            self.unknown.steps += 1
            for wid in ids:
                self._notice("step_unknown", wid, route="/step", error=lost.what,
                             unknown_steps=self.unknown.steps,
                             last_known_timestep=self.unknown.known_timestep.get(wid))
            raise StepOutcomeUnknown(
                "STEP_OUTCOME_UNKNOWN", f"/step for workers {ids}: {lost.what}; the step may or "
                "may not have been applied", where=f"{self.url}/step",
                fix="do not resend it; the next /step answer's timestep settles it",
                details={"route": "/step", "worker_ids": ids, "unknown_steps": self.unknown.steps},
            ) from None
        results = self._results(payload, "/step", ids)
        if self.unknown is not None:
            self._settle(results)
        return results

    # -- internals ---------------------------------------------------------------------------
    def _notice(self, kind: str, worker_id: str, **data: Any) -> None:
        self._notices.append(BridgeNotice(kind, worker_id, dict(data)))

    def _settle(self, results: Mapping[str, WorkerResult]) -> None:
        assert self.unknown is not None
        for wid, res in results.items():
            before = self.unknown.known_timestep.get(wid)
            if res.obs is None or res.obs.reset or before is None:
                applied: int | None = None
                reason = "the episode ended or rolled over; the timestep cannot tell"
            else:
                applied = res.obs.timestep - before - 1
                reason = "from the timestep of the next observation"
                if applied < 0:
                    applied, reason = None, (f"timestep {res.obs.timestep} is below {before + 1}: "
                                             "an episode rolled over during the unknown steps")
                    self.episodes_seen[wid] = self.episodes_seen.get(wid, 0) + 1
                    self._notice("episode_rollover", wid, previous_timestep=None,
                                 episode=self.episodes_seen[wid], inferred=True)
                elif applied > self.unknown.steps:
                    applied, reason = None, f"timestep {res.obs.timestep} is inconsistent"
            self._notice("step_settled", wid, applied=applied, unknown_steps=self.unknown.steps,
                         timestep=None if res.obs is None else res.obs.timestep,
                         last_known_timestep=before, reason=reason)
        self.unknown = None

    def _error(self, route: str, ids: list[str], status: int,
               response: httpx.Response) -> BridgeError:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text[:500]
        return BridgeError("SERVER_REFUSED", f"{route} for workers {ids}: HTTP {status}: {detail}",
                           where=f"{self.url}{route}", fix="fix the request as the detail says",
                           details={"route": route, "worker_ids": ids, "status": status,
                                    "detail": detail})

    def _json(self, route: str, timeout: float) -> None:
        try:
            r = self._http.post(route, json={"data": {"worker_ids": list(self.worker_ids)}},
                                timeout=timeout)
        except httpx.HTTPError as exc:
            raise BridgeError("TRANSPORT_FAILED", f"{route} for workers {self.worker_ids}: "
                              f"{type(exc).__name__}: {exc}", where=f"{self.url}{route}",
                              fix=f"check that the GenManip server runs at {self.url}",
                              details={"route": route, "worker_ids": self.worker_ids}) from None
        if r.status_code != 200:
            raise self._error(route, self.worker_ids, r.status_code, r)

    def _post_pickle(self, route: str, body: bytes, timeout: float, ids: list[str]) -> Any:
        headers = {"content-type": codec.COMPAT_MEDIA_TYPE}
        if self.fast_path:
            headers["accept"] = f"{codec.FRAMES_MEDIA_TYPE}, {codec.COMPAT_MEDIA_TYPE};q=0.5"
        if self._shm is not None:
            headers.update(self._shm.headers(self._http, self.timeouts.health))
        try:
            with self._http.stream("POST", route, content=body, headers=headers,
                                   timeout=httpx.Timeout(timeout, connect=self.timeouts.connect)
                                   ) as r:
                if r.status_code in _UNKNOWN_STATUSES:
                    r.read()
                    raise _LostAnswer(f"HTTP {r.status_code} ({r.text[:200]})")
                declared = r.headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > self.max_response_bytes:
                    raise self._too_large(route, ids, int(declared))
                chunks, size = [], 0
                for chunk in r.iter_bytes():
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise self._too_large(route, ids, size)
                    chunks.append(chunk)
                data = b"".join(chunks)
                if r.status_code != 200:
                    r._content = data
                    raise self._error(route, ids, r.status_code, r)
                media = r.headers.get("content-type")
                shm_status = r.headers.get(STATUS_HEADER)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise BridgeError("STEP_NOT_SENT" if route == "/step" else "TRANSPORT_FAILED",
                              f"{route} for workers {ids}: could not connect ({exc}); the "
                              "request never left", where=f"{self.url}{route}",
                              fix=f"check that the GenManip server runs at {self.url}; "
                              "resending is safe", details={"route": route, "worker_ids": ids}
                              ) from None
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise _LostAnswer(f"{type(exc).__name__} after the request was sent ({exc})") from None
        self.last_media_type = media
        if self._shm is not None and self._shm.answered(media, shm_status):
            try:
                return self._shm.read(data, where=f"{route} response",
                                      max_bytes=self.max_response_bytes)
            except HttpError as exc:
                raise _LostAnswer(f"the shared-memory answer could not be read ({exc})") from None
        return codec.decode(data, media, where=f"{route} response",
                            max_bytes=self.max_response_bytes)

    def _too_large(self, route: str, ids: list[str], size: int) -> BridgeError:
        return BridgeError("RESPONSE_TOO_LARGE", f"{route} for workers {ids}: the answer is "
                           f"{size} bytes, over the limit of {self.max_response_bytes}",
                           where=f"{self.url}{route}",
                           fix="raise max_response_bytes or configure smaller cameras",
                           details={"route": route, "worker_ids": ids, "size": size})

    def _results(self, payload: Any, route: str, ids: list[str]) -> dict[str, WorkerResult]:
        if not isinstance(payload, Mapping):
            raise BridgeError("BAD_RESPONSE", f"{route}: expected {{worker_id: {{'obs', "
                              f"'metric'}}}}, got {type(payload).__name__}",
                              where=f"{self.url}{route}", fix="check the server's version")
        now = self.clock.monotonic()
        out: dict[str, WorkerResult] = {}
        for wid in ids:
            entry = payload.get(wid)
            if not isinstance(entry, Mapping) or "obs" not in entry:
                raise BridgeError("BAD_RESPONSE", f"{route}: worker {wid!r} is missing from the "
                                  f"answer (got workers {sorted(map(str, payload))})",
                                  where=f"{self.url}{route} worker {wid!r}",
                                  fix="check that the server created this worker")
            obs_raw, metric = entry.get("obs"), entry.get("metric")
            ended = entry.get("episode_ended")
            ended = ended if ended in ENDINGS else None
            obs = None if obs_raw is None else observation_from_wire(
                obs_raw, worker_id=wid, received_at=now, where=f"{route} worker {wid!r} obs")
            if obs is None:
                final = dict(metric) if isinstance(metric, Mapping) else {}
                if wid not in self.metrics:
                    self.metrics[wid] = final
                    self._notice("final_metric", wid, metric=final, route=route)
                out[wid] = WorkerResult(wid, None, final, ended=ended)
                continue
            faults = self._faults(entry.get("faults"), wid, route)
            if obs.reset:
                self.episodes_seen[wid] = self.episodes_seen.get(wid, 0) + 1
                if route == "/step":
                    self._notice("episode_rollover", wid,
                                 previous_timestep=self.last_timestep.get(wid),
                                 episode=self.episodes_seen[wid])
            self.last_timestep[wid] = obs.timestep
            out[wid] = WorkerResult(wid, obs, dict(metric) if isinstance(metric, Mapping) else None,
                                    faults, ended)
        return out

    def _faults(self, raw: Any, wid: str, route: str) -> tuple[FaultFired, ...]:
        """The faults of a worker's answer; a malformed list is left out, with a
        ``faults_unreadable`` notice holding the error (the step itself was applied)."""
        try:
            return tuple(faults_from_wire(raw, worker_id=wid,
                                          where=f"{route} worker {wid!r} faults"))
        except BridgeError as exc:
            self._notice("faults_unreadable", wid, route=route, error=exc.to_dict())
            return ()


class _LostAnswer(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
