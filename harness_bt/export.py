"""``harness export TRACE -o run.mcap``: a run as an MCAP file that Foxglove opens.

Written with the ``mcap`` writer, on the channels of :mod:`harness_bt.viz.channels` (the same
topics and schemas the live server ``harness run --foxglove`` serves): camera images,
calibrations and boxes when the run recorded frames, ``/tf``, ``/harness/log`` and
``/harness/tree``.

Log times (and every message's top-level ``timestamp``) are on the real clock: the run's
wall-clock start (the trace's first ``wall`` less its ``mono``) plus each event's time on the
run's clock, which a simulator keeps as simulated time (``/harness/tree`` carries it as ``t``;
any log time less ``wall_start_ns`` is that time). The run's metadata (task, run id, seed,
scene, outcome, reason, the wall-clock start) is one MCAP Metadata record, ``harness-bt run``.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.events import Event, FrameEvent, RunEndEvent, RunStartEvent, TaskEvent
from harness_bt.recording import FrameStore
from harness_bt.trace import TraceReader
from harness_bt.viz.channels import (
    LOGGED,
    TOPICS,
    TREE_SCHEMA,
    frame_messages,
    log_message,
    run_ns,
    schema_json,
    tree_state,
)
from harness_bt.viz.frames import frames

__all__ = ["TOPICS", "export_mcap", "run_metadata"]


class _Out:
    """The MCAP writer with its channels, registered on first use."""

    def __init__(self, fh: Any, name: str) -> None:
        from mcap.writer import CompressionType, Writer

        self.writer = Writer(fh, compression=CompressionType.ZSTD)
        self.writer.start(profile="", library=f"harness-bt export ({name})")
        self.schemas: dict[str, int] = {}
        self.channels: dict[str, int] = {}
        self.counts: dict[str, int] = {}

    def _channel(self, topic: str, schema: str, encoding: str, make: Any) -> int:
        if topic not in self.channels:
            if schema not in self.schemas:
                self.schemas[schema] = make()
            self.channels[topic] = self.writer.register_channel(
                topic=topic, message_encoding=encoding, schema_id=self.schemas[schema])
        return self.channels[topic]

    def proto(self, topic: str, message: Any, ns: int) -> None:
        from mcap_protobuf.schema import register_schema

        cid = self._channel(topic, message.DESCRIPTOR.full_name, "protobuf",
                            lambda: register_schema(self.writer, type(message)))
        self._add(topic, cid, message.SerializeToString(), ns)

    def json(self, topic: str, schema: Mapping[str, Any], value: Any, ns: int) -> None:
        cid = self._channel(topic, str(schema["title"]), "json",
                            lambda: self.writer.register_schema(
                                name=str(schema["title"]), encoding="jsonschema",
                                data=schema_json(schema)))
        self._add(topic, cid, json.dumps(value, separators=(",", ":")).encode(), ns)

    def _add(self, topic: str, cid: int, data: bytes, ns: int) -> None:
        self.writer.add_message(channel_id=cid, log_time=ns, publish_time=ns, data=data,
                                sequence=self.counts.get(topic, 0))
        self.counts[topic] = self.counts.get(topic, 0) + 1


def run_metadata(reader: TraceReader) -> dict[str, str]:
    """The ``harness-bt run`` Metadata record of a trace: what ran, with which seed in which
    scene, how it ended, and when it started on the wall clock."""
    structure = reader.structure  # refuses a trace that does not start with the task
    records = reader.records
    first = records[0]
    task = next(e for e in records if isinstance(e, TaskEvent))
    wall_start = first.wall - first.mono
    start = next((e for e in records if isinstance(e, RunStartEvent)), None)
    end = next((e for e in reversed(records) if isinstance(e, RunEndEvent)), None)
    return {
        "task": task.name or str(structure.get("name") or ""),
        "run_id": first.run_id,
        "seed": "" if start is None or start.seed is None else str(start.seed),
        "scene": task.scene or "",
        "outcome": end.outcome if end is not None and end.outcome else "unfinished",
        "reason": "" if end is None else end.reason,
        "wall_start_ns": str(round(wall_start * 1e9)),
        "wall_start": datetime.datetime.fromtimestamp(wall_start, datetime.UTC).isoformat(),
        "clock": "log time = wall_start + the run's own time (simulated in a simulator)",
    }


def export_mcap(trace: str | os.PathLike[str], output: str | os.PathLike[str], *,
                frames_file: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """Write the run of ``trace`` (a JSONL file) to ``output`` as MCAP (see the module
    docstring); camera frames come from the file the trace names beside it (or
    ``frames_file``). Returns the number of messages per topic. A trace that recorded frames
    whose file is missing still exports, without images (the ``/harness/log`` says so)."""
    target = Path(output)
    if target.suffix.lower() != ".mcap":
        raise DefinitionError("INVALID_OPTION", f"-o {output}: the output must be a .mcap file",
                              fix="name it e.g. run.mcap")
    reader = TraceReader.open(trace)
    structure = reader.structure
    store = FrameStore(frames_file) if frames_file is not None else \
        FrameStore.beside(trace, reader.events)
    metadata = run_metadata(reader)
    wall_start = int(metadata["wall_start_ns"]) / 1e9

    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as fh:
        out = _Out(fh, str(structure.get("task")))
        out.writer.add_metadata("harness-bt run", {
            **metadata, "trace": Path(trace).name,
            "frames": str(store.path.name if store.path else "")})

        def log(e: Event, severity: str | None = None,
                text: str | None = None) -> None:
            ns = run_ns(wall_start, e)
            out.proto("/harness/log", log_message(e, ns, severity=severity, text=text), ns)

        if store.problem:
            log(reader.records[0], "WARNING", f"camera frames: {store.problem}; the images "
                "not in it are not exported")
        for e in reader.records:
            if isinstance(e, FrameEvent):
                frame_messages(out, e.data, store.get, run_ns(wall_start, e))
            elif e.kind in LOGGED:
                log(e)
        for f in frames(reader):
            ns = run_ns(wall_start, {"mono": f.mono})
            out.json("/harness/tree", TREE_SCHEMA, tree_state(f), ns)
        out.writer.finish()
    return dict(out.counts)
