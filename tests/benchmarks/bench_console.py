"""Console benchmark: what watching a run from a browser costs the run, and what a browser gets.

1. The same run (``pick_cube`` on the built-in simulator, same seed, through
   ``run_episodes`` as ``harness run`` does) without a console, and with the console serving
   two clients: one that reads everything as a browser does, and one that connected and then
   stalled (it never reads; its socket buffer is small). Rounds alternate the two, so both see
   the same machine. Printed: the medians of the run's wall time and decision latency p99,
   and their ratios (target <= 1.10); the graph updates per second that reached the reading
   client (target >= 10), its bytes, and how many camera images it got.
2. Bytes per update against tree size: a run of a tree of 10 nodes and one of 1,000 nodes,
   the same number of nodes changing per tick: the mean size of a state update (the delta a
   client is sent) should follow what changed, not the size of the tree.

    python tests/benchmarks/bench_console.py               # 3 rounds
    python tests/benchmarks/bench_console.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness_bt.authoring import load_task  # noqa: E402
from harness_bt.authoring.scenes import with_scene  # noqa: E402
from harness_bt.console import Console, ConsoleSettings  # noqa: E402
from harness_bt.console.feed import Feed, delta  # noqa: E402
from harness_bt.run.episodes import RunReport, percentile, run_episodes  # noqa: E402
from harness_bt.runtime.episodes import RunOptions  # noqa: E402
from runtime_bridge.inproc import open_runtime  # noqa: E402

TASK = ROOT / "trees" / "pick_cube.yaml"
CONSOLE_OPTIONS: dict[str, Any] = {}


#: A client that reads everything, as a browser does, in its own process (as a browser is):
#: counts state updates (and when they came), bytes and images; prints them as JSON once the
#: run's result arrived.
READER = r"""
import json, sys, time, websocket
ws = websocket.create_connection(sys.argv[1], timeout=120)
print("ready", flush=True)
states, size, images = [], 0, 0
while True:
    m = ws.recv()
    if isinstance(m, bytes):
        images += 1; size += len(m); continue
    size += len(m.encode()); d = json.loads(m)
    if d["type"] == "state":
        states.append(time.time())
        if d["d"].get("result"):
            break
