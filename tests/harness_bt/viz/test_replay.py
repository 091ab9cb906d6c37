"""Replay: the state at several seqs, stepping forward and back in the terminal, and the HTML
page stepping frames in a headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from harness_bt.cli import main
from harness_bt.trace import TraceReader
from harness_bt.viz import frame_at, frames
from harness_bt.viz.html import replay_html
from harness_bt.viz.replay import Replay, frame_text

CLOSE = "example/grasp.1/pick/steps/close#1"


def test_frames_agree_with_the_trace_reader_at_every_seq(traces: dict[str, Path]) -> None:
    reader = TraceReader.open(traces["slip"])
    for seq in range(1, len(reader) + 1, 7):
        core = reader.state_at(seq)
        frame = frame_at(reader, seq)
        assert frame.configuration == core.configuration, seq
        assert {cid: c.state for cid, c in frame.commands.items()} == core.commands, seq
        for phase, statuses in core.statuses.items():
            for path, status in statuses.items():
                if status != "INVALID":  # a frame keeps the last status past a reset
                    assert frame.node(phase, path).status == status, (seq, phase, path)


def test_the_state_at_chosen_moments(traces: dict[str, Path]) -> None:
    reader = TraceReader.open(traces["slip"])
    failed = next(e for e in reader.of_kind("verdict") if e["data"]["verdict"] == "FAILED")
    at = frame_at(reader, failed["seq"])
    assert at.configuration == ["deliver", "evaluate"]
    assert at.commands[CLOSE].state == "FAILED"
    assert at.node("grasp", "pick/steps/close").status == "SUCCESS"  # control done, and then
    assert at.node("grasp", "pick/steps/close").command_state == "FAILED"  # judged later
    assert at.node("evaluate", "hold_cup/hold_cup.try/grasp_ok").status == "NOT_TICKED"
    later = next(e["seq"] for e in reader.of_kind("status")
                 if e["seq"] > failed["seq"] and e["data"]["phase"] == "evaluate")
    at = frame_at(reader, later)
    regrasp = "hold_cup/hold_cup.try/hold_cup.recovery/hold_cup.guard/regrasp"
    assert at.node("evaluate", "hold_cup/hold_cup.try/grasp_ok").status == "FAILURE"
    assert at.node("evaluate", "hold_cup/hold_cup.try/grasp_ok").outcome == \
        "failed: POSTCONDITION_NOT_MET"
    assert at.node("evaluate", f"{regrasp}/release/release.act").status == "RUNNING"
    assert at.node("evaluate", f"{regrasp}/close_again").status == "NOT_TICKED"
    end = frame_at(reader)
    assert end.result is not None and end.result["reason"] == "done"
    assert end.counters == {"recoveries": 1}
    assert end.node("evaluate", "hold_cup").retries == 1
    assert end.visited == ["navigate", "pick", "grasp", "watch", "deliver", "evaluate", "place",
                           "placed", "done"]


def test_one_frame_per_tick(traces: dict[str, Path]) -> None:
    reader = TraceReader.open(traces["clean"])
    steps = frames(reader)
    assert [f.tick for f in steps] == list(range(1, reader.events[-1]["tick"] + 1))
    assert [e["seq"] for f in steps for e in f.events] == [e["seq"] for e in reader]
    assert steps[-1].result is not None and steps[0].configuration == ["navigate"]


def test_a_frame_as_text(traces: dict[str, Path]) -> None:
    reader = TraceReader.open(traces["budget"])
    text = frame_text(reader.structure, frame_at(reader), width=120)
    lines = text.splitlines()
    assert lines[0] == "fetch_cup · seq 140 · tick 36 · t=1.75 s · aborted " \
                       "(aborted_budget_exhausted)"
    assert "└── ✘ pick  retry  run 2/2 · budget_exhausted: ATTEMPTS_EXHAUSTED" in text
    assert "✘ close  skill_action  #2 FAILED · failed: IK_FAILED" in text
    assert re.search(r"example/grasp.1/pick/steps/close#2 +│ grasp +│ FAILED +│ IK_FAILED", text)


def test_stepping_forward_and_back_with_keys(traces: dict[str, Path]) -> None:
    reader = TraceReader.open(traces["slip"])
    steps = frames(reader)
    keys = iter(["right", "right", "left", "n", "n", "p", "G", "right", "g", "left", "q"])
    seen: list[int] = []
    console = Console(file=open("/dev/null", "w"), width=100)  # noqa: SIM115
    replay = Replay(reader.structure, steps, console=console, keys=lambda: next(keys))

    def step(key: str) -> bool:
        more = Replay.step(replay, key)
        seen.append(replay.index)
        return more

    replay.step = step  # type: ignore[method-assign]
    assert replay.run() == 0
    console.file.close()
    charts = [i for i, f in enumerate(steps) if any(e["kind"] == "chart" for e in f.events)]
    last = len(steps) - 1
    assert seen == [1, 2, 1, charts[1], charts[2], charts[1], last, last, 0, 0, 0]


def test_the_replay_command(traces: dict[str, Path], tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(traces["clean"]), "--at", "30"]) == 0
    assert capsys.readouterr().out.startswith("fetch_cup · seq 30 · tick 8 ·")
    assert main(["replay", str(traces["clean"]), "--frames", "--width", "90"]) == 0
    out = capsys.readouterr().out
    assert out.count("fetch_cup · frame ") == TraceReader.open(traces["clean"]).events[-1]["tick"]
    assert main(["replay", str(tmp_path / "nope.jsonl")]) == 1
    assert "TRACE_NOT_FOUND" in capsys.readouterr().err
    page = tmp_path / "run.html"
    assert main(["replay", str(traces["clean"]), "--html", str(page)]) == 0
    assert page.read_text().startswith("<!DOCTYPE html>")


# ---------------------------------------------------------------------------- the browser

def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: run `make test` (it installs it with apt when "
                    "root) or `apt-get install chromium`")
    return exe


def browse(page: Path, fragment: str, tmp_path: Path, *extra: str) -> str:
    profile = tmp_path / "profile"
    proc = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", *extra,
         f"{page.as_uri()}#{fragment}"], capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode("utf-8", errors="replace")


def body(dom: str) -> dict[str, str]:
    tag = re.search(r"<body([^>]*)>", dom)
    assert tag is not None
    return dict(re.findall(r'data-(\w+)="([^"]*)"', tag.group(1)))


def node_statuses(dom: str) -> dict[str, str]:
    return dict(re.findall(r'<g id="(n\d+)" class="node[^"]*"[^>]*data-status="(\w+)"', dom))


def test_the_html_replay_steps_frames_in_a_headless_browser(traces: dict[str, Path],
                                                            tmp_path: Path) -> None:
    reader = TraceReader.open(traces["slip"])
    steps = frames(reader)
    page = tmp_path / "slip.html"
    page.write_text(replay_html(reader))
    from harness_bt.viz import drawing

    ids = {(n.phase, n.path): n.id for n in drawing(reader.structure).nodes.values()}  # folded

    def expected(i: int) -> dict[str, str]:
        return {nid: steps[i].node(phase, path).status for (phase, path), nid in ids.items()}

    dom = browse(page, "frame=3&keys=RRRL", tmp_path, "--dump-dom")  # 3 -> 6 -> 5
    shown = body(dom)
    assert {k: shown[k] for k in ("frame", "seq", "tick", "config")} == {
        "frame": "5", "seq": str(steps[5].seq), "tick": str(steps[5].tick),
        "config": ",".join(steps[5].configuration)}
    assert shown["follow"] == "1" and float(shown["zoom"]) > 1  # on the active phase
    assert shown["images"] == ""  # no frames recorded
    assert node_statuses(dom) == expected(5)
    charts = [i for i, f in enumerate(steps) if any(e["kind"] == "chart" for e in f.events)]
    dom = browse(page, "keys=EP", tmp_path, "--dump-dom")  # end, back one transition
    assert body(dom)["frame"] == str(charts[-2] if charts[-1] == len(steps) - 1 else charts[-1])
    assert node_statuses(dom) == expected(int(body(dom)["frame"]))
    seq = steps[20].seq
    dom = browse(page, f"seq={seq}", tmp_path, "--dump-dom")
    assert body(dom)["frame"] == "20"
    assert 'data-state="active"' in dom
    assert f"{steps[20].events[-1]['text']}</div>" in dom.replace("&gt;", ">")


def test_the_html_replay_paints_the_statuses(traces: dict[str, Path], tmp_path: Path) -> None:
    from PIL import Image

    page = tmp_path / "unknown.html"
    page.write_text(replay_html(traces["unknown"]))
    shot = tmp_path / "shot.png"
    browse(page, "keys=E", tmp_path, f"--screenshot={shot}", "--window-size=1400,900")
    colours = {c for _, c in Image.open(shot).convert("RGB").getcolors(1 << 20) or []}
    for fill in ("#c8e6c9", "#ffcdd2", "#e1bee7", "#ffe0b2"):  # success failure unknown halted
        rgb = tuple(int(fill[i:i + 2], 16) for i in (1, 3, 5))
        assert rgb in colours, fill


def test_stepping_in_a_real_terminal(traces: dict[str, Path]) -> None:
    """`harness replay` in a pseudo-terminal: the keys move the frame, q quits."""
    import os
    import select
    import sys

    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_bt.cli", "replay", str(traces["clean"])],
        stdin=slave, stdout=slave, stderr=slave, close_fds=True,
        env={**os.environ, "COLUMNS": "120", "LINES": "60", "TERM": "xterm"})
    os.close(slave)
    seen = b""

    def read_until(text: str, timeout: float = 30.0) -> str:
        nonlocal seen
        import time

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
                plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))
                if text in plain:
                    return plain
        raise AssertionError(f"{text!r} never appeared in:\n{seen.decode(errors='replace')}")

    try:
        total = len(frames(TraceReader.open(traces["clean"])))
        read_until(f"frame 1/{total}")
        os.write(master, b"l")
        read_until(f"frame 2/{total}")
        os.write(master, b"\x1b[C")  # right arrow
        read_until(f"frame 3/{total}")
        os.write(master, b"\x1b[D")  # left arrow
        seen = b""
        read_until(f"frame 2/{total}")
        os.write(master, b"G")
        read_until(f"frame {total}/{total}")
        os.write(master, b"q")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
