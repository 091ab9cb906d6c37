"""The leaf that runs a skill: plan a command, submit it through the ledger, dispatch it to the
runtime, and map the ledger state to a status. The work runs in the runtime's executor."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from py_trees.common import Status

from harness_bt.context import OutcomeKind
from harness_bt.errors import DefinitionError, reason_code
from harness_bt.events import TraceKind
from harness_bt.ledger import Command, CommandEvent, CommandRecord, CommandState, LedgerError
from harness_bt.nodes.base import HarnessNode, NodeManifest, Port
from harness_bt.nodes.poses import DerivedPose
from harness_bt.skill import SkillContract, validate_params
from harness_bt.world import WorldSnapshot

__all__ = ["SkillAction"]

_RETRYABLE_SUBMIT = {"STALE_WORLD", "EXPIRED_COMMAND", "STALE_EPOCH"}


def _never_ran_before_restart(rec: CommandRecord) -> bool:
    return (rec.state is CommandState.CANCELED and rec.started_at is None
            and not rec.control_done_seen and rec.restarted)


class SkillAction(HarnessNode):
    """Run one skill as a ledger-tracked command.

    - **RUNNING**: the command is being planned, waits for its resources (held by another
      command, UNKNOWN ones included), is ACCEPTED or RUNNING in the runtime, or a harness
      restart left it open and it is being reconciled (followed while the runtime still runs
      it; at most the skill's execution timeout).
    - **SUCCESS**: the control action finished (ledger EVALUATING: *not* a verdict; an
      :class:`~harness_bt.nodes.Evaluate` leaf settles it; or UNKNOWN after a control-done,
      e.g. after a restart) or the command is already settled SUCCEEDED (a resend after a
      restart found it done: a step whose id is already in the ledger is never sent again).
    - **FAILURE**: invalid params or a broken physical contract, refused by the ledger (stale
      world, stale premises: nothing ran), aborted or stopped by the runtime, no progress for
      the skill's ``progress_timeout_ms`` (cancelled, reason ``NO_PROGRESS``), the skill's
      breaker open, or the command ended UNKNOWN (outcome ``unknown``).

    The command id is ``<run>/<phase>.<activation>/<node path>#<attempt>``: deterministic, so a
    restarted run that re-submits the same step is deduplicated by the ledger (a step whose
    command a restart left open and the runtime never started is issued again under the next
    attempt number). Params come from
    ``params`` (literals), ``inputs`` (param -> blackboard key) and ``objects`` (param -> object
    id: the param gets the object's pose, and the object's version becomes a premise); an input
    holding a :class:`~harness_bt.nodes.poses.DerivedPose` gives its pose and adds the premises
    it rests on (:mod:`harness_bt.nodes.poses`). With
    ``snapshot`` (a blackboard key written by Observe / Check ``record=``) the poses and versions
    come from that snapshot, i.e. from the plan, and the ledger rejects the command at dispatch
    if an object changed since. The command id is written to the blackboard under ``output``
    (default: the node's name).

    Halted while RUNNING (phase exited, higher-priority branch): the command is cancelled through
    the ledger and the runtime is told to stop; the resource stays held until the stop is
    confirmed or the command is reconciled. ``handover=True`` keeps an EVALUATING command open
    after its phase exits, for a later phase's Evaluate; otherwise the phase's exit closes it.
    """

    MANIFEST = NodeManifest(
        "skill_action", "action", "Run a skill as a ledger-tracked command.",
        (
            Port("skill", "str", True, description="skill name (skill registry)"),
            Port("params", "dict", description="literal params"),
            Port("inputs", "dict", description="param -> blackboard key",
                 blackboard="read_values"),
            Port("objects", "dict", description="param -> object id (pose + premise)"),
            Port("premises", "list", description="more object ids the plan relies on"),
            Port("snapshot", "str", description="blackboard key of the plan's world snapshot",
                 blackboard="read"),
            Port("output", "str", default="{name}", blackboard="write",
                 description="blackboard key for the command id (default: the node's name)"),
            Port("handover", "bool", default=False,
                 description="keep an EVALUATING command open after the phase exits"),
            Port("no_progress_s", "float",
                 description="override the skill's progress timeout (seconds)"),
        ),
        {"SUCCESS": "control action finished (EVALUATING) or settled SUCCEEDED",
         "FAILURE": "refused, rejected, aborted, stopped, no progress, or UNKNOWN",
         "RUNNING": "planning, waiting for resources, or executing"},
    )

    def __init__(
        self,
        name: str,
        skill: str,
        *,
        params: Mapping[str, Any] | None = None,
        inputs: Mapping[str, str] | None = None,
        objects: Mapping[str, str] | None = None,
        premises: Sequence[str] = (),
        snapshot: str | None = None,
        output: str | None = None,
        handover: bool = False,
        no_progress_s: float | None = None,
    ) -> None:
        super().__init__(name)
        if not isinstance(skill, str) or not skill.strip():
            raise DefinitionError("INVALID_NODE", f"skill_action {name!r}: skill must be a name",
                                  node_path=name)
        self.skill_name = skill
        self.literal_params = dict(params or {})
        self.inputs = dict(inputs or {})
        self.objects = dict(objects or {})
        self.extra_premises = tuple(premises)
        self.snapshot_key = snapshot
        self.output = output or name
        self.handover = bool(handover)
        self.no_progress_s = no_progress_s
        clash = set(self.literal_params) & (set(self.inputs) | set(self.objects))
        if clash or set(self.inputs) & set(self.objects):
            raise DefinitionError(
                "INVALID_NODE",
                f"skill_action {name!r}: params given twice: "
                f"{sorted(clash or set(self.inputs) & set(self.objects))}",
                node_path=name, fix="give each param once: literal, input or object",
            )
        self.skill: SkillContract | None = None
        self.command: Command | None = None
        self.command_id: str | None = None
        self._acked = False
        self._plan_obs_at: float | None = None
        self._waiting_since: float | None = None

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"skill": self.skill_name}
        for key, value in (("params", self.literal_params), ("inputs", self.inputs),
                           ("objects", self.objects), ("premises", list(self.extra_premises)),
                           ("snapshot", self.snapshot_key), ("handover", self.handover),
                           ("no_progress_s", self.no_progress_s)):
            if value:
                out[key] = value
        out["output"] = self.output
        return out

    def problems(self, context: Any) -> list[str]:
        if self.skill_name not in context.skills:
            try:
                context.skills.get(self.skill_name, where=self.path)
            except DefinitionError as exc:
                return [exc.message]
        return []

    def bind(self) -> None:
        self.skill = self.context.skills.get(self.skill_name, where=self.path)

    # ------------------------------------------------------------------ lifecycle

    def initialise(self) -> None:
        self.command = None
        self.command_id = None
        self._acked = False
        self._plan_obs_at = None
        self._waiting_since = None
        self.attempt = self.scope.next_attempt(self.path)

    def update(self) -> Status:
        ctx = self.context
        if self.command_id is None:
            status = self._plan_and_submit()
            if status is not None:
                return status
        assert self.command_id is not None
        rec = ctx.ledger.get(self.command_id)
        if rec.state is CommandState.ACCEPTED and rec.dispatched_at is None:
            rec = ctx.ledger.dispatch(self.command_id, now=ctx.now)
            if rec.state is CommandState.ACCEPTED:
                self._send(rec)
        elif rec.state is CommandState.ACCEPTED and not self._acked:
            self._send(rec)  # resend after a transport failure (the runtime dedups by id)
        return self._map(ctx.ledger.get(self.command_id))

    def terminate(self, new_status: Status) -> None:
        if new_status is Status.INVALID and self.status is Status.RUNNING and self.command_id:
            rec = self.context.ledger.find(self.command_id)
            if rec is not None and rec.state in (CommandState.ACCEPTED, CommandState.RUNNING):
                self.context.cancel(self.command_id, why="HALTED",
                                    stop_timeout_s=self._stop_timeout())

    # ------------------------------------------------------------------ planning

    def _stop_timeout(self) -> float:
        assert self.skill is not None
        return self.skill.lifecycle.stop_timeout_ms / 1000.0

    def _plan_and_submit(self) -> Status | None:
        ctx = self.context
        skill = self.skill
        assert skill is not None
        breaker = ctx.breakers.get(f"skill:{skill.name}")
        if self.command is None:
            if not breaker.allow(ctx.now):
                return self.fail(OutcomeKind.FAILED, f"CIRCUIT_OPEN:skill:{skill.name}",
                                 retry_at=breaker.retry_at())
            fresh = skill.lifecycle.needs_fresh_observation_ms
            if fresh is not None:
                seen = ctx.world.latest_observation_at
                if seen is None or (ctx.now - seen) * 1000.0 > fresh:
                    if self._waiting_since is None:
                        self._waiting_since = ctx.now
                    if (ctx.now - self._waiting_since) * 1000.0 > skill.lifecycle.start_within_ms:
                        return self.fail(OutcomeKind.FAILED, "STALE_OBSERVATION",
                                         needs_ms=fresh)
                    self.feedback_message = "waiting for a fresh observation"
                    return Status.RUNNING
            planned = self._plan(skill)
            if isinstance(planned, Status):
                return planned
            self.command = planned
            self._waiting_since = None
        try:
            ctx.ledger.submit(self.command, now=ctx.now)
        except LedgerError as exc:
            if exc.code == "COMMAND_ID_CONFLICT":
                # This step was issued before (a restarted run re-planning in a world that has
                # moved on): the id names the step, so its existing record stands.
                ctx.emit(TraceKind.ADOPTED, phase=self.scope.phase, node_path=self.path,
                         command_id=self.command.command_id, message=exc.message)
            elif exc.code == "RESOURCE_BUSY":
                if self._waiting_since is None:
                    self._waiting_since = ctx.now
                    ctx.emit(TraceKind.WAITING, phase=self.scope.phase, node_path=self.path,
                             command_id=self.command.command_id, details=exc.details)
                self.feedback_message = f"waiting: {exc.message}"
                return Status.RUNNING
            else:
                return self.fail(OutcomeKind.FAILED, exc.code,
                                 retryable=exc.code in _RETRYABLE_SUBMIT,
                                 command_id=self.command.command_id, message=exc.message)
        existing = ctx.ledger.find(self.command.command_id)
        if existing is not None and _never_ran_before_restart(existing):
            # This step's command was left open by a harness restart and the runtime never
            # started it (settled CANCELED by reconciliation): issue the step again, next id.
            ctx.emit(TraceKind.REISSUE, phase=self.scope.phase, node_path=self.path,
                     command_id=existing.command_id, reason=existing.reason)
            self.attempt = self.scope.next_attempt(self.path)
            self.command = None
            return Status.RUNNING
        self.command_id = self.command.command_id
        self._waiting_since = None
        ctx.blackboard.set(self.output, self.command_id, writer=self.path)
        self.scope.commands.append(self.command_id)
        if self.handover:
            self.scope.handover.add(self.command_id)
        ctx.command_phase[self.command_id] = self.scope.phase
        ctx.command_node[self.command_id] = self.path
        return None

    def _plan(self, skill: SkillContract) -> Command | Status:
        ctx = self.context
        raw: dict[str, Any] = dict(self.literal_params)
        for param, key in self.inputs.items():
            if key not in ctx.blackboard:
                return self.fail(OutcomeKind.FAILED, "MISSING_INPUT", retryable=False,
                                 param=param, key=key)
            raw[param] = ctx.blackboard[key]
        premises: dict[str, int] = {}
        for param, value in list(raw.items()):
            if isinstance(value, DerivedPose):  # a pose made by derive_pose: its own premises
                raw[param] = value.to_list()
                premises.update(value.premises)
        snapshot: WorldSnapshot | None = None
        if self.snapshot_key is not None:
            snapshot = ctx.blackboard.get(self.snapshot_key)
            if not isinstance(snapshot, WorldSnapshot):
                return self.fail(OutcomeKind.FAILED, "MISSING_SNAPSHOT", retryable=True,
                                 key=self.snapshot_key)
        for param, oid in self.objects.items():
            obj = snapshot.objects.get(oid) if snapshot is not None else ctx.world.get(oid)
            if obj is None:
                return self.fail(OutcomeKind.FAILED, "UNKNOWN_OBJECT", retryable=True,
                                 object_id=oid, param=param)
            raw[param] = obj.pose.to_list()
            premises[oid] = obj.version
        for oid in self.extra_premises:
            obj = snapshot.objects.get(oid) if snapshot is not None else ctx.world.get(oid)
            premises[oid] = -1 if obj is None else obj.version
        model, problems = validate_params(skill, raw)
        if model is None:
            return self.fail(OutcomeKind.FAILED, "INVALID_PARAMS", retryable=False,
                             problems=[p.to_dict() for p in problems])
        problems = skill.check(model, ctx.world.view(ctx.now))
        if problems:
            return self.fail(OutcomeKind.FAILED, "CONTRACT_VIOLATION",
                             problems=[p.to_dict() for p in problems])
        lc = skill.lifecycle
        params = json.loads(model.model_dump_json())
        self._plan_obs_at = ctx.world.latest_observation_at
        return Command(
            command_id=self.scope.command_id(self.path, self.attempt),
            task_id=ctx.task_id,
            robot_id=ctx.robot_id,
            skill=skill.name,
            params=params,
            resources=tuple(skill.resources),
            world_version=snapshot.version if snapshot is not None else ctx.world.version,
            plan_version=ctx.plan_version,
            start_within_ms=lc.start_within_ms,
            execution_timeout_ms=lc.execution_timeout_ms,
            epoch=ctx.ledger.epoch,
            premises=premises,
        )

    # ------------------------------------------------------------------ execution

    def _send(self, rec: CommandRecord) -> None:
        ctx = self.context
        ack = ctx.send(rec.command_id)
        if ack is None:
            return  # transport failed: resent next tick, or expired by the ledger
        self._acked = True
        if not ack.accepted:
            ctx.ledger.apply(CommandEvent(rec.command_id, 0, "rejected", reason=ack.reason),
                             now=ctx.now)
            return
        if self._plan_obs_at is not None and not ack.duplicate:
            ctx.latency("decision", ctx.now - self._plan_obs_at, command_id=rec.command_id,
                        observation_at=self._plan_obs_at, dispatched_at=ctx.now)

    def _map(self, rec: CommandRecord) -> Status:
        ctx = self.context
        skill = self.skill
        assert skill is not None
        breaker = ctx.breakers.get(f"skill:{skill.name}")
        state = rec.state
        cid = rec.command_id
        if state in (CommandState.ACCEPTED, CommandState.RUNNING):
            limit = self.no_progress_s
            if limit is None and skill.lifecycle.progress_timeout_ms is not None:
                limit = skill.lifecycle.progress_timeout_ms / 1000.0
            last = rec.last_progress_at if rec.last_progress_at is not None else rec.dispatched_at
            if limit is not None and last is not None and ctx.now - last > limit:
                ctx.cancel(cid, why="NO_PROGRESS", stop_timeout_s=self._stop_timeout())
                breaker.record(False, ctx.now)
                return self.fail(OutcomeKind.FAILED, "NO_PROGRESS", command_id=cid,
                                 retryable=skill.lifecycle.retry_safe,
                                 silent_s=ctx.now - last, limit_s=limit)
            self.feedback_message = f"{state.value} {cid}"
            return Status.RUNNING
        if state in (CommandState.EVALUATING, CommandState.SUCCEEDED):
            breaker.record(True, ctx.now)
            self.feedback_message = f"{state.value} {cid}"
            return Status.SUCCESS
        if state is CommandState.REJECTED:
            retry = reason_code(rec.reason) in ("STALE_PREMISE", "STALE_WORLD", "EXPIRED_COMMAND",
                                                "RUNTIME_REJECTED")
            if rec.reason == "STALE_PREMISE":
                ctx.count("replans")
            return self.fail(OutcomeKind.FAILED, f"REJECTED:{rec.reason}", command_id=cid,
                             retryable=retry, detail=rec.events[-1].detail if rec.events else "")
        if state in (CommandState.UNKNOWN, CommandState.RECONCILING) and (
                rec.control_done_seen or rec.prior_state is CommandState.EVALUATING):
            self.feedback_message = f"{state.value} after control done: to be evaluated"
            return Status.SUCCESS
        if state is CommandState.RECONCILING or (state is CommandState.UNKNOWN and rec.restarted):
            # A restart left it open: the reconciler queries the runtime (and follows it while
            # it runs); its events settle it. Bounded by the skill's execution timeout.
            if self._waiting_since is None:
                self._waiting_since = ctx.now
            if (ctx.now - self._waiting_since) * 1000.0 <= skill.lifecycle.execution_timeout_ms:
                self.feedback_message = f"{state.value}: reconciling {cid} with the runtime"
                return Status.RUNNING
        if state in (CommandState.UNKNOWN, CommandState.RECONCILING):
            return self.fail(OutcomeKind.UNKNOWN, rec.reason, command_id=cid, retryable=False)
        breaker.record(False, ctx.now)
        return self.fail(OutcomeKind.FAILED, rec.reason or state.value, command_id=cid,
                         retryable=skill.lifecycle.retry_safe, state=state.value)
