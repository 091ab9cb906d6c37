"""The leaf that judges a command's physical result from observations (docs/architecture.md,
"Evaluation")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from py_trees.common import Status

from harness_bt.context import OutcomeKind
from harness_bt.errors import DefinitionError
from harness_bt.evaluation import EvaluationResult
from harness_bt.events import TraceKind
from harness_bt.ledger import CommandRecord, CommandState, Verdict
from harness_bt.nodes.base import HarnessNode, NodeManifest, Port
from harness_bt.skill import Postcondition, validate_params

__all__ = ["Evaluate"]



def _control_done_at(rec: CommandRecord) -> float | None:
    for h in rec.events:
        if (h.state_after is CommandState.EVALUATING
                and h.state_before is not CommandState.EVALUATING):
            return h.mono
    if rec.control_done_seen:
        return next((h.mono for h in rec.events if h.reason == "CONTROL_DONE_NOTED"), None)
    return None


class Evaluate(HarnessNode):
    """Settle the command stored under blackboard ``command`` with an evaluator's verdict.

    The evaluator sees the postconditions (the skill's own, or ``postconditions``) and the latest
    observation that arrived after the control action finished (and, when the runtime stamps
    timesteps, was taken at or after the control-done step), never the executor's report.
    The verdict and its evidence go to the ledger and to the blackboard (``output``, default
    ``<name>.verdict``).

    - **RUNNING**: the command is still executing, or no observation newer than its control-done
      has arrived yet, or the evidence was insufficient (UNKNOWN) and another observation is
      awaited (the ledger goes EVALUATING -> UNKNOWN -> RECONCILING while it re-observes).
    - **SUCCESS**: verdict SUCCEEDED (or the command was already settled SUCCEEDED).
    - **FAILURE**: verdict FAILED (outcome ``failed``, reason ``POSTCONDITION_NOT_MET``); the
      command ended without a control-done (rejected, cancelled, aborted); or the evidence stayed
      insufficient for ``max_observations`` looks or ``observation_timeout_s`` without a new
      observation (outcome ``unknown``; the command stays UNKNOWN and keeps its resources).
    """

    MANIFEST = NodeManifest(
        "evaluate", "action", "Judge a command's result from observations (three-valued).",
        (
            Port("command", "str", True, description="blackboard key holding the command id",
                 blackboard="read"),
            Port("postconditions", "list",
                 description="[{evaluator, params}] instead of the skill's own"),
            Port("max_observations", "int", default=3,
                 description="looks before UNKNOWN becomes the outcome"),
            Port("observation_timeout_s", "float", default=2.0,
                 description="longest wait for a new observation"),
            Port("output", "str", default="{name}.verdict", blackboard="write",
                 description="blackboard key for the verdict"),
        ),
        {"SUCCESS": "verdict SUCCEEDED", "FAILURE": "verdict FAILED, or UNKNOWN past the bound",
         "RUNNING": "waiting for control done or for a new observation"},
    )

    def __init__(
        self,
        name: str,
        command: str,
        *,
        postconditions: Sequence[Postcondition | Mapping[str, Any]] | None = None,
        max_observations: int = 3,
        observation_timeout_s: float = 2.0,
        output: str | None = None,
    ) -> None:
        super().__init__(name)
        if isinstance(max_observations, bool) or not isinstance(max_observations, int) \
                or max_observations < 1:
            raise DefinitionError("INVALID_NODE",
                                  f"evaluate {name!r}: max_observations={max_observations!r} "
                                  "must be an int >= 1", node_path=name)
        if not observation_timeout_s > 0:
            raise DefinitionError("INVALID_NODE",
                                  f"evaluate {name!r}: observation_timeout_s="
                                  f"{observation_timeout_s!r} must be positive", node_path=name)
        self.command_key = command
        self.postconditions = None if postconditions is None else [
            p if isinstance(p, Postcondition)
            else Postcondition(str(p["evaluator"]), dict(p.get("params") or {}))
            for p in postconditions
        ]
        self.max_observations = max_observations
        self.observation_timeout_s = float(observation_timeout_s)
        self.output = output or f"{name}.verdict"

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"command": self.command_key,
                               "max_observations": self.max_observations,
                               "observation_timeout_s": self.observation_timeout_s,
                               "output": self.output}
        if self.postconditions is not None:
            out["postconditions"] = [p.to_dict() for p in self.postconditions]
        return out

    def problems(self, context: Any) -> list[str]:
        out = []
        for p in self.postconditions or ():
            if p.evaluator not in context.evaluators:
                try:
                    context.evaluators.get(p.evaluator, where=self.path)
                except DefinitionError as exc:
                    out.append(exc.message)
        return out

    def bind(self) -> None:
        for p in self.postconditions or ():
            self.context.evaluators.get(p.evaluator, where=self.path)

    def initialise(self) -> None:
        self.looks = 0
        self._last_obs_at: float | None = None
        self._waiting_since = self.context.now

    def update(self) -> Status:
        ctx = self.context
        cid = ctx.blackboard.get(self.command_key)
        if not isinstance(cid, str) or cid not in ctx.ledger:
            return self.fail(OutcomeKind.FAILED, "NO_COMMAND", retryable=False,
                             key=self.command_key, value=cid)
        rec = ctx.ledger.get(cid)
        state = rec.state
        if state is CommandState.SUCCEEDED:
            return Status.SUCCESS
        if state is CommandState.FAILED:
            return self.fail(OutcomeKind.FAILED, rec.reason, command_id=cid)
        if state in (CommandState.REJECTED, CommandState.CANCELED):
            return self.fail(OutcomeKind.FAILED, f"NOT_EXECUTED:{state.value}:{rec.reason}",
                             command_id=cid)
        done_at = _control_done_at(rec)
        if done_at is None or state in (CommandState.ACCEPTED, CommandState.RUNNING,
                                        CommandState.CANCELING):
            if state in (CommandState.UNKNOWN, CommandState.RECONCILING):
                return self.fail(OutcomeKind.UNKNOWN, rec.reason, command_id=cid,
                                 retryable=False, why="no control-done: nothing to evaluate")
            self.feedback_message = f"waiting for {cid} to finish ({state.value})"
            self._waiting_since = ctx.now
            return Status.RUNNING
        obs_at = ctx.world.latest_observation_at
        obs = ctx.world.latest_observation
        step = ctx.control_done_step.get(cid)
        fresh = obs is not None and obs_at is not None and obs_at >= done_at and (
            self._last_obs_at is None or obs_at > self._last_obs_at) and (
            step is None or obs.timestep >= step)
        if not fresh:
            if ctx.now - self._waiting_since > self.observation_timeout_s:
                return self._give_up(rec, ("no new observation within "
                                           f"{self.observation_timeout_s} s",))
            self.feedback_message = "waiting for an observation"
            return Status.RUNNING
        assert obs is not None and obs_at is not None
        self._last_obs_at = obs_at
        self._waiting_since = ctx.now
        self.looks += 1
        result = ctx.evaluators.evaluate(self._postconditions(rec), obs, ctx.world.view(ctx.now))
        final = result.verdict is not Verdict.UNKNOWN or self.looks >= self.max_observations
        self._settle(rec, result)
        ctx.emit(TraceKind.VERDICT, phase=self.scope.phase, node_path=self.path, command_id=cid,
                 verdict=result.verdict.value, evidence=list(result.evidence), look=self.looks,
                 final=final, timestep=obs.timestep)
        ctx.blackboard.set(self.output, {"command_id": cid, "verdict": result.verdict.value,
                                         "evidence": list(result.evidence)}, writer=self.path)
        if result.verdict is Verdict.UNKNOWN:
            ctx.count("unknown_verdicts")
            if self.looks >= self.max_observations:
                return self.fail(OutcomeKind.UNKNOWN, "EVIDENCE_INSUFFICIENT", command_id=cid,
                                 retryable=False, looks=self.looks,
                                 evidence=list(result.evidence))
            ctx.ledger.reconcile(cid, now=ctx.now, note="re-observing")
            self.feedback_message = f"UNKNOWN after {self.looks} look(s); observing again"
            return Status.RUNNING
        if result.verdict is Verdict.SUCCEEDED:
            return Status.SUCCESS
        return self.fail(OutcomeKind.FAILED, "POSTCONDITION_NOT_MET", command_id=cid,
                         evidence=list(result.evidence))

    def _settle(self, rec: CommandRecord, result: EvaluationResult) -> None:
        ctx = self.context
        if rec.state is CommandState.UNKNOWN:
            if result.verdict is Verdict.UNKNOWN:
                return
            ctx.ledger.reconcile(rec.command_id, now=ctx.now, note="evaluated again")
        ctx.ledger.verdict(rec.command_id, result.verdict, evidence=result.evidence, now=ctx.now)

    def _give_up(self, rec: CommandRecord, evidence: tuple[str, ...]) -> Status:
        ctx = self.context
        self._settle(rec, EvaluationResult.unknown(*evidence))
        ctx.count("unknown_verdicts")
        ctx.emit(TraceKind.VERDICT, phase=self.scope.phase, node_path=self.path,
                 command_id=rec.command_id, verdict="UNKNOWN", evidence=list(evidence),
                 look=self.looks, final=True, timestep=None)
        return self.fail(OutcomeKind.UNKNOWN, "NO_OBSERVATION", command_id=rec.command_id,
                         retryable=False, evidence=list(evidence))

    def _postconditions(self, rec: CommandRecord) -> list[Postcondition]:
        if self.postconditions is not None:
            return self.postconditions
        skill = self.context.skills.get(rec.command.skill, where=self.path)
        model, problems = validate_params(skill, rec.command.params)
        if model is None:
            raise DefinitionError(
                "INVALID_PARAMS",
                f"command {rec.command_id} params no longer fit skill {skill.name!r}: "
                + "; ".join(str(p) for p in problems), node_path=self.path,
            )
        return skill.postconditions(model)
