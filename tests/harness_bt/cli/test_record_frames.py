"""``harness run --record-frames`` against the built-in simulator: the camera frames the
harness perceives land beside the trace, the trace names them, and the replay page and the
MCAP export show them."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.recording import frames_path
from harness_bt.trace import TraceReader

TREES = Path(__file__).resolve().parents[3] / "trees"


def test_a_run_records_its_camera_frames_beside_the_trace(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    code = main(["run", str(TREES / "pick_cube.yaml"), "--seed", "5", "--num-steps", "45",
                 "--trace", str(trace), "--record-frames", "--json"])
    capfd.readouterr()
    assert code in (0, 1)  # 45 steps may end the episode before the task: not the point here
    reader = TraceReader.open(trace)
    recorded = reader.of_kind("frame")
    assert recorded and recorded[0]["data"]["file"] == "run.frames.tar"
    with tarfile.open(frames_path(trace)) as tar:
        members = set(tar.getnames())
    named = {image["member"] for e in recorded for image in e["data"]["images"].values()}
    assert named == members and {m.split("/")[0] for m in members} == {"front", "left"}
    period = {}  # at most 5 images a second per camera, on the run's clock
    for e in recorded:
        for camera in e["data"]["images"]:
            assert e["mono"] - period.get(camera, -1.0) >= 0.2 - 1e-9
            period[camera] = e["mono"]
    first = recorded[0]["data"]
    assert "red_cube" in first["objects"] and len(first["ee_poses"][0]) == 7
    box = first["images"]["front"]["boxes"]["red_cube"]
    assert 0 <= box[0] < box[2] <= 256 and 0 <= box[1] < box[3] <= 192  # in the image

    page = tmp_path / "run.html"
    assert main(["replay", str(trace), "--html", str(page)]) == 0
    html = page.read_text()
    sources = json.loads(html.split('id="images">')[1].split("</script>")[0])
    assert len(sources) == len(members) and all(s.startswith("data:image/jpeg") for s in sources)
    out = tmp_path / "run.mcap"
    assert main(["export", str(trace), "-o", str(out)]) == 0
    assert f"/camera/front {sum('front' in e['data']['images'] for e in recorded)}" in \
        capfd.readouterr().out


def test_recording_frames_needs_a_trace(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(TREES / "pick_cube.yaml"), "--record-frames"]) == 1
    err = " ".join(capfd.readouterr().err.split())
    assert "--record-frames: the frames go beside the trace, and there is none" in err
    assert "pass --trace run.jsonl too" in err
