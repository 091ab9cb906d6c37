"""``harness sim snapshot`` writes viewable PNGs; ``harness sim serve`` serves /docs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from PIL import Image

from harness_bt.cli import main


def test_snapshot_writes_rgb_and_depth_pngs_per_camera(tmp_path: Path) -> None:
    code = main(["sim", "snapshot", "--scene", "pick_cube", "--camera", "front:64x48",
                 "--camera", "top:32x24", "--out", str(tmp_path)])
    assert code == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["front_depth.png", "front_depth_mm.png", "front_rgb.png",
                     "top_depth.png", "top_depth_mm.png", "top_rgb.png"]
    rgb = Image.open(tmp_path / "front_rgb.png")
    assert rgb.size == (64, 48) and rgb.mode == "RGB"
    depth_mm = Image.open(tmp_path / "top_depth_mm.png")
    assert depth_mm.mode.startswith("I")


def test_serve_answers_docs_on_the_chosen_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_bt.cli", "sim", "serve", "--port", str(port),
         "--camera", "front:32x24", "--episodes", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/docs", timeout=1).status_code
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert status == 200
        info = httpx.get(f"http://127.0.0.1:{port}/harness/info", timeout=5).json()
        assert info["server"] == "harness-bt"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        assert proc.stdout is not None
        proc.stdout.close()
