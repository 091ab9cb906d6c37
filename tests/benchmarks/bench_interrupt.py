"""How long each server takes to end after Ctrl-C (SIGINT) and after SIGTERM, from the signal
to the process's exit, each started fresh in its own process; beside it, the baseline of the
same run: a Python process that does nothing but wait, ended the same way (what any process
start-up and exit costs here). The target (issue 25): every server ends within a second.

    python tests/benchmarks/bench_interrupt.py             # 5 rounds
    python tests/benchmarks/bench_interrupt.py --rounds 9
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = [sys.executable, "-m", "harness_bt.cli"]
BASELINE = [sys.executable, "-c", "import json, signal, sys, threading\n"
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
            "print(json.dumps({'ready': True}), flush=True)\n"
            "try:\n    threading.Event().wait()\nexcept KeyboardInterrupt:\n    sys.exit(130)\n"]
SERVERS = {
    "baseline (an idle Python process)": BASELINE,
    "harness policy serve": [*HARNESS, "policy", "serve", "--port", "0"],
    "harness runtime serve": [*HARNESS, "runtime", "serve", "--bind", "tcp://127.0.0.1:*",
                              "--telemetry", "", "--journal", ""],
    "harness runtime broker": [*HARNESS, "runtime", "broker", "--bind", "tcp://127.0.0.1:*"],
    "harness sim serve": [*HARNESS, "sim", "serve", "--port", "0", "--camera", "front:32x24",
                          "--episodes", "1", "--no-shm"],
}


def stop_time(argv: list[str], sig: signal.Signals) -> tuple[float, int]:
    """Seconds from the signal to the exit, and the exit status."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=ROOT)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the ready line (JSON) or the simulator's banner
            if line.startswith("{") or line.startswith("harness sim:"):
                break
        time.sleep(0.5)  # serving, not starting
        start = time.perf_counter()
        proc.send_signal(sig)
        status = proc.wait(60)
        return time.perf_counter() - start, status
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for name, argv in SERVERS.items():
        for sig in (signal.SIGINT, signal.SIGTERM):
            times, statuses = [], set()
            for _ in range(args.rounds):
                seconds, status = stop_time(argv, sig)
                times.append(seconds)
                statuses.add(status)
            rows.append({"server": name, "signal": sig.name, "median_s": statistics.median(times),
                         "max_s": max(times), "statuses": sorted(statuses)})
    base = {r["signal"]: r["median_s"] for r in rows if r["server"].startswith("baseline")}
    print(f"{'server':36} {'signal':8} {'median':>8} {'max':>8} {'x baseline':>10}  exit")
    for r in rows:
        ratio = r["median_s"] / base[r["signal"]] if base[r["signal"]] else float("nan")
        verdict = "ok" if r["median_s"] <= 1.0 else "over 1 s"
        print(f"{r['server']:36} {r['signal']:8} {r['median_s']:7.3f}s {r['max_s']:7.3f}s "
              f"{ratio:9.1f}x  {r['statuses']}  {verdict}")
    print(json.dumps({"rounds": args.rounds, "rows": rows}))


if __name__ == "__main__":
    main()
