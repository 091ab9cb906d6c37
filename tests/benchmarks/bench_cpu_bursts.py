"""Why the runtime's control step offers the CPU every 0.1 ms: a burst of CPU in one process
and an unrelated round trip between two others.

A runtime's control step is milliseconds of pure CPU, 30 times a second. This measures what a
burst like that does to a raw pyzmq REQ/REP echo between two other processes on the same
machine, and what it does when the burst offers the CPU (``sched_yield``) every 0.1 ms, as the
step does. Three runs, each 20,000 echoes with a third process:

- idle (the baseline);
- burning 3 ms of CPU every 33 ms in one go;
- burning the same 3 ms but offering the CPU every 0.1 ms of it.

Run: .venv/bin/python tests/benchmarks/bench_cpu_bursts.py [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

import zmq  # noqa: E402
from bench_zmq import ECHO, pct, spawn  # noqa: E402

BURN_MS = 3.0
PERIOD_S = 1 / 30

BURNER = """
import os, sys, time
burn_s, offer_s, period_s = map(float, sys.argv[1:4])
print("ready", flush=True)
while True:
    start = last = time.perf_counter()
    while (now := time.perf_counter()) - start < burn_s:
        if now - last >= offer_s:
            os.sched_yield()
            last = time.perf_counter()
    time.sleep(period_s)
"""


def echoes(n: int, burn_s: float, offer_s: float) -> list[float]:
    """``n`` echo round trips (us) while a third process burns ``burn_s`` of CPU every control
    period, offering the CPU every ``offer_s`` of it (no burner when ``burn_s`` is 0)."""
    burner = None
    if burn_s > 0:
        burner = subprocess.Popen([sys.executable, "-c", BURNER, str(burn_s), str(offer_s),
                                   str(PERIOD_S)], stdout=subprocess.PIPE, text=True)
        burner.stdout.readline()  # type: ignore[union-attr]
    ctx = zmq.Context()
    echo, info = spawn(["-c", ECHO, "26", "92"])
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(info["bind"])
    request = [b"q" * 26, b"q" * 270]
    out: list[float] = []
    try:
        for i in range(n + 500):
            t0 = time.perf_counter_ns()
            sock.send_multipart(request)
            sock.recv_multipart()
            if i >= 500:
                out.append((time.perf_counter_ns() - t0) / 1e3)
        sock.send(b"stop")
        sock.recv()
    finally:
        sock.close(0)
        echo.wait(10)
        ctx.term()
        if burner is not None:
            burner.kill()
            burner.wait(10)
    return out


def main() -> None:
    n = 4000 if "--quick" in sys.argv else 20_000
    print(f"bench_cpu_bursts: {n} echoes per row; a third process burns {BURN_MS:g} ms of CPU "
          f"every {PERIOD_S * 1000:.1f} ms")
    print(f"   {'':44s} {'p50 us':>8s} {'p99 us':>8s} {'p99.9 us':>9s} {'x p99':>6s} "
          f"{'x p99.9':>8s}")
    base: list[float] = []
    for name, burn, offer in (("idle (baseline)", 0.0, 0.0),
                              ("3 ms bursts in one go", BURN_MS / 1000, 1.0),
                              ("3 ms bursts offering the CPU every 0.1 ms", BURN_MS / 1000,
                               0.0001)):
        xs = echoes(n, burn, offer)
        base = base or xs
        print(f"   {name:44s} {pct(xs, 0.5):8.1f} {pct(xs, 0.99):8.1f} {pct(xs, 0.999):9.1f} "
              f"{pct(xs, 0.99) / pct(base, 0.99):6.2f} {pct(xs, 0.999) / pct(base, 0.999):8.2f}")


if __name__ == "__main__":
    main()
