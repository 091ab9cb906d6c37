"""The Foxglove channels of a run: one set of topics, schemas and messages shared by the MCAP
export (:mod:`harness_bt.export`, a file afterwards) and the live server
(:mod:`harness_bt.viz.live`, over Foxglove's WebSocket protocol while the run ticks).

Foxglove's well-known schemas (protobuf, from ``foxglove-schemas-protobuf``) where one fits,
JSON (with a JSON Schema) where none does:

``/camera/<name>``               foxglove.CompressedImage (JPEG)
``/camera/<name>/calibration``   foxglove.CameraCalibration (its intrinsics)
``/camera/<name>/objects``       foxglove.ImageAnnotations: the perceived objects' boxes
``/tf``                          foxglove.FrameTransforms: ``world`` -> ``end_effector``, every
                                 camera and every perceived object
``/harness/log``                 foxglove.Log: phase, chart, command, verdict, budget and
                                 failure events, the run's end (warnings and errors by kind)
``/harness/tree``                JSON ``harness.TreeState``: per tick, the active configuration
                                 and every node's status in every phase that ran

Every message is stamped (its top-level ``timestamp`` and its log time alike) with the run's
clock in wall-clock nanoseconds: :func:`run_ns` of a trace event. A :class:`Sink` receives the
messages; the writer of an MCAP file and the live server are the two.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from harness_bt.events import (
    BudgetEvent,
    CommandEvent,
    ErrorEvent,
    Event,
    FailureEvent,
    RunEndEvent,
    StalledEvent,
    StopEvent,
    TraceKind,
    UnhandledEvent,
    VerdictEvent,
    parse_event,
)
from harness_bt.viz.frames import Frame, summarize

__all__ = ["LOGGED", "TOPICS", "TREE_SCHEMA", "Sink", "camera_topics", "frame_messages", "level",
           "log_message", "run_ns", "schema_json", "stamp", "tree_state"]

TOPICS = ("/tf", "/harness/log", "/harness/tree")
LOGGED: frozenset[TraceKind] = frozenset({
    TraceKind.PHASE_ENTER, TraceKind.PHASE_EXIT, TraceKind.CHART, TraceKind.COMMAND,
    TraceKind.VERDICT, TraceKind.BUDGET, TraceKind.FAILURE, TraceKind.OUTCOME,
    TraceKind.RECOVERY, TraceKind.UNHANDLED, TraceKind.ERROR, TraceKind.STOP, TraceKind.STALLED,
    TraceKind.RUN_END, TraceKind.RECONCILE, TraceKind.BREAKER})
_WARNED_STATES = ("FAILED", "REJECTED", "UNKNOWN", "CANCELED")
TREE_SCHEMA: dict[str, Any] = {
    "title": "harness.TreeState",
    "description": "The behaviour trees of a harness-bt run after one tick",
    "type": "object",
    "properties": {
        "tick": {"type": "integer"}, "seq": {"type": "integer"},
        "t": {"type": "number", "description": "the run's own (simulated) time, seconds"},
        "configuration": {"type": "array", "items": {"type": "string"}},
        "phases": {"type": "object", "description": "phase -> node path -> status",
                   "additionalProperties": {"type": "object",
                                            "additionalProperties": {"type": "string"}}},
        "counters": {"type": "object", "additionalProperties": {"type": "integer"}},
        "result": {"type": ["object", "null"]},
    },
}


class Sink(Protocol):
    """Where the messages of a run go: ``proto`` a protobuf message, ``json`` a JSON value
    with its JSON Schema, each on ``topic`` at ``ns`` (wall-clock nanoseconds)."""

    def proto(self, topic: str, message: Any, ns: int) -> None: ...

    def json(self, topic: str, schema: Mapping[str, Any], value: Any, ns: int) -> None: ...


def camera_topics(camera: str) -> tuple[str, str, str]:
    """The image, calibration and annotation topics of one camera."""
    return f"/camera/{camera}", f"/camera/{camera}/calibration", f"/camera/{camera}/objects"


def run_ns(wall_start: float, event: Event | Mapping[str, Any]) -> int:
    """An event's time in wall-clock nanoseconds: the run's wall-clock start plus the event's
    time on the run's clock (``mono``: simulated seconds in a simulator, real ones against a
    robot runtime). ``event``: a record, or a mapping with ``mono``."""
    mono = event.mono if isinstance(event, Event) else float(event.get("mono") or 0.0)
    return round((wall_start + mono) * 1e9)


def level(event: Event | Mapping[str, Any]) -> str:
    """The ``foxglove.Log`` level of a trace event."""
    match parse_event(event):
        case ErrorEvent() | StalledEvent() | UnhandledEvent():
            return "ERROR"
        case RunEndEvent(outcome=outcome):
            return "INFO" if outcome == "succeeded" else "ERROR"
        case FailureEvent() | StopEvent():
            return "WARNING"
        case VerdictEvent(verdict=verdict) if verdict != "SUCCEEDED":
            return "WARNING"
        case CommandEvent(state_after=state) if state in _WARNED_STATES:
            return "WARNING"
        case BudgetEvent(granted=False):
            return "WARNING"
    return "INFO"


def stamp(message_field: Any, ns: int) -> None:
    """Set a ``google.protobuf.Timestamp`` field to ``ns``."""
    message_field.seconds, message_field.nanos = divmod(ns, 1_000_000_000)


def log_message(event: Event | Mapping[str, Any], ns: int, *, severity: str | None = None,
                text: str | None = None) -> Any:
    """The ``foxglove.Log`` of a trace event (``severity`` and ``text`` replace the ones the
    event gives)."""
    from foxglove_schemas_protobuf.Log_pb2 import Log

    e = parse_event(event)
    message = f"{e.kind}: {summarize(e)}" if text is None else text
    msg = Log(level=getattr(Log.Level, severity or level(e)), message=message,
              name=f"harness.{e.kind}", file=str(e.command_id or ""), line=e.seq)
    stamp(msg.timestamp, ns)
    return msg


def tree_state(frame: Frame) -> dict[str, Any]:
    """The ``/harness/tree`` message of a frame (the state after one tick)."""
    return {"tick": frame.tick, "seq": frame.seq, "t": round(frame.mono, 4),
            "configuration": list(frame.configuration),
            "phases": {phase: {path: n.status for path, n in nodes.items()}
                       for phase, nodes in frame.nodes.items() if phase in frame.visited},
            "counters": dict(frame.counters), "result": frame.result and {
                k: frame.result.get(k) for k in ("outcome", "reason")}}


def _transform(parent: str, child: str, pose: Iterable[float], ns: int) -> Any:
    from foxglove_schemas_protobuf.FrameTransform_pb2 import FrameTransform

    x, y, z, qw, qx, qy, qz = (float(v) for v in pose)
    tf = FrameTransform(parent_frame_id=parent, child_frame_id=child)
    stamp(tf.timestamp, ns)
    tf.translation.x, tf.translation.y, tf.translation.z = x, y, z
    tf.rotation.w, tf.rotation.x, tf.rotation.y, tf.rotation.z = qw, qx, qy, qz
    return tf


def _calibration(frame_id: str, image: Mapping[str, Any], ns: int) -> Any:
    from foxglove_schemas_protobuf.CameraCalibration_pb2 import CameraCalibration

    cal = CameraCalibration(frame_id=frame_id, width=int(image["width"]),
                            height=int(image["height"]), distortion_model="plumb_bob")
    stamp(cal.timestamp, ns)
    k = [float(v) for v in image["k"]]
    cal.K.extend(k)
    cal.D.extend([0.0] * 5)
    cal.R.extend([1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0])
    cal.P.extend([k[0], k[1], k[2], 0.0, k[3], k[4], k[5], 0.0, k[6], k[7], k[8], 0.0])
    return cal


def _boxes(image: Mapping[str, Any], ns: int) -> Any:
    from foxglove_schemas_protobuf.ImageAnnotations_pb2 import ImageAnnotations
    from foxglove_schemas_protobuf.PointsAnnotation_pb2 import PointsAnnotation

    boxes = ImageAnnotations()
    stamp(boxes.timestamp, ns)
    for oid, (u0, v0, u1, v1) in (image.get("boxes") or {}).items():
        box = PointsAnnotation(type=PointsAnnotation.Type.LINE_LOOP, thickness=2.0)
        stamp(box.timestamp, ns)
        for u, v in ((u0, v0), (u1, v0), (u1, v1), (u0, v1)):
            point = box.points.add()
            point.x, point.y = float(u), float(v)
        box.outline_color.r, box.outline_color.g, box.outline_color.a = 1.0, 0.92, 1.0
        boxes.points.append(box)
        label = boxes.texts.add(text=str(oid), font_size=10.0)
        stamp(label.timestamp, ns)
        label.position.x, label.position.y = float(u0), max(0.0, float(v0) - 2.0)
        label.text_color.r, label.text_color.g, label.text_color.a = 1.0, 0.92, 1.0
    return boxes


def frame_messages(out: Sink, data: Mapping[str, Any], image_of: Callable[[str], bytes | None],
                   ns: int) -> int:
    """The images, calibrations, boxes and transforms of one ``frame`` event's ``data``
    (:mod:`harness_bt.recording`); ``image_of(member)`` gives an image's JPEG bytes (None:
    not there). Returns the number of images sent."""
    from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage
    from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms

    transforms = FrameTransforms()
    for i, pose in enumerate(data.get("ee_poses") or ()):
        transforms.transforms.append(_transform("world", "end_effector" + (
            f"_{i}" if i else ""), pose, ns))
    for oid, obj in (data.get("objects") or {}).items():
        if obj.get("pose") is not None:
            transforms.transforms.append(_transform("world", str(oid), obj["pose"], ns))
    found = 0
    for camera, image in (data.get("images") or {}).items():
        frame_id = f"camera_{camera}"
        if image.get("pose") is not None:
            transforms.transforms.append(_transform("world", frame_id, image["pose"], ns))
        jpeg = image_of(str(image.get("member")))
        if jpeg is None:
            continue
        found += 1
        image_topic, calibration_topic, objects_topic = camera_topics(str(camera))
        msg = CompressedImage(frame_id=frame_id, data=jpeg, format="jpeg")
        stamp(msg.timestamp, ns)
        out.proto(image_topic, msg, ns)
        if image.get("k"):
            out.proto(calibration_topic, _calibration(frame_id, image, ns), ns)
        out.proto(objects_topic, _boxes(image, ns), ns)
    if transforms.transforms:
        out.proto("/tf", transforms, ns)
    return found


def schema_json(schema: Mapping[str, Any]) -> bytes:
    """A JSON Schema as the bytes a schema record or an advertisement carries."""
    return json.dumps(schema).encode()
