"""ROS 2 bridge benchmark: ``harness run trees/pick.yaml --runtime ros2://D`` against
``harness sim serve --ros2 --seed K`` on seeded layouts, beside the in-process runtime on the
same seeds (the baseline, measured in the same run). Prints, per seed and in total: the
harness's verdict, the simulator's ground truth (``/harness/sim/truth``: the target in the
hand), false successes (the harness says done, the truth says not held), commands started
more than once (the robot's journal), and the wall time of each run (medians, and the ratio
ROS 2 / in-process). Asserts nothing about speed.

Run: .venv/bin/python tests/benchmarks/bench_ros2.py [--seeds N] [--first K] [--transport T]
``--transport zenoh`` runs the same over Zenoh (``harness sim serve --ros2 --zenoh
tcp/127.0.0.1:PORT``, ``--runtime zenoh://127.0.0.1:PORT?domain=D``).
Everything stays on 127.0.0.1 (the loopback Cyclone DDS configuration; Zenoh on a loopback
endpoint without scouting).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runtime_bridge.host.record_log import read_rows  # noqa: E402
from runtime_bridge.ros2.dds import LOOPBACK_CONFIG, Participant  # noqa: E402
from runtime_bridge.ros2.types import RosTypes  # noqa: E402
from runtime_bridge.ros2.zenoh_transport import ZenohEndpoints, ZenohSession  # noqa: E402

os.environ["CYCLONEDDS_URI"] = LOOPBACK_CONFIG
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TASK = str(ROOT / "trees" / "pick.yaml")
DOMAIN = 77
ZENOH_ENDPOINT = "tcp/127.0.0.1:7487"


def harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness_bt.cli", *args]


def run_json(argv: list[str]) -> tuple[dict[str, Any], float]:
    began = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300)
    wall = time.monotonic() - began
    try:
        return json.loads(out.stdout), wall
    except json.JSONDecodeError:
        return {"error": (out.stderr or out.stdout)[-400:]}, wall


def serve(seed: int, journal: Path, transport: str) -> subprocess.Popen[str]:
    over = ("--zenoh", ZENOH_ENDPOINT) if transport == "zenoh" else ()
    proc = subprocess.Popen(harness("sim", "serve", "--ros2", "--ros2-domain", str(DOMAIN),
                                    "--ros2-journal", str(journal), "--ros2-truth",
                                    "--scene", "pick_cube", "--seed", str(seed), *over),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=ENV, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            return proc
    raise SystemExit(f"harness sim serve --ros2 exited with {proc.wait()}")


def truth(reader: Any) -> dict[str, Any]:
    latest: dict[str, Any] = {}
    for _ in range(300):
        got = reader.take(32)
        if got:
            latest = json.loads(got[-1].data)
            break
        time.sleep(0.01)
    return latest


def outcome(report: dict[str, Any]) -> str:
    episodes = report.get("episodes") or [{}]
    return f"{episodes[0].get('outcome', 'error')}/{episodes[0].get('reason', '-')}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--transport", choices=("dds", "zenoh"), default="dds")
    args = parser.parse_args()
    types = RosTypes()
    url = f"ros2://{DOMAIN}" if args.transport == "dds" else \
        f"zenoh://{ZENOH_ENDPOINT.removeprefix('tcp/')}?domain={DOMAIN}"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first, args.first + args.seeds):
            journal = Path(tmp) / f"robot-{seed}.db"
            proc = serve(seed, journal, args.transport)
            participant: Any = Participant(DOMAIN, types) if args.transport == "dds" else \
                ZenohSession(DOMAIN, types, ZenohEndpoints(connect=(ZENOH_ENDPOINT,)))
            try:
                reader = participant.reader("/harness/sim/truth", "std_msgs/msg/String")
                report, wall = run_json(harness("run", TASK, "--runtime", url, "--json"))
                reader.take(1000)  # what was published during the run: not the end state
                seen = truth(reader)
            finally:
                participant.close()
                proc.terminate()
                proc.wait(30)
            started = Counter(cid for cid, *_, events in read_rows(str(journal)).values()
                              for e in json.loads(events) if e["kind"] == "started")
            base, base_wall = run_json(harness("run", TASK, "--seed", str(seed), "--json"))
            done = outcome(report).startswith("succeeded")
            held = seen.get("held") == [seen.get("target", "red_cube")]
            rows.append({"seed": seed, "ros2": outcome(report), "held": held,
                         "false_success": done and not held, "wall": wall,
                         "twice": sum(1 for n in started.values() if n > 1),
                         "commands": len(started), "inproc": outcome(base),
                         "inproc_sim": (base.get("episodes") or [{}])[0].get("sim_success"),
                         "inproc_wall": base_wall})
            r = rows[-1]
            print(f"seed {seed:3d}  {args.transport:<5} {r['ros2']:<28} "
                  f"truth held={r['held']!s:<5} "
                  f"cmds {r['commands']:2d} started>1: {r['twice']}  {r['wall']:6.1f} s   "
                  f"in-process {r['inproc']:<28} sim={r['inproc_sim']!s:<5} "
                  f"{r['inproc_wall']:6.1f} s", flush=True)
    n = len(rows)
    ok = sum(r["ros2"].startswith("succeeded") for r in rows)
    base_ok = sum(r["inproc"].startswith("succeeded") for r in rows)
    med, base_med = (statistics.median(r[k] for r in rows) for k in ("wall", "inproc_wall"))
    print(f"\nROS 2 over {args.transport}: {ok}/{n} succeeded ({100.0 * ok / n:.1f} %), "
          "false successes "
          f"{sum(r['false_success'] for r in rows)}, commands started more than once "
          f"{sum(r['twice'] for r in rows)}")
    print(f"in-process (baseline, same seeds): {base_ok}/{n} succeeded "
          f"({100.0 * base_ok / n:.1f} %)")
    print(f"wall per run, median: ROS 2 {med:.1f} s, in-process {base_med:.1f} s, ratio "
          f"{med / base_med:.2f}x (ROS 2 runs on wall-clock time at the robot's 30 Hz; "
          "in-process steps the simulator as fast as it can)")


if __name__ == "__main__":
    main()