print(json.dumps({"states": states, "bytes": size, "images": images}), flush=True)
ws.close()
"""


def one_run(seed: int, with_console: bool) -> tuple[RunReport, dict[str, Any]]:
    task = load_task(TASK)
    options = with_scene(RunOptions(task=task.name, seed=seed, scene=task.scene,
                                    params=dict(task.params)))
    runtime = open_runtime(options)
    extra: dict[str, Any] = {}
    console: Console | None = None
    reader: subprocess.Popen[str] | None = None
    stalled: Any = None
    try:
        if with_console:
            import websocket

            console = Console(task.structure(), ConsoleSettings(**CONSOLE_OPTIONS))
            console.start()
            stalled = websocket.create_connection(
                f"ws://127.0.0.1:{console.port}/ws", timeout=60,
                sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),))
            reader = subprocess.Popen([sys.executable, "-c", READER,
                                       f"ws://127.0.0.1:{console.port}/ws"],
                                      stdout=subprocess.PIPE, text=True)
            assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        began, began_wall = time.perf_counter(), time.time()
        report = run_episodes(task, options, runtime=runtime, watch=console)
        wall = time.perf_counter() - began
        if reader is not None:
            out, _ = reader.communicate(timeout=60)
            got = json.loads(out)
            during = [t for t in got["states"] if began_wall <= t <= began_wall + wall]
            extra = {"updates": len(got["states"]), "rate": len(during) / wall,
                     "bytes": got["bytes"], "images": got["images"]}
        extra["wall"] = wall
        return report, extra
    finally:
        if reader is not None and reader.poll() is None:
            reader.kill()
            reader.wait()
        if stalled is not None:
            stalled.close()
        if console is not None:
            console.close()
        runtime.close()


def synthetic(nodes: int) -> dict[str, Any]:
    """A task structure: one phase whose tree is a sequence of ``nodes - 1`` conditions."""
    kids = [f"root/c{i}" for i in range(nodes - 1)]
    tree = [{"path": "root", "name": "root", "type": "sequence", "kind": "composite",
             "class": "Sequence", "children": kids, "params": {}}]
    tree += [{"path": p, "name": p[5:], "type": "blackboard_check", "kind": "condition",
              "class": "Check", "children": [], "params": {}} for p in kids]
    return {"task": f"tree{nodes}", "phases": [{"id": "work", "kind": "atomic",
                                                "transitions": [{"event": "succeeded",
                                                                 "target": "done"}]},
                                               {"id": "done", "kind": "final"}],
            "initial": "work", "budget": {}, "trees": {"work": tree}}


def bytes_per_update(nodes: int, ticks: int = 200, changing: int = 3) -> tuple[float, float]:
    """Mean bytes of a state delta, and of a full state, over ``ticks`` ticks in which
    ``changing`` nodes change status each tick."""
    structure = synthetic(nodes)
    feed = Feed(structure)
    paths = [n["path"] for n in structure["trees"]["work"]]
    seq = 0

    def event(kind: str, tick: int, **data: Any) -> None:
        nonlocal seq
        seq += 1
        feed.on_event({"seq": seq, "kind": kind, "tick": tick, "mono": tick * 0.05,
                       "wall": 0.0, "run_id": "b", "command_id": None, "data": data})

    event("task", 0, **structure)
    event("phase_enter", 1, phase="work", activation=1, tree=paths)
    feed.drain()
    previous = feed.build()
    sizes, fulls = [], []
    for tick in range(2, ticks + 2):
        changes = {}
        for k in range(changing):
            path = paths[1 + (tick * changing + k) % (len(paths) - 1)]
            status = ["INVALID", "RUNNING", "SUCCESS"][tick % 3]
            changes[path] = ["INVALID", status]
        event("status", tick, phase="work", changes=changes)
        feed.drain()
        state = feed.build()
        sizes.append(len(json.dumps(delta(previous, state), separators=(",", ":"))))
        fulls.append(len(json.dumps(state, separators=(",", ":"))))
        previous = state
    return statistics.mean(sizes), statistics.mean(fulls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    rows: dict[bool, list[tuple[RunReport, dict[str, Any]]]] = {False: [], True: []}
    for r in range(args.rounds):
        for with_console in ((False, True) if r % 2 == 0 else (True, False)):
            report, extra = one_run(args.seed, with_console)
            e = report.episodes[0]
            lat = report.to_dict()["decision_latency_ms"]
            print(f"round {r + 1} {'console' if with_console else 'alone  '}: {e.reason}, "
                  f"{e.sim_steps} steps, wall {extra['wall']:.2f} s, decision p99 "
                  f"{lat['p99']} ms" + (f", {extra['updates']} updates ({extra['rate']:.1f}/s),"
                                        f" {extra['bytes'] / 1e3:.0f} kB, {extra['images']} "
                                        "images" if with_console else ""), flush=True)
            rows[with_console].append((report, extra))

    def med(with_console: bool, key: str) -> float:
        if key == "p99":  # over every decision of every round
            pooled = [v * 1000 for rep, _ in rows[with_console]
                      for v in rep.decision_latency_s()]
            return float(percentile(pooled, 99) or 0.0)
        return statistics.median(float(x[key]) for _, x in rows[with_console])

    wall = med(True, "wall") / med(False, "wall")
    p99 = med(True, "p99") / med(False, "p99")
    rate = med(True, "rate")
    print(f"\nrun wall time, console (1 reading + 1 stalled client) / alone: {wall:.3f}x "
          f"(median {med(True, 'wall'):.2f} s vs {med(False, 'wall'):.2f} s; target <= 1.10)")
    print(f"decision latency p99 (every decision of every round), console / alone: {p99:.3f}x "
          f"({med(True, 'p99'):.2f} ms vs {med(False, 'p99'):.2f} ms; target <= 1.10)")
    print(f"graph updates reaching the reading client: {rate:.1f} per second (target >= 10)")
    small, small_full = bytes_per_update(10)
    big, big_full = bytes_per_update(1000)
    print(f"bytes per update, 3 nodes changing per tick: 10-node tree {small:.0f} B "
          f"(full state {small_full:.0f} B), 1,000-node tree {big:.0f} B (full state "
          f"{big_full:.0f} B): ratio {big / small:.2f}x for a tree 100x larger")
    ok = wall <= 1.10 and p99 <= 1.10 and rate >= 10 and big / small < 2.0
    print("all targets met" if ok else "NOT all targets met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
