"""The ``run_policy`` executor: a learned policy, served over openpi's WebSocket protocol,
driving the arm one control step at a time like any other command.

Each time the rows in hand run out, the executor sends the policy the newest observation
(mapped by the skill's :class:`~harness_bt.policy.embodiment.Embodiment`) and keeps the first
``execute_steps`` rows of the checked reply; each control step runs one row. It ends:

- CONTROL_DONE when the policy's rows marked ``done`` have run, ``max_steps`` rows have run
  (the step budget), or, with ``until: lifted``, the condition holds between two chunks as
  this package's perception sees it in the observation (the object ``min_rise_m`` above
  where it was, between the fingers); the task's evaluation then judges the result from the
  harness's own observations;
- ABORTED, the arm held, with the policy's error code as the reason (``POLICY_SILENT``,
  ``POLICY_ACTION``, ``POLICY_PROTOCOL`` ...) when the server is unreachable, silent, fails,
  or sends something that is not a valid chunk: nothing of a refused reply moves the arm; and
  ``POLICY_STALLED`` when ``stall_steps`` rows have moved the hand less than 5 mm without
  changing the gripper (a policy dithering in place, or an arm blocked);
- STOPPED after a stop request, once the hand holds still.

``lockstep`` (the default, for simulators): the step that needs a chunk waits for it, so the
simulation does not advance while the policy thinks. Otherwise (a robot) the request runs in a
thread of its own while the steps hold the arm, and a stop closes the connection at once.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np
from pydantic import ValidationError

from harness_bt.errors import BridgeError, CommandError
from harness_bt.ledger import Command
from harness_bt.policy.client import PolicyClient
from harness_bt.policy.embodiment import EMBODIMENTS, Chunk, Embodiment
from harness_bt.runtime.executor import ExecutorStatus, ExecutorStep
from harness_bt.runtime.observation import Observation
from harness_bt.world import Relation
from skills.executors.base import StopWatch
from skills.params import RunPolicyParams
from skills.perception import colour_perception

__all__ = ["RunPolicyExecutor"]

_STALL_M = 0.005


class RunPolicyExecutor:
    """See the module docstring. ``client_factory`` builds the policy client (tests)."""

    skill = "run_policy"

    def __init__(self, command: Command, *, client_factory: Any = None) -> None:
        self.command = command
        try:
            self.params = RunPolicyParams.model_validate(command.params)
        except ValidationError as exc:
            raise CommandError(
                "INVALID_PARAMS", f"skill 'run_policy': the runtime cannot execute these "
                f"params: {exc.errors(include_url=False)}", command_id=command.command_id,
                fix="send params that fit RunPolicyParams") from None
        embodiment = EMBODIMENTS.get(self.params.embodiment)
        if embodiment is None:
            raise CommandError("INVALID_PARAMS", f"this runtime knows no embodiment "
                               f"{self.params.embodiment!r}", command_id=command.command_id,
                               fix=f"use one of: {', '.join(EMBODIMENTS)}")
        self.embodiment: Embodiment = embodiment
        self.execute_steps = self.params.execute_steps or embodiment.execute_steps
        self.client = (client_factory or PolicyClient)(self.params.policy_url,
                                     connect_timeout_s=self.params.connect_timeout_s,
                                     reply_timeout_s=self.params.reply_timeout_s)
        self.rows: deque[np.ndarray] = deque()
        self.done = False
        self.executed = 0
        self.requests = 0
        self.waited_steps = 0
        self._stop = False
        self._stop_watch = StopWatch()
        self._thread: threading.Thread | None = None
        self._reply: dict[str, Any] | None = None
        self._error: BridgeError | None = None
        self._perception: Any = None
        self._anchor: tuple[np.ndarray, bool] | None = None  # hand position, gripper closed
        self._stalled = 0

    # ------------------------------------------------------------------ Executor protocol

    @property
    def reads_frames(self) -> bool:
        """Whether the next :meth:`step` reads the frames of the observation it is given: only
        the step that asks the policy for a chunk (and checks ``until`` first) does; the steps
        that run the rows in hand read the hand's pose alone. A simulator rendering on demand
        renders for those steps only (:mod:`runtime_bridge.inproc.frames`)."""
        return (not self._stop and not self.done and not self.rows
                and self._thread is None)

    @property
    def reads_next_frame(self) -> bool:
        """Whether the step after the next one reads frames: the next step runs the last row
        in hand, so the one after asks for a chunk (the frame is then rendered with the
        step's observation instead of after it)."""
        return not self._stop and not self.done and len(self.rows) == 1 and self._thread is None

    def request_stop(self) -> None:
        self._stop = True
        self.rows.clear()
        self.client.shutdown()
        self._close()

    def step(self, observation: Observation) -> ExecutorStep:
        if self._stop:
            return self._stopping(observation)
        try:
            if not self.rows:
                if self.done:
                    return self._end(ExecutorStatus.CONTROL_DONE,
                                     f"the policy signalled done after {self.executed} steps")
                met = self._until_met(observation) if self._thread is None else None
                if met:
                    return self._end(ExecutorStatus.CONTROL_DONE, met)
                chunk = self._next_chunk(observation)
                if chunk is None:  # waiting for the reply: the arm holds
                    self.waited_steps += 1
                    return ExecutorStep(ExecutorStatus.RUNNING, None, self._left())
                self.done = chunk.done
                self.rows.extend(chunk.rows[: self.params.max_steps - self.executed])
                if not self.rows:
                    return self._end(ExecutorStatus.CONTROL_DONE,
                                     f"the policy signalled done after {self.executed} steps")
        except BridgeError as exc:
            return self._end(ExecutorStatus.ABORTED, f"{exc.code}: {exc.message}")
        row = self.rows.popleft()
        stall = self._stall(observation, row)
        if stall:
            return self._end(ExecutorStatus.ABORTED, stall)
        self.executed += 1
        if self.executed >= self.params.max_steps and not self.rows and not self.done:
            self._close()
            return ExecutorStep(ExecutorStatus.CONTROL_DONE, self.embodiment.action_part(row),
                                0.0, f"the step budget of {self.params.max_steps} steps is "
                                "spent")
        return ExecutorStep(ExecutorStatus.RUNNING, self.embodiment.action_part(row),
                            self._left())

    # ------------------------------------------------------------------ the policy

    @property
    def prompt(self) -> str:
        """The instruction, ``<object>`` in it standing for the object's name in words."""
        p = self.params
        if p.object_id is None:
            return p.instruction
        return p.instruction.replace("<object>", p.object_id.replace("_", " "))

    def _request(self, observation: Observation) -> dict[str, Any]:
        self.requests += 1
        return self.embodiment.request(observation, self.prompt, self.command.command_id)

    def _next_chunk(self, observation: Observation) -> Chunk | None:
        if self.params.lockstep:
            if not self.client.connected:
                self.client.connect()
            return self.embodiment.chunk(self.client.infer(self._request(observation)),
                                         self.execute_steps)
        if self._thread is None:
            request = self._request(observation)
            self._reply, self._error = None, None
            self._thread = threading.Thread(target=self._ask, args=(request,), daemon=True,
                                            name=f"policy {self.command.command_id}")
            self._thread.start()
            return None
        if self._thread.is_alive():
            return None
        self._thread = None
        if self._error is not None:
            raise self._error
        assert self._reply is not None
        return self.embodiment.chunk(self._reply, self.execute_steps)

    def _ask(self, request: dict[str, Any]) -> None:
        try:
            if not self.client.connected:
                self.client.connect()
            self._reply = self.client.infer(request)
        except BridgeError as exc:
            self._error = exc
        except Exception as exc:  # never lost in a thread: ends the command
            self._error = BridgeError("POLICY_PROTOCOL", f"the policy request failed: "
                                      f"{type(exc).__name__}: {exc}")

    def _until_met(self, observation: Observation) -> str | None:
        """Between two chunks: why the ``until`` condition holds, or None."""
        p = self.params
        if p.until != "lifted" or p.object_id is None or p.object_pose is None \
                or not self.executed:
            return None
        if self._perception is None:
            self._perception = colour_perception()
        for update in self._perception(observation):
            if update.object_id != p.object_id or update.pose is None:
                continue
            rise = update.pose.position[2] - p.object_pose[2]
            if rise >= p.min_rise_m and update.relations.get(Relation.HELD_BY) is not None:
                return (f"until lifted: {p.object_id} is {rise:.3f} m above where it was and "
                        f"between the fingers, after {self.executed} steps")
        return None

    def _stall(self, observation: Observation, row: np.ndarray) -> str | None:
        """Counts rows while the hand stays within 5 mm of where it was when it last moved
        or the gripper last changed; the reason once ``stall_steps`` of them have run."""
        if not self.params.stall_steps:
            return None
        here = np.asarray(observation.ee_pose.position, dtype=float)
        closed = bool(row[-1] >= 0.5)
        if self._anchor is None or closed != self._anchor[1] or \
                float(np.linalg.norm(here - self._anchor[0])) > _STALL_M:
            self._anchor, self._stalled = (here, closed), 0
            return None
        self._stalled += 1
        if self._stalled < self.params.stall_steps:
            return None
        return (f"POLICY_STALLED: the hand moved less than {_STALL_M * 1000:.0f} mm, its "
                f"gripper unchanged, over the policy's last {self._stalled} steps (at "
                f"{np.round(here, 3).tolist()})")

    def _left(self) -> float:
        return float(self.params.max_steps - self.executed)

    def _close(self) -> None:
        self.client.close()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=self.params.reply_timeout_s + 1.0)

    def _end(self, status: ExecutorStatus, reason: str) -> ExecutorStep:
        self._close()
        return ExecutorStep(status, None, self._left(), reason)

    def _stopping(self, observation: Observation) -> ExecutorStep:
        """Hold (send nothing: the runtime holds the last command) until the hand stands
        still (:class:`~skills.executors.base.StopWatch`)."""
        return self._stop_watch.step(observation)
