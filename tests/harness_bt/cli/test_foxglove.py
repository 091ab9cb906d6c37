"""``harness run --foxglove``: the run served live over Foxglove's WebSocket protocol, watched
by a client speaking the protocol itself (the handshake, ``serverInfo`` and ``advertise``, a
``subscribe``, binary message-data frames): the channels and schemas of the MCAP export, at
least one camera image and one tree state, stamped on the run's clock; a bad address or a
wait without a server refused before the run."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import time
from typing import Any

import pytest

from harness_bt.cli import main
from tests.conftest import ROOT, Processes, python

#: What the MCAP export writes for a run with one camera named front (tests/harness_bt/
#: test_export.py pins the same table for the file).
EXPORTED = {
    "/camera/front": ("foxglove.CompressedImage", "protobuf"),
    "/camera/front/calibration": ("foxglove.CameraCalibration", "protobuf"),
    "/camera/front/objects": ("foxglove.ImageAnnotations", "protobuf"),
    "/tf": ("foxglove.FrameTransforms", "protobuf"),
    "/harness/log": ("foxglove.Log", "protobuf"),
    "/harness/tree": ("harness.TreeState", "json"),
}


def _messages(ws: Any) -> Any:
    """Each message of the connection: ("text", dict) or ("data", subscription, log time,
    payload) for a binary message-data frame (opcode 0x01)."""
    while True:
        m = ws.recv()
        if isinstance(m, str):
            yield "text", json.loads(m)
        elif m[:1] == b"\x01":
            subscription, log_time = struct.unpack_from("<IQ", m, 1)
            yield "data", subscription, log_time, bytes(m[13:])


def test_a_run_is_served_live_to_a_client_speaking_foxglove_s_protocol(
        processes: Processes) -> None:
    import websocket
    from foxglove_schemas_protobuf.CompressedImage_pb2 import CompressedImage
    from google.protobuf.descriptor_pb2 import FileDescriptorSet
    from mcap_protobuf.schema import build_file_descriptor_set

    before = time.time_ns()
    proc = processes.start(*python("-m", "harness_bt.cli", "run",
                                   str(ROOT / "trees" / "pick_cube.yaml"), "--foxglove", "0",
                                   "--foxglove-wait", "--json"), stderr=subprocess.PIPE)
    assert proc.stderr is not None and proc.stdout is not None
    line = next(x for x in proc.stderr if x.startswith("foxglove: ws://"))  # stdout: JSON
    url = line.split()[1]
    assert url.startswith("ws://127.0.0.1:")  # loopback by default
    with pytest.raises(websocket.WebSocketBadStatusException):  # the SDK's protocol name only
        websocket.create_connection(url, subprotocols=["foxglove.websocket.v1"], timeout=60)
    ws = websocket.create_connection(url, subprotocols=["foxglove.websocket.v1",
                                                        "foxglove.sdk.v1"], timeout=120)
    try:
        assert ws.getsubprotocol() == "foxglove.sdk.v1"
        stream = _messages(ws)
        kind, info = next(stream)
        assert kind == "text" and info["op"] == "serverInfo" and info["name"] == "harness-bt"
        channels: dict[int, dict[str, Any]] = {}
        while not set(EXPORTED) <= {c["topic"] for c in channels.values()}:
            kind, message = next(stream)
            if kind == "text" and message["op"] == "advertise":
                channels.update({c["id"]: c for c in message["channels"]})
        by_topic = {c["topic"]: c for c in channels.values()}
        assert {t: (c["schemaName"], c["encoding"]) for t, c in by_topic.items()
                if t.startswith(("/harness", "/tf", "/camera/front"))} == EXPORTED
        image_channel = by_topic["/camera/front"]
        assert image_channel["schemaEncoding"] == "protobuf"
        advertised = FileDescriptorSet.FromString(base64.b64decode(image_channel["schema"]))
        assert advertised == build_file_descriptor_set(CompressedImage)  # the export's schema
        ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": n, "channelId": cid} for n, cid in enumerate(channels)]}))
        topic_of = {n: channels[cid]["topic"] for n, cid in enumerate(channels)}
        images: list[tuple[int, Any]] = []
        trees: list[tuple[int, dict[str, Any]]] = []
        logs = 0
        while not (images and trees and logs):
            item = next(stream)
            if item[0] != "data":
                continue
            _, subscription, log_time, payload = item
            topic = topic_of[subscription]
            if topic == "/camera/front":
                images.append((log_time, CompressedImage.FromString(payload)))
            elif topic == "/harness/tree":
                trees.append((log_time, json.loads(payload)))
            elif topic == "/harness/log":
                logs += 1
    finally:
        ws.close()
    log_time, image = images[0]
    assert image.format == "jpeg" and image.data[:2] == b"\xff\xd8"
    assert image.frame_id == "camera_front" and image.timestamp.ToNanoseconds() == log_time
    log_time, tree = trees[0]
    assert tree["configuration"] and set(tree) == {"tick", "seq", "t", "configuration",
                                                   "phases", "counters", "result"}
    assert log_time >= before  # the run's clock: its wall-clock start plus simulated time
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert json.loads(out.strip().splitlines()[-1])["episodes"][0]["reason"] == "done"


@pytest.mark.parametrize(("argv", "message"), [
    (["--foxglove", "nope"], "INVALID_OPTION: --foxglove nope: not [HOST:]PORT with a port "
                             "between 0 and 65535"),
    (["--foxglove-wait"], "INVALID_OPTION: --foxglove-wait: there is no Foxglove server to "
                          "wait on; pass --foxglove PORT too"),
])
def test_a_bad_foxglove_option_is_refused_before_the_run(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "trees" / "pick_cube.yaml"), *argv]) == 1
    assert message in " ".join(capsys.readouterr().err.split())


def test_a_foxglove_port_in_use_is_refused_before_the_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["run", str(ROOT / "trees" / "pick_cube.yaml"), "--foxglove",
                     f"127.0.0.1:{port}"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"FOXGLOVE_SERVER_FAILED: the Foxglove server could not listen on 127.0.0.1:{port}" \
        in err and "choose another port (0 picks a free one)" in err
