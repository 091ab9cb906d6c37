"""MCAP export: a run with camera frames read back with the mcap reader (channels, schemas,
message counts, decoded messages); without frames, with its frames file missing, and from a
corrupt trace."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.export import export_mcap
from harness_bt.trace import TraceReader
from harness_bt.viz import frames


def read(path: Path) -> tuple[dict[str, tuple[str, str]], Counter[str], list[tuple[str, object]]]:
    """topic -> (schema name, encoding), messages per topic, decoded messages in time order."""
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    with path.open("rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary is not None
        channels = {c.topic: (summary.schemas[c.schema_id].name,
                              summary.schemas[c.schema_id].encoding)
                    for c in summary.channels.values()}
        counts: Counter[str] = Counter()
        decoded: list[tuple[str, object]] = []
        last = 0
        factory = DecoderFactory()
        for schema, channel, message in reader.iter_messages(log_time_order=True):
            counts[channel.topic] += 1
            assert message.log_time >= last
            last = message.log_time
            if channel.message_encoding == "protobuf":
                decode = factory.decoder_for(channel.message_encoding, schema)
                assert decode is not None
                decoded.append((channel.topic, decode(message.data)))
            else:
                assert channel.message_encoding == "json"
                decoded.append((channel.topic, json.loads(message.data)))
    return channels, counts, decoded


def test_a_run_with_camera_frames_exports_every_channel(framed: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.mcap"
    assert main(["export", str(framed), "-o", str(out)]) == 0
    channels, counts, decoded = read(out)
    assert channels == {
        "/camera/front": ("foxglove.CompressedImage", "protobuf"),
        "/camera/front/calibration": ("foxglove.CameraCalibration", "protobuf"),
        "/camera/front/objects": ("foxglove.ImageAnnotations", "protobuf"),
        "/tf": ("foxglove.FrameTransforms", "protobuf"),
        "/harness/log": ("foxglove.Log", "protobuf"),
        "/harness/tree": ("harness.TreeState", "jsonschema"),
    }
    reader = TraceReader.open(framed)
    recorded = reader.of_kind("frame")
    assert counts["/camera/front"] == counts["/tf"] == len(recorded) == 8
    assert counts["/harness/tree"] == len(frames(reader))
    logged = [e for e in reader if e["kind"] in ("phase_enter", "phase_exit", "chart", "command",
                                                   "verdict", "budget", "failure", "outcome",
                                                   "recovery", "run_end")]
    assert counts["/harness/log"] == len(logged)
    image = next(m for t, m in decoded if t == "/camera/front")
    assert image.format == "jpeg" and image.data[:2] == b"\xff\xd8"  # type: ignore[attr-defined]
    assert image.frame_id == "camera_front"  # type: ignore[attr-defined]
    tf = next(m for t, m in decoded if t == "/tf")
    children = {x.child_frame_id for x in tf.transforms}  # type: ignore[attr-defined]
    assert children == {"end_effector", "camera_front", "cup", "tray"}
    boxes = next(m for t, m in decoded if t == "/camera/front/objects")
    assert {x.text for x in boxes.texts} == {"cup", "tray"}  # type: ignore[attr-defined]
    logs = [m for t, m in decoded if t == "/harness/log"]
    assert logs[-1].name == "harness.run_end" and logs[-1].message == \
        "run_end: succeeded (done)"  # type: ignore[attr-defined]
    assert any(m.level == m.WARNING and "POSTCONDITION_NOT_MET" in m.message  # type: ignore[attr-defined]
               for m in logs)  # the slip
    tree = [m for t, m in decoded if t == "/harness/tree"]
    assert tree[-1]["result"] == {"outcome": "succeeded", "reason": "done"}  # type: ignore[index]
    assert tree[-1]["phases"]["evaluate"]["hold_cup"] == "SUCCESS"  # type: ignore[index]


def test_a_run_without_frames_or_with_its_frames_file_missing_still_exports(
        traces: dict[str, Path], framed: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "clean.mcap"
    assert main(["export", str(traces["clean"]), "-o", str(out)]) == 0
    assert "no camera frames" in capsys.readouterr().err
    channels, _, _ = read(out)
    assert set(channels) == {"/harness/log", "/harness/tree"}
    alone = tmp_path / "alone.jsonl"
    alone.write_text(framed.read_text())
    counts_alone = export_mcap(alone, tmp_path / "alone.mcap")
    assert "/camera/front" not in counts_alone and counts_alone["/tf"] == 8
    _, _, decoded = read(tmp_path / "alone.mcap")
    first = next(m for t, m in decoded if t == "/harness/log")
    assert "camera frames: the frames file" in first.message  # type: ignore[attr-defined]
    assert "is missing" in first.message  # type: ignore[attr-defined]


def test_a_corrupt_trace_or_a_wrong_output_is_refused(framed: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(framed.read_text()[:5000] + "\n{oops\n")
    assert main(["export", str(bad), "-o", str(tmp_path / "x.mcap")]) == 1
    assert "INVALID_TRACE" in capsys.readouterr().err
    assert main(["export", str(framed), "-o", str(tmp_path / "x.bag")]) == 1
    assert "the output must be a .mcap file" in " ".join(capsys.readouterr().err.split())
    assert main(["export", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "x.mcap")]) == 1
    assert "TRACE_NOT_FOUND" in capsys.readouterr().err
