"""MCAP on the real clock: a run of the built-in simulator exported and read back with the
official ``mcap`` reader has its log times at the run's wall-clock start plus simulated time
(inside the run's wall-clock window), every top-level timestamp equal to its log time, and the
run's metadata (task, seed, scene, outcome) as a Metadata record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness_bt.cli import main
from harness_bt.trace import TraceReader

TREES = Path(__file__).resolve().parents[2] / "trees"


def test_an_exported_run_is_on_the_real_clock_with_its_metadata(
        capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    trace = tmp_path / "run.jsonl"
    before = time.time_ns()
    code = main(["run", str(TREES / "pick_cube.yaml"), "--seed", "3", "--trace", str(trace),
                 "--record-frames", "--json"])
    after = time.time_ns()
    summary = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and summary["episodes"][0]["reason"] == "done"
    out = tmp_path / "run.mcap"
    assert main(["export", str(trace), "-o", str(out)]) == 0
    capfd.readouterr()
    events = TraceReader.open(trace).events
    sim_end = events[-1]["mono"]  # the run's own (simulated) time at its end

    with out.open("rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        records = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
        meta = records["harness-bt run"]
        assert {k: meta[k] for k in ("task", "seed", "scene", "outcome", "reason")} == {
            "task": "pick_cube", "seed": "3", "scene": "pick_cube", "outcome": "succeeded",
            "reason": "done"}
        start = int(meta["wall_start_ns"])
        assert before <= start <= after  # the real clock, not a fixed origin
        times: dict[str, list[int]] = {}
        factory = DecoderFactory()
        for schema, channel, message in reader.iter_messages(log_time_order=True):
            times.setdefault(channel.topic, []).append(message.log_time)
            assert start <= message.log_time <= start + round(sim_end * 1e9) + 1
            assert message.publish_time == message.log_time
            if channel.message_encoding == "json":
                state = json.loads(message.data)  # the simulated time, kept in the message
                assert abs(message.log_time - start - state["t"] * 1e9) < 1e5  # 0.1 ms
                continue
            decode = factory.decoder_for(channel.message_encoding, schema)
            assert decode is not None
            decoded = decode(message.data)
            if channel.topic == "/tf":
                assert {t.timestamp.ToNanoseconds() for t in decoded.transforms} == \
                    {message.log_time}
            else:  # every other schema has a top-level timestamp: set, equal to the log time
                assert decoded.timestamp.ToNanoseconds() == message.log_time, channel.topic
    assert set(times) == {"/camera/front", "/camera/front/calibration", "/camera/front/objects",
                          "/camera/left", "/camera/left/calibration", "/camera/left/objects",
                          "/tf", "/harness/log", "/harness/tree"}
    assert all(times[t] for t in times)
    # the simulated run spans what its trace says: first and last messages
    first = min(min(v) for v in times.values())
    last = max(max(v) for v in times.values())
    assert last - first == pytest.approx((sim_end - events[0]["mono"]) * 1e9, abs=2e8)
