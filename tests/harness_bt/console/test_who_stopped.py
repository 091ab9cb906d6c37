"""Who stopped a run, said truthfully: a stop asked for from the console is traced on the
``stop`` event with who asked (source, control, client, peer), carried into the run's
explanation (the JSON's ``why``) and summarised as "stopped from the console"; the runner's
own stops (a tick limit here) stay as they were, with no ``by``."""

from __future__ import annotations

import json

from harness_bt import FakeClock, TaskRunner
from harness_bt.cli.summary import why_text
from harness_bt.events import StopEvent, parse_event
from harness_bt.run.loop import max_ticks, tick_until_finished
from harness_bt.run.why import why_not_done
from harness_bt.testing import example
from harness_bt.testing.fake_runtime import Script
from tests.harness_bt.console.conftest import LiveRun, until
from tests.harness_bt.console.test_protocol import hello_and_first_state


def stops(runner: TaskRunner) -> list[StopEvent]:
    return [e for e in map(parse_event, runner.trace.events) if isinstance(e, StopEvent)]


def test_a_stop_from_the_console_is_traced_explained_and_summarised_as_from_the_console(
        live: LiveRun) -> None:
    ws = live.ws(header=["User-Agent: who-stopped-test"])
    try:
        hello_and_first_state(live, ws)
        live.control(ws, "stop", id=1)
        alert = until(ws, lambda m: m["type"] == "alert" and m.get("kind") == "stop")
        until(ws, lambda m: m["type"] == "alert" and m.get("kind") == "run_end")
    finally:
        ws.close()
    live.thread.join(30)
    (stop,) = stops(live.runner)
    assert stop.reason == "aborted_stopped"
    assert stop.by["source"] == "console" and stop.by["control"] == "stop"
    assert stop.by["client"] == "c1" and stop.by["agent"] == "who-stopped-test"
    assert stop.by["peer"].startswith("127.0.0.1:")
    assert alert["by"] == stop.by  # the console's own log reads the same record
    why = why_not_done(live.runner.trace.events, "aborted_stopped")
    assert why is not None and why["stopped"] == "aborted_stopped" and why["by"] == stop.by
    assert json.loads(json.dumps(why))["by"]["source"] == "console"  # as the JSON carries it
    text = why_text(why)
    assert text.startswith(": stopped from the console (stop by client c1, peer 127.0.0.1:")
    assert "runner" not in text


def test_the_runners_own_stop_has_no_asker_and_is_summarised_as_before() -> None:
    clock = FakeClock()
    runtime = example.example_runtime(clock, grasps=[Script(outcome="hang")])
    runner = TaskRunner(example.fetch_cup_task(), bridge=runtime, clock=clock,
                        skills=example.example_skills(), run_id="own")
    try:
        def sleep() -> None:
            clock.advance(runner.tick_period_s)

        tick_until_finished(runner, sleep=sleep, stops=(max_ticks(5),))
        assert runner.result is not None and runner.result.reason == "max_ticks"
        (stop,) = stops(runner)
        assert stop.by == {} and stop.reason == "max_ticks"
        why = why_not_done(runner.trace.events, "max_ticks")
        assert why is not None and "by" not in why
        assert why_text(why) == ": the run's tick limit"
    finally:
        runner.close()
