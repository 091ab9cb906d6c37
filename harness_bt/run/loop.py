"""The run's phase and the one tick loop every driver uses (:meth:`TaskRunner.run`, the
episodes of :func:`harness_bt.run.episodes.run_episodes`, and so the live console that watches
them).

A run is ``idle`` until its first tick, ``running`` while its chart is active, ``draining``
once the chart ended or the run was stopped (open commands are cancelled and confirmed), and
``finished`` when its result is known. The loop ticks until the run is finished; after each
tick of a running run it asks the stop rules in order, and the first that answers stops the run
with that outcome and reason (``max_ticks``, a timeout, a runtime that ended the episode)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Protocol

__all__ = ["ChartListener", "RunPhase", "StopRule", "Tickable", "max_ticks", "tick_until_finished",
           "timeout"]


class RunPhase(StrEnum):
    """Where a run is in its life (see the module docstring)."""

    IDLE = "idle"
    RUNNING = "running"
    DRAINING = "draining"
    FINISHED = "finished"

    @property
    def live(self) -> bool:
        """The run still takes requests (pause, step, stop): idle or running."""
        return self in (RunPhase.IDLE, RunPhase.RUNNING)


class Tickable(Protocol):
    """What the loop drives: a :class:`~harness_bt.run.runner.TaskRunner`."""

    phase: RunPhase
    ticks: int
    result: Any

    def tick(self) -> None: ...

    def stop(self, outcome: str = ..., reason: str = ...) -> None: ...


#: A stop rule: asked after each tick of a running run; ``(outcome, reason)`` stops it.
StopRule = Callable[[Any], "tuple[str, str] | None"]


def max_ticks(limit: int | None) -> StopRule:
    """Stop with ``max_ticks`` once the run has ticked ``limit`` times (None: never)."""
    def rule(runner: Tickable) -> tuple[str, str] | None:
        return ("max_ticks", "max_ticks") if limit is not None and runner.ticks >= limit \
            else None
    return rule


def timeout(clock: Any, limit_s: float | None) -> StopRule:
    """Stop with ``timeout`` once ``limit_s`` seconds of ``clock`` have passed since now
    (None: never)."""
    start = clock.monotonic()

    def rule(runner: Tickable) -> tuple[str, str] | None:
        late = limit_s is not None and clock.monotonic() - start >= limit_s
        return ("timeout", "timeout") if late else None
    return rule


class ChartListener:
    """A chart's listener (python-statemachine calls these by convention), handed the
    callbacks it forwards to: a state entered, a state exited, a transition taken."""

    def __init__(self, enter: Callable[[str], None], exit: Callable[[str], None],
                 transitioned: Callable[[str, Any, Any], None]) -> None:
        self._enter, self._exit, self._transitioned = enter, exit, transitioned

    def on_enter_state(self, state: Any, **_: Any) -> None:
        self._enter(state.id)

    def on_exit_state(self, state: Any, **_: Any) -> None:
        self._exit(state.id)

    def after_transition(self, event: Any, source: Any, target: Any, **_: Any) -> None:
        self._transitioned(str(event), source, target)


def tick_until_finished(runner: Tickable, *, sleep: Callable[[], None],
                        stops: Sequence[StopRule] = (),
                        after_tick: Callable[[], None] | None = None,
                        rest_after_end: bool = False) -> Any:
    """Tick ``runner`` until it is finished and return its result. After each tick: the stop
    rules (while running), then ``after_tick``, then ``sleep`` for one period. The period after
    the last tick is slept only with ``rest_after_end`` (an episode lets its simulator run one
    more control period before it is judged)."""
    while True:
        runner.tick()
        if runner.phase is RunPhase.RUNNING:
            for rule in stops:
                stop = rule(runner)
                if stop is not None:
                    runner.stop(*stop)
                    break
        if after_tick is not None:
            after_tick()
        if runner.phase is RunPhase.FINISHED and not rest_after_end:
            break
        sleep()
        if runner.phase is RunPhase.FINISHED:
            break
    assert runner.result is not None
    return runner.result
