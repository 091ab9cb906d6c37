"""Foxglove live benchmark: what serving a run over Foxglove's WebSocket protocol costs it.

The same run (``pick_cube`` on the built-in simulator, same seed, 240 steps, through
``run_episodes`` as ``harness run`` does) three ways, rounds alternating so every way sees
the same machine: without a server (the baseline), with ``FoxgloveLive`` serving and no
client, and with a client in its own process subscribed to every channel (so every camera
image is compressed and sent). Printed: the medians of the run's wall time and of its
decision latency p99, their ratios to the baseline, and what the client received (messages
per topic, bytes).

    python tests/benchmarks/bench_foxglove.py               # 3 rounds
    python tests/benchmarks/bench_foxglove.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness_bt.authoring import load_task  # noqa: E402
from harness_bt.authoring.scenes import with_scene  # noqa: E402
from harness_bt.run.episodes import percentile, run_episodes  # noqa: E402
from harness_bt.runtime.episodes import RunOptions  # noqa: E402
from harness_bt.runtime.settings import RuntimeSettings  # noqa: E402
from harness_bt.viz.live import FoxgloveLive  # noqa: E402
from runtime_bridge.inproc import open_runtime  # noqa: E402

TASK = ROOT / "trees" / "pick_cube.yaml"
STEPS = 240

#: A client in its own process: subscribes to every channel advertised (waiting for the
#: first camera's, then each new one as it comes), then counts messages and bytes per topic
#: until the server closes.
CLIENT = r"""
import json, struct, sys, websocket
ws = websocket.create_connection(sys.argv[1], subprotocols=["foxglove.sdk.v1"], timeout=300)
channels, subscribed, counts, size = {}, False, {}, 0
try:
    while True:
        m = ws.recv()
        if isinstance(m, str):
            d = json.loads(m)
            if d["op"] == "advertise":
                channels.update({c["id"]: c["topic"] for c in d["channels"]})
                if subscribed:  # a camera seen later: subscribe to its channels at once
                    ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                        {"id": c["id"], "channelId": c["id"]} for c in d["channels"]]}))
                elif any(t.endswith("/objects") for t in channels.values()):
                    subscribed = True
                    ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                        {"id": c, "channelId": c} for c in channels]}))
            continue
        if not m:
            break
        size += len(m)
        if m[:1] == b"\x01":
            topic = channels.get(struct.unpack_from("<I", m, 1)[0], "?")
            counts[topic] = counts.get(topic, 0) + 1
except Exception:
    pass
print(json.dumps({"counts": counts, "bytes": size}), flush=True)
"""


def one_run(seed: int, way: str) -> dict[str, Any]:
    task = load_task(TASK)
    options = with_scene(RunOptions(task=task.name, seed=seed, scene=task.scene,
                                    params=dict(task.params),
                                    runtime_settings=RuntimeSettings(num_steps=STEPS)))
    runtime = open_runtime(options)
    live = client = None
    out: dict[str, Any] = {}
    try:
        if way != "none":
            live = FoxgloveLive(port=0, wait_for_client=way == "client")
            live.start()
        if way == "client":
            assert live is not None
            client = subprocess.Popen([sys.executable, "-c", CLIENT, live.url],
                                      stdout=subprocess.PIPE, text=True)
        report = run_episodes(task, options, runtime=runtime, watch=live)
    finally:
        runtime.close()
        if live is not None:
            live.close()
    if client is not None:
        text, _ = client.communicate(timeout=120)
        out = json.loads(text.strip().splitlines()[-1])
    episode = report.episodes[0]
    lat = [v * 1000 for v in episode.decision_latency_s]
    return {"wall": episode.wall_s, "p99": percentile(lat, 99) or 0.0,
            "reason": episode.reason, **out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    ways = ("none", "server", "client")
    results: dict[str, list[dict[str, Any]]] = {w: [] for w in ways}
    for r in range(args.rounds):
        order = ways if r % 2 == 0 else tuple(reversed(ways))
        for way in order:
            results[way].append(one_run(args.seed, way))
    base_wall = statistics.median(x["wall"] for x in results["none"])
    base_p99 = statistics.median(x["p99"] for x in results["none"])
    print(f"pick_cube, seed {args.seed}, {STEPS} steps, {args.rounds} rounds (medians)")
    for way in ways:
        wall = statistics.median(x["wall"] for x in results[way])
        p99 = statistics.median(x["p99"] for x in results[way])
        print(f"  {way:7s} wall {wall:6.2f} s ({wall / base_wall:4.2f}x)   decision p99 "
              f"{p99:6.2f} ms ({p99 / base_p99 if base_p99 else float('nan'):4.2f}x)   "
              f"ended {results[way][0]['reason']}")
    got = results["client"][-1]
    print(f"  the client received {got.get('bytes', 0) / 1e6:.2f} MB: "
          + ", ".join(f"{t} {n}" for t, n in sorted(got.get("counts", {}).items())))


if __name__ == "__main__":
    main()
