"""Trace events as typed records (harness_bt.events): every kind the code emits has a record
type, every event of a real run reads into its record and back into the very dict (and JSON
line) the trace holds, a kind from a newer writer is kept, a malformed field is refused with
the event's seq and kind."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness_bt.errors import DefinitionError
from harness_bt.events import (
    RECORDS,
    BudgetEvent,
    CommandEvent,
    Event,
    OtherEvent,
    OutcomeInfo,
    TraceKind,
    VerdictEvent,
    parse_event,
)
from harness_bt.events.base import field_of, text
from harness_bt.testing.example import SCENARIOS, run_example
from harness_bt.trace import TraceReader
from harness_bt.viz.frames import fold, summarize

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness_bt", "skills", "runtime_bridge", "policies")
#: Functions that hand a kind on to the trace (their ``emit`` call names no kind itself).
FORWARDERS = {("harness_bt/context.py", "emit"), ("harness_bt/run/runner.py", "note")}
ENVELOPE = {f.name for f in dataclasses.fields(Event)}


def emitted_kinds(source: str, path: str) -> tuple[set[str], list[str]]:
    """The ``TraceKind`` members named at the ``.emit(`` (and ``TaskRunner.note(``) call
    sites of ``source``, and the
    call sites that name a kind any other way (``path:line: what``)."""
    kinds: set[str] = set()
    bad: list[str] = []
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("emit", "note")):
            continue
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) \
                and first.value.id == "TraceKind":
            kinds.add(first.attr)
            continue
        scope = parents.get(node)
        while scope is not None and not isinstance(scope, ast.FunctionDef):
            scope = parents.get(scope)
        if isinstance(first, ast.Name) and scope is not None and (path, scope.name) in FORWARDERS:
            continue
        bad.append(f"{path}:{node.lineno}: {ast.unparse(first) if first else 'no kind'}")
    return kinds, bad


def scan() -> tuple[set[str], list[str]]:
    kinds: set[str] = set()
    bad: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found, wrong = emitted_kinds(path.read_text(), str(path.relative_to(ROOT)))
            kinds |= found
            bad += wrong
    return kinds, bad


def test_every_kind_the_code_emits_is_a_trace_kind_with_its_own_record_type() -> None:
    kinds, bad = scan()
    assert bad == []
    assert sorted(k for k in kinds if k not in TraceKind.__members__) == []
    assert sorted(k for k in kinds if RECORDS.get(TraceKind[k]) in (None, Event, OtherEvent)) \
        == []
    assert sorted(k.name for k in TraceKind if k.name not in kinds) == []  # none stale
    assert sorted(RECORDS) == sorted(TraceKind)
    assert len(set(RECORDS.values())) == len(RECORDS)  # one record type per kind


def test_the_scan_refuses_an_emit_call_that_names_its_kind_by_string() -> None:
    source = ("from harness_bt.events import TraceKind\n"
              "def f(ctx, kind):\n"
              "    ctx.emit(TraceKind.VERDICT, verdict='FAILED')\n"
              "    ctx.emit('teleport', where='moon')\n"
              "    ctx.emit(kind)\n")
    assert emitted_kinds(source, "x.py") == ({"VERDICT"}, ["x.py:4: 'teleport'", "x.py:5: kind"])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_event_of_a_real_run_reads_into_its_record_and_back_into_the_same_line(
        scenario: str, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run_example(scenario, trace=str(path))
    lines = path.read_text().splitlines()
    assert lines
    for line in lines:
        raw = json.loads(line)
        record = parse_event(raw)
        assert type(record) is RECORDS[TraceKind(raw["kind"])]
        assert record.kind is TraceKind(raw["kind"])
        assert record.to_dict() == raw
        assert json.dumps(record.to_dict(), separators=(",", ":")) == line
        assert parse_event(record.to_dict()) == record
        for f in dataclasses.fields(record):  # the typed fields say what the data says
            key = f.metadata.get("key") or f.name
            if f.name in ENVELOPE or key not in raw["data"]:
                continue
            value = getattr(record, f.name)
            assert _plain(value) == raw["data"][key], (raw["seq"], f.name)


def _plain(value: Any) -> Any:
    """A typed value as JSON holds it (tuples as lists, records as dicts)."""
    if isinstance(value, OutcomeInfo):
        out = {"kind": value.kind, "reason": value.reason, "node_path": value.node_path,
               "retryable": value.retryable}
        if value.command_id:
            out["command_id"] = value.command_id
        if value.details:
            out["details"] = _plain(dict(value.details))
        if value.cause is not None:
            out["cause"] = _plain(value.cause)
        return out
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_the_example_runs_cover_the_kinds_of_a_run_and_the_rest_have_samples() -> None:
    seen = {e["kind"] for s in SCENARIOS for e in run_example(s).trace.events}
    assert sorted(set(TraceKind) - seen - set(SAMPLES)) == []


#: Data of the kinds the example runs do not write, as their emit call sites write it.
SAMPLES: dict[TraceKind, dict[str, Any]] = {
    TraceKind.ITERATION: {"phase": "sort", "node_path": "reds", "stage": "start",
                          "item": "red_cube_2", "index": 2, "run": 1, "status": "",
                          "left": ["red_cube_2", "red_cube_3"]},
    TraceKind.RESUME: {"checkpoint": 4, "reason": "transition", "configuration": ["pick"],
                       "activations": {"pick": 1}, "retries_used": 0, "elapsed_s": 1.5,
                       "epoch": 2, "dropped": [], "restarted": ["r/pick.1/grasp#1"]},
    TraceKind.RESUMED: {"open": {"r/pick.1/grasp#1": "UNKNOWN"}},
    TraceKind.CHECKPOINT: {"seq": 3, "reason": "start", "configuration": ["navigate"],
                           "dropped": []},
    TraceKind.ADOPTED: {"phase": "pick", "node_path": "pick/grasp", "message": "conflict"},
    TraceKind.REISSUE: {"phase": "pick", "node_path": "pick/grasp", "reason": "never ran"},
    TraceKind.UNHANDLED: {"phase": "pick", "event": "failed"},
    TraceKind.NODE_ERROR: {"phase": "pick", "node_path": "pick/x", "stage": "update",
                           "node_class": "m.X", "exception": "ValueError: no",
                           "traceback": "Traceback ..."},
    TraceKind.BREAKER: {"key": "bridge", "state_before": "closed", "state_after": "open",
                        "failures": 3},
    TraceKind.NOTICE: {"kind": "episode_ended", "worker_id": "w0", "notice": {"why": "time"}},
    TraceKind.ORPHAN_EVENT: {"event": {"command_id": "x", "kind": "started"}},
    TraceKind.ERROR: {"where": "poll", "error": {"code": "BRIDGE_DOWN", "message": "gone"}},
    TraceKind.STOP: {"outcome": "aborted", "reason": "aborted_stalled",
                     "configuration": ["pick"]},
    TraceKind.STALLED: {"held": ["pick"], "configuration": ["pick"]},
    TraceKind.DRAIN_TIMEOUT: {"open": {"r/pick.1/grasp#1": "CANCELING"}},
    TraceKind.FRAME: {"file": "run.frames.tar", "timestep": 12, "images": {"front": {
        "member": "front/000001.jpg", "width": 64, "height": 48}}, "ee_poses": [],
        "objects": {}},
    TraceKind.CONTROL: {"op": "breakpoint", "who": {"client": "run"}, "received_wall": None,
                        "ticks": 7, "node": "pick/grasp", "when": "before",
                        "status": "INVALID"},
    TraceKind.PLANNER: {"call": 0, "instruction": "fetch the cup", "planner": "rules",
                        "prompt_digest": "ab12", "answer": "{}", "plan": {"task": "fetch"},
                        "refusal": None},
    TraceKind.FAULT_INJECTED: {"fault": "slip", "timestep": 212, "sim_time_s": 7.0667,
                               "worker_id": "0", "phase": "transport",
                               "node_path": "carry/move", "skill": "move_to",
                               "details": {"object": "red_cube", "steps": 8},
                               "running": ["r/transport.1/carry/move#1"]},
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_sample_of_each_kind_no_example_run_writes_round_trips(kind: TraceKind) -> None:
    raw = {"seq": 9, "kind": kind.value, "task_id": "t", "run_id": "r", "command_id": None,
           "plan_version": 0, "tick": 3, "mono": 0.15, "wall": 1700000000.0,
           "data": SAMPLES[kind]}
    record = parse_event(raw)
    assert type(record) is RECORDS[kind]
    assert record.to_dict() == raw
    assert parse_event(record.to_dict()) == record


def test_records_match_by_kind_and_attributes() -> None:
    """The slip's grasp is judged FAILED with evidence, and its command ends FAILED."""
    runner = run_example("slip")
    judged: list[tuple[str, str, str]] = []
    ended: dict[str, str] = {}
    for e in map(parse_event, runner.trace.events):
        match e:
            case VerdictEvent(verdict="FAILED", final=True, evidence=(str(first), *_)):
                judged.append((str(e.command_id), e.node_path, first))
            case CommandEvent(state_after="FAILED" | "SUCCEEDED" as state, skill=skill):
                ended[str(e.command_id)] = f"{skill} {state}"
    assert judged == [("example/grasp.1/pick/steps/close#1", "hold_cup/hold_cup.try/grasp_ok",
                       "cup at [0.5, 0.0, 0.05] conf 1.00 (camera front, t=23)")]
    assert ended["example/grasp.1/pick/steps/close#1"] == "grasp FAILED"


def test_a_kind_from_a_newer_writer_is_kept_as_another_event_and_replays() -> None:
    events = [e for e in run_example("clean").trace.events]
    newer = {"seq": len(events) + 1, "kind": "teleport", "task_id": "t", "run_id": "example",
             "command_id": None, "plan_version": 0, "tick": events[-1]["tick"],
             "mono": 9.0, "wall": 9.0, "data": {"to": "moon", "speed": 3}}
    record = parse_event(newer)
    assert type(record) is OtherEvent
    assert record.kind == "teleport"
    assert record.to_dict() == newer
    assert summarize(newer) == "to=moon, speed=3"
    frame = fold([*events, newer])
    assert frame.seq == newer["seq"]
    assert frame.result is not None and frame.result["outcome"] == "succeeded"
    assert TraceReader([*events, newer]).state_at().result == frame.result


@pytest.mark.parametrize(("raw", "message"), [
    ({"seq": 7, "kind": "command", "data": {"op": "event:started", "state_after": 3}},
     "seq 7: INVALID_TRACE_EVENT: trace event seq 7 (kind 'command'): data 'state_after' "
     "must be a string, got 3"),
    ({"seq": 8, "kind": "verdict", "data": {"evidence": [], "final": True}},
     "trace event seq 8 (kind 'verdict'): data has no 'verdict' (its keys: evidence, final)"),
    ({"seq": 9, "kind": "budget", "data": {"kind": "retry", "granted": "yes"}},
     "seq 9 (kind 'budget'): data 'granted' must be true or false, got 'yes'"),
    ({"seq": 10, "kind": "failure", "data": {"phase": "p", "outcome": {"reason": "X"}}},
     "seq 10 (kind 'failure'): data 'outcome' must be an outcome"),
    ({"seq": 11, "kind": "status", "data": {"phase": "p", "changes": {"a": ["RUNNING"]}}},
     "seq 11 (kind 'status'): data 'changes' must be an object of node path -> "),
    ({"seq": 16, "kind": "run_start", "data": {"budget": {"max_time_s": "soon"}}},
     "seq 16 (kind 'run_start'): data 'budget' must be an object of max_retries (an integer or "
     "null) and max_time_s (a number or null), got {'max_time_s': 'soon'}"),
    ({"seq": "12", "kind": "chart", "data": {}},
     "trace event seq 12 (kind 'chart'): 'seq' must be an integer, got '12'"),
    ({"seq": 13, "kind": "teleport", "tick": "soon", "data": {}},
     "seq 13 (kind 'teleport'): 'tick' must be an integer, got 'soon'"),
    ({"seq": 14, "kind": None, "data": {}},
     "trace event seq 14 (kind None): 'kind' must be a string, got None"),
    ({"seq": 15, "kind": "chart", "data": ["configuration"]},
     "seq 15 (kind 'chart'): 'data' must be an object, got ['configuration']"),
])
def test_a_malformed_event_is_refused_naming_its_seq_kind_field_and_value(
        raw: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=_literal(message)) as info:
        parse_event(raw)
    assert info.value.code == "INVALID_TRACE_EVENT"
    assert info.value.fix and "TaskRunner" in info.value.fix


def _literal(text_: str) -> str:
    import re

    return re.escape(text_)


def test_a_malformed_event_in_a_trace_file_is_refused_when_the_trace_is_read(
        tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    events = run_example("clean").trace.events[:5]
    events[3] = {**events[3], "data": {**events[3]["data"], "state_after": None}} \
        if events[3]["kind"] == "command" else {**events[3], "tick": "x"}
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    reader = TraceReader.open(path)
    with pytest.raises(DefinitionError, match=f"seq {events[3]['seq']} "):
        reader.state_at()


def test_non_finite_numbers_as_the_trace_writes_them_read_as_floats() -> None:
    record = parse_event({"seq": 1, "kind": "budget", "mono": "inf", "data": {
        "kind": "time", "granted": False, "time_left_s": "-inf"}})
    assert isinstance(record, BudgetEvent)
    assert record.time_left_s == -math.inf and record.mono == math.inf
    assert record.to_dict()["mono"] == "inf"
    assert record.draw == "time" and record.granted is False


def test_a_record_is_frozen() -> None:
    record = parse_event({"seq": 1, "kind": "handover", "data": {"phase": "pick"}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.seq = 2  # type: ignore[misc]


def test_a_field_without_a_default_is_required() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Probe(Event):
        name: str = field_of(text)

    from harness_bt.events.base import build

    with pytest.raises(DefinitionError, match="data has no 'name'"):
        build(Probe, {"seq": 1, "kind": "probe", "data": {}}, "probe")
    assert build(Probe, {"seq": 1, "kind": "probe", "data": {"name": "x"}}, "probe").name == "x"


def test_the_events_exports_are_pinned() -> None:
    import harness_bt.events

    records = sorted(cls.__name__ for cls in RECORDS.values())
    assert sorted(harness_bt.events.__all__) == sorted([
        "Event", "NodeEvent", "OtherEvent", "OutcomeInfo", "RECORDS", "TraceKind", "parse_event",
        *records])
    for name in harness_bt.events.__all__:
        assert hasattr(harness_bt.events, name), name
