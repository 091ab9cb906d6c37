"""The live Foxglove server sends what the MCAP export writes: one run (the slip scenario
with painted camera frames, on a fake clock) watched by :class:`FoxgloveLive` while its
frames are recorded, then exported: the same topics, and on each the same messages (bytes and
log times), camera images included once someone watches them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_bt import FakeClock, TaskRunner
from harness_bt.export import export_mcap
from harness_bt.recording import FrameRecorder, frames_path
from harness_bt.run.settings import RunParts
from harness_bt.testing import example
from harness_bt.trace import Trace
from harness_bt.viz.live import FoxgloveLive
from harness_bt.world import scripted_perception
from tests.harness_bt.conftest import _Painted


class _Kept(FoxgloveLive):
    """The live server, keeping a copy of what it sends (topic -> [(log time, bytes)])."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: dict[str, list[tuple[int, bytes]]] = {}

    def proto(self, topic: str, message: Any, ns: int) -> None:
        super().proto(topic, message, ns)
        self.sent.setdefault(topic, []).append((ns, message.SerializeToString()))

    def json(self, topic: str, schema: Any, value: Any, ns: int) -> None:
        import json

        super().json(topic, schema, value, ns)
        self.sent.setdefault(topic, []).append(
            (ns, json.dumps(value, separators=(",", ":")).encode()))


def exported(path: Path) -> dict[str, list[tuple[int, bytes]]]:
    from mcap.reader import make_reader

    out: dict[str, list[tuple[int, bytes]]] = {}
    with path.open("rb") as fh:
        for _, channel, message in make_reader(fh).iter_messages(log_time_order=False):
            out.setdefault(channel.topic, []).append((message.log_time, bytes(message.data)))
    return out


def test_the_live_server_sends_what_the_export_writes(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    clock = FakeClock()
    runtime, _ = example._scenario("slip", clock)
    trace = Trace(path, clock=clock)
    recorder = FrameRecorder(frames_path(path), trace, rate_hz=4.0)
    live = _Kept(port=0, image_hz=4.0)
    live.start()
    try:
        live.subscriptions.watched = lambda topic: True  # type: ignore[method-assign]
        runner = TaskRunner(example.fetch_cup_task(), bridge=_Painted(runtime),  # type: ignore[arg-type]
                            clock=clock, skills=example.example_skills(), run_id="example",
                            trace=trace, parts=RunParts(
                                perception=live.perception(recorder.wrap(scripted_perception))))
        live.attach(runner, 0)
        while runner.phase != "finished":
            runner.tick()
            live.ticked(runner)
            clock.sleep(runner.tick_period_s)
        runner.close()
        recorder.close()
    finally:
        live.close()
    export_mcap(path, tmp_path / "run.mcap")
    written = exported(tmp_path / "run.mcap")
    assert set(live.sent) == set(written) == {
        "/camera/front", "/camera/front/calibration", "/camera/front/objects", "/tf",
        "/harness/log", "/harness/tree"}
    for topic in sorted(written):
        assert live.sent[topic] == written[topic], topic
