"""``harness export TRACE -o run.mcap``: a run as an MCAP file that Foxglove opens.

Written with the ``mcap`` writer, in Foxglove's well-known schemas (protobuf, from
``foxglove-schemas-protobuf``) where one fits, JSON (with a JSON Schema) where none does:

``/camera/<name>``               foxglove.CompressedImage (JPEG), when the run recorded frames
``/camera/<name>/calibration``   foxglove.CameraCalibration (its intrinsics)
``/camera/<name>/objects``       foxglove.ImageAnnotations: the perceived objects' boxes
``/tf``                          foxglove.FrameTransforms: ``world`` -> ``end_effector``, every
                                 camera and every perceived object
``/harness/log``                 foxglove.Log: phase, chart, command, verdict, budget and
                                 failure events, the run's end (warnings and errors by kind)
``/harness/tree``                JSON ``harness.TreeState``: per tick, the active configuration
                                 and every node's status in every phase that ran

Message times are the run's clock: the trace's first wall time plus each event's monotonic
time, so the channels line up with each other and with the run's own timings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.recording import FrameStore
from harness_bt.trace import TraceReader
from harness_bt.viz.frames import frames, summarize

__all__ = ["TOPICS", "export_mcap"]

TOPICS = ("/tf", "/harness/log", "/harness/tree")
_LOGGED = {"phase_enter", "phase_exit", "chart", "command", "verdict", "budget", "failure",
           "outcome", "recovery", "unhandled", "error", "stop", "stalled", "run_end",
           "reconcile", "breaker"}
_TREE_SCHEMA = {
    "title": "harness.TreeState",
    "description": "The behaviour trees of a harness-bt run after one tick",
    "type": "object",
    "properties": {
        "tick": {"type": "integer"}, "seq": {"type": "integer"}, "t": {"type": "number"},
        "configuration": {"type": "array", "items": {"type": "string"}},
        "phases": {"type": "object", "description": "phase -> node path -> status",
                   "additionalProperties": {"type": "object",
                                            "additionalProperties": {"type": "string"}}},
        "counters": {"type": "object", "additionalProperties": {"type": "integer"}},
        "result": {"type": ["object", "null"]},
    },
}


def _level(event: Mapping[str, Any]) -> str:
    kind, d = event["kind"], event.get("data") or {}
    if kind in ("error", "stalled", "unhandled"):
        return "ERROR"
    if kind == "run_end":
        return "INFO" if d.get("outcome") == "succeeded" else "ERROR"
    if kind in ("failure", "stop") or (kind == "verdict" and d.get("verdict") != "SUCCEEDED"):
        return "WARNING"
    if kind == "command" and d.get("state_after") in ("FAILED", "REJECTED", "UNKNOWN",
                                                      "CANCELED"):
        return "WARNING"
    if kind == "budget" and not d.get("granted"):
        return "WARNING"
    return "INFO"


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
                                data=json.dumps(schema).encode()))
        self._add(topic, cid, json.dumps(value, separators=(",", ":")).encode(), ns)

    def _add(self, topic: str, cid: int, data: bytes, ns: int) -> None:
        self.writer.add_message(channel_id=cid, log_time=ns, publish_time=ns, data=data,
                                sequence=self.counts.get(topic, 0))
        self.counts[topic] = self.counts.get(topic, 0) + 1


def _stamp(message_field: Any, ns: int) -> None:
    message_field.seconds, message_field.nanos = divmod(ns, 1_000_000_000)


def _transform(parent: str, child: str, pose: Iterable[float], ns: int) -> Any:
    from foxglove_schemas_protobuf.FrameTransform_pb2 import FrameTransform

    x, y, z, qw, qx, qy, qz = (float(v) for v in pose)
    tf = FrameTransform(parent_frame_id=parent, child_frame_id=child)
    _stamp(tf.timestamp, ns)
    tf.translation.x, tf.translation.y, tf.translation.z = x, y, z
    tf.rotation.w, tf.rotation.x, tf.rotation.y, tf.rotation.z = qw, qx, qy, qz
    return tf


def _frame_messages(out: _Out, e: Mapping[str, Any], store: FrameStore, ns: int) -> int:
    """The images, calibrations, boxes and transforms of one ``frame`` event; the number of
    images found in the store."""
    from foxglove_schemas_protobuf.CameraCalibration_pb2 import CameraCalibration
    from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage
    from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
    from foxglove_schemas_protobuf.ImageAnnotations_pb2 import ImageAnnotations
    from foxglove_schemas_protobuf.PointsAnnotation_pb2 import PointsAnnotation

    d = e.get("data") or {}
    transforms = FrameTransforms()
    for i, pose in enumerate(d.get("ee_poses") or ()):
        transforms.transforms.append(_transform("world", "end_effector" + (
            f"_{i}" if i else ""), pose, ns))
    for oid, obj in (d.get("objects") or {}).items():
        if obj.get("pose") is not None:
            transforms.transforms.append(_transform("world", str(oid), obj["pose"], ns))
    found = 0
    for camera, image in (d.get("images") or {}).items():
        frame_id = f"camera_{camera}"
        if image.get("pose") is not None:
            transforms.transforms.append(_transform("world", frame_id, image["pose"], ns))
        data = store.get(str(image.get("member")))
        if data is None:
            continue
        found += 1
        msg = CompressedImage(frame_id=frame_id, data=data, format="jpeg")
        _stamp(msg.timestamp, ns)
        out.proto(f"/camera/{camera}", msg, ns)
        if image.get("k"):
            cal = CameraCalibration(frame_id=frame_id, width=int(image["width"]),
                                    height=int(image["height"]), distortion_model="plumb_bob")
            _stamp(cal.timestamp, ns)
            k = [float(v) for v in image["k"]]
            cal.K.extend(k)
            cal.D.extend([0.0] * 5)
            cal.R.extend([1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0])
            cal.P.extend([k[0], k[1], k[2], 0.0, k[3], k[4], k[5], 0.0, k[6], k[7], k[8], 0.0])
            out.proto(f"/camera/{camera}/calibration", cal, ns)
        boxes = ImageAnnotations()
        for oid, (u0, v0, u1, v1) in (image.get("boxes") or {}).items():
            box = PointsAnnotation(type=PointsAnnotation.Type.LINE_LOOP, thickness=2.0)
            _stamp(box.timestamp, ns)
            for u, v in ((u0, v0), (u1, v0), (u1, v1), (u0, v1)):
                point = box.points.add()
                point.x, point.y = float(u), float(v)
            box.outline_color.r, box.outline_color.g, box.outline_color.a = 1.0, 0.92, 1.0
            boxes.points.append(box)
            label = boxes.texts.add(text=str(oid), font_size=10.0)
            _stamp(label.timestamp, ns)
            label.position.x, label.position.y = float(u0), max(0.0, float(v0) - 2.0)
            label.text_color.r, label.text_color.g, label.text_color.a = 1.0, 0.92, 1.0
        out.proto(f"/camera/{camera}/objects", boxes, ns)
    if transforms.transforms:
        out.proto("/tf", transforms, ns)
    return found


def export_mcap(trace: str | os.PathLike[str], output: str | os.PathLike[str], *,
                frames_file: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """Write the run of ``trace`` (a JSONL file) to ``output`` as MCAP (see the module
    docstring); camera frames come from the file the trace names beside it (or
    ``frames_file``). Returns the number of messages per topic. A trace that recorded frames
    whose file is missing still exports, without images (the ``/harness/log`` says so)."""
    from foxglove_schemas_protobuf.Log_pb2 import Log

    target = Path(output)
    if target.suffix.lower() != ".mcap":
        raise DefinitionError("INVALID_OPTION", f"-o {output}: the output must be a .mcap file",
                              fix="name it e.g. run.mcap")
    reader = TraceReader.open(trace)
    structure = reader.structure
    store = FrameStore(frames_file) if frames_file is not None else \
        FrameStore.beside(trace, reader.events)
    base = float(reader.events[0].get("wall") or 0.0)

    def ns_of(event: Mapping[str, Any]) -> int:
        return round((base + float(event.get("mono") or 0.0)) * 1e9)

    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as fh:
        out = _Out(fh, str(structure.get("task")))
        out.writer.add_metadata("harness-bt run", {
            "task": str(structure.get("task")), "run_id": str(reader.events[0].get("run_id")),
            "trace": Path(trace).name, "frames": str(store.path.name if store.path else "")})

        def log(e: Mapping[str, Any], level: str, message: str) -> None:
            ns = ns_of(e)
            msg = Log(level=getattr(Log.Level, level), message=message,
                      name=f"harness.{e['kind']}", file=str(e.get("command_id") or ""),
                      line=int(e["seq"]))
            _stamp(msg.timestamp, ns)
            out.proto("/harness/log", msg, ns)

        if store.problem:
            log(reader.events[0], "WARNING", f"camera frames: {store.problem}; the images "
                "not in it are not exported")
        for e in reader.events:
            if e["kind"] == "frame":
                _frame_messages(out, e, store, ns_of(e))
            elif e["kind"] in _LOGGED:
                log(e, _level(e), f"{e['kind']}: {summarize(e)}")
        for f in frames(reader):
            ns = ns_of({"mono": f.mono})
            out.json("/harness/tree", _TREE_SCHEMA, {
                "tick": f.tick, "seq": f.seq, "t": round(f.mono, 4),
                "configuration": f.configuration,
                "phases": {phase: {path: n.status for path, n in nodes.items()}
                           for phase, nodes in f.nodes.items() if phase in f.visited},
                "counters": f.counters, "result": f.result and {
                    k: f.result.get(k) for k in ("outcome", "reason")}}, ns)
        out.writer.finish()
    return dict(out.counts)
