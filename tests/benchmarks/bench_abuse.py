"""Abuse benchmark: what hostile requests cost the servers, against a baseline measured in the
same run.

1. ``harness sim serve`` in its own process: the median time of ``GET /harness/info`` (the
   baseline), of the ~130- and ~180-byte ``/reset`` bodies whose worker ids are tuples built
   from shared references at depth 26 and 40 (refused 400), and of ``/harness/info`` asked
   while a hostile body is in flight; the server's resident memory before and after all the
   hostile requests; and how long the server takes to end after SIGINT.
2. The policy server in its own process: the growth of its peak resident memory while 16
   connections each send two 8 MiB observations, with the bytes-in-flight cap (16 MiB) and with
   the cap lifted (as before the cap existed), and the ratio of the two.

    python tests/benchmarks/bench_abuse.py             # 5 rounds
    python tests/benchmarks/bench_abuse.py --rounds 9
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness_bt.policy.wire import pack, unpack_map  # noqa: E402
from tests import hostile  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
MIB = 1 << 20


def status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def sim_server(rounds: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "harness_bt.cli", "sim", "serve", "--port",
                             "0", "--camera", "front:32x24", "--episodes", "1", "--no-shm"],
                            stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    assert proc.stdout is not None
    url = proc.stdout.readline().rsplit("; ", 1)[1].split(" ", 1)[0]
    http = httpx.Client(base_url=url, timeout=120)
    http.get("/harness/info")
    rss_before = status(proc.pid, "VmRSS")
    bodies = {26: hostile.reset_with_shared_tuple(26), 40: hostile.reset_with_shared_tuple(40)}
    times: dict[str, list[float]] = {"info": [], "depth 26": [], "depth 40": [],
                                     "info during attack": []}
    codes = set()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        for _ in range(rounds):
            times["info"].append(timed(lambda: http.get("/harness/info")))
            for depth, body in bodies.items():
                start = time.perf_counter()
                r = http.post("/reset", content=body)
                times[f"depth {depth}"].append(time.perf_counter() - start)
                codes.add(r.status_code)
            attack = pool.submit(http.post, "/reset", content=bodies[26])
            times["info during attack"].append(timed(lambda: http.get("/harness/info")))
            codes.add(attack.result().status_code)
    rss_after = status(proc.pid, "VmRSS")
    http.close()
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    stop_s = time.perf_counter() - start
    base = statistics.median(times["info"])
    print(f"harness sim serve ({rounds} rounds; bodies {len(bodies[26])} and {len(bodies[40])} "
          f"bytes; answered {sorted(codes)})")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:<20} median {med * 1000:8.1f} ms   x{med / base:6.1f} of /harness/info")
    hostile_requests = 3 * rounds
    print(f"  resident memory {rss_before / MIB:.0f} -> {rss_after / MIB:.0f} MiB over "
          f"{hostile_requests} hostile requests "
          f"({(rss_after - rss_before) / hostile_requests / MIB:+.2f} MiB each)")
    print(f"  SIGINT to exit: {stop_s:.2f} s (exit code {proc.returncode})")


POLICY = """
import json, os, threading
from policies.server import PolicyServer, PolicyServerSettings
class Echo:
    def infer(self, observation):
        return {{"size": len(observation["image"])}}
s = PolicyServer(Echo, PolicyServerSettings(max_message_bytes={frame},
                 max_bytes_in_flight={in_flight}, max_connections=16, busy_wait_s=120))
s.start()
print(json.dumps({{"port": s.port, "pid": os.getpid()}}), flush=True)
threading.Event().wait()
"""


def policy_peak(frame: int, in_flight: int) -> int:
    proc = subprocess.Popen([sys.executable, "-c", POLICY.format(frame=frame,
                                                                  in_flight=in_flight)],
                            stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    base = status(ready["pid"], "VmRSS")
    message = pack({"image": b"\x01" * (frame - 64)})

    def client(_: int) -> None:
        from websockets.sync.client import connect

        with connect(f"ws://127.0.0.1:{ready['port']}", max_size=None) as ws:
            ws.recv()
            for _ in range(2):
                ws.send(message)
                unpack_map(ws.recv(), "action")

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(client, range(16)))
    peak = status(ready["pid"], "VmHWM")
    proc.kill()
    proc.wait(30)
    return peak - base


def policy_server() -> None:
    frame = 8 * MIB
    capped = policy_peak(frame, 16 * MIB)
    lifted = policy_peak(frame, 1 << 40)
    print("policy server: 16 connections x 2 observations of 8 MiB")
    print(f"  peak RSS growth, cap 16 MiB in flight: {capped / MIB:6.0f} MiB")
    print(f"  peak RSS growth, cap lifted:           {lifted / MIB:6.0f} MiB   "
          f"(capped/lifted {capped / lifted:.2f})")
    print(f"  SIGINT to exit with a client that ignores the close: {policy_stop_s():.2f} s")


def policy_stop_s() -> float:
    """Seconds from SIGINT to exit of ``harness policy serve`` with a client that never reads."""
    import socket

    proc = subprocess.Popen([sys.executable, "-m", "harness_bt.cli", "policy", "serve",
                             "--policy", "pick", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=ENV, cwd=ROOT)
    assert proc.stdout is not None
    port = int(json.loads(proc.stdout.readline())["url"].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as deaf:
        deaf.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     b"Sec-WebSocket-Version: 13\r\n\r\n")
        deaf.recv(4096)
        start = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sim_server(args.rounds)
    policy_server()


if __name__ == "__main__":
    main()
