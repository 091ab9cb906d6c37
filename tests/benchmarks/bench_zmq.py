"""ZeroMQ runtime benchmarks. Prints figures and ratios against baselines measured in the same
run; asserts nothing about speed.

1. dispatch-to-acknowledge round trip (p50 / p99) between two processes, versus a raw pyzmq
   REQ/REP echo with the same frame sizes (targets: <= 1.5x at p50, <= 2x at p99), back to back
   and paced at a harness's rate; then, for reference only, a runtime whose journal is in memory
   (it survives nothing) against the echo again;
2. broker throughput: requests per second routed to a remote worker, and answered by the
   runtime's local service;
3. 100 concurrent clients x 1,000 commands: nothing lost, nothing run twice, broker memory.

Run: .venv/bin/python tests/benchmarks/bench_zmq.py [--quick] [--round-trip] [--repeats N]
(``--round-trip``: part 1 only; it takes under a minute. ``--repeats N``: the back-to-back round
trip N times, each with a fresh runtime, then the medians over the N and the load average)
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import zmq  # noqa: E402

from harness_bt.runtime.bridge import RuntimeState  # noqa: E402
from runtime_bridge.host.record_log import read_rows  # noqa: E402
from runtime_bridge.zmq import (  # noqa: E402
    LazyPirateClient,
    Message,
    MessageType,
    WireCode,
    WireError,
    ZmqBridge,
    ZmqBridgeConfig,
    encode,
)
from tests.runtime_bridge.executors import command  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def spawn(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True,
                            env=env or ENV, cwd=ROOT)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line:
        raise SystemExit(f"{args} exited with {proc.wait()} before it was ready")
    return proc, json.loads(line)


def serve(tmp: str, *extra: str, env: dict[str, str] | None = None,
          journal: bool = True) -> tuple[subprocess.Popen, dict]:
    return spawn(["-m", "runtime_bridge.zmq", "serve", "--bind", "tcp://127.0.0.1:*",
                  "--telemetry", "", "--journal",
                  os.path.join(tmp, "runtime.db") if journal else "",
                  "--executors", "tests.runtime_bridge.executors:factory", "--lease-ms", "0",
                  *extra], env)


ECHO = """
import json, sys, zmq
ctx = zmq.Context(); s = ctx.socket(zmq.REP); s.setsockopt(zmq.LINGER, 0)
port = s.bind_to_random_port("tcp://127.0.0.1")
reply = [b"r" * int(n) for n in sys.argv[1:]]
print(json.dumps({"bind": f"tcp://127.0.0.1:{port}"}), flush=True)
while True:
    msg = s.recv_multipart()
    if msg == [b"stop"]:
        s.send(b""); break
    s.send_multipart(reply)
"""

WORKER = """
import json, sys, threading
sys.path.insert(0, sys.argv[2])
from runtime_bridge.zmq import FunctionService, ServiceWorker, WorkerConfig
w = ServiceWorker(FunctionService("echo", lambda req: dict(req.body)),
                  WorkerConfig(broker=sys.argv[1]))
w.start(); print(json.dumps({"ready": True}), flush=True)
sys.stdin.read(); w.stop()
"""


BARE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from runtime_bridge.zmq import Broker, BrokerConfig

class Ack:  # answers a DISPATCH with a fixed ack: no command decoded, no host, no journal
    name = "manip"

    def handle(self, request):
        return request.reply({"command_id": request.command_id, "accepted": True,
                              "state": "PENDING", "reason": "ACCEPTED", "duplicate": False})

b = Broker(BrokerConfig(bind="tcp://127.0.0.1:*"), services=[Ack()])
print(json.dumps({"bind": b.start()}), flush=True)
import time
while True:  # until terminated
    time.sleep(3600)
"""


def server_python(n: int = 2000) -> tuple[float, float]:
    """The runtime's own Python per DISPATCH, in this process, no sockets: decode the request
    frames, the service (command validated, host submit, record journaled to a log file),
    encode the ack; and the client's encode of the request plus decode of the ack. Medians, us."""
    from harness_bt.clock import SystemClock
    from runtime_bridge.backends.kinematic import KinematicBackend
    from runtime_bridge.host import ExecutorHost, HostConfig
    from runtime_bridge.host.record_log import LoggedRuntimeJournal
    from runtime_bridge.zmq import RuntimeService, decode
    from runtime_bridge.zmq.service import serve_one
    from tests.runtime_bridge import executors
    with tempfile.TemporaryDirectory() as tmp:
        host = ExecutorHost(KinematicBackend(dt=1 / 30), executors.factory,
                            journal=LoggedRuntimeJournal(os.path.join(tmp, "rt.db")),
                            clock=SystemClock(), config=HostConfig(lease_s=None))
        service = RuntimeService(host)
        cmds = [command(f"s-{i}", "wait", steps=0) for i in range(n)]
        server, client = [], []
        try:
            for i, cmd in enumerate(cmds, start=1):
                t0 = time.perf_counter_ns()
                frames = encode(Message(MessageType.DISPATCH, i, "manip", cmd.command_id,
                                        {"command": cmd.wire, "start_budget_ms": 5000.0}))
                t1 = time.perf_counter_ns()
                reply = encode(serve_one(service, decode([bytes(f) for f in frames])))
                t2 = time.perf_counter_ns()
                decode([bytes(f) for f in reply])
                t3 = time.perf_counter_ns()
                server.append((t2 - t1) / 1e3)
                client.append((t1 - t0 + t3 - t2) / 1e3)
        finally:
            host.close()
    return statistics.median(server), statistics.median(client)


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def round_trips(n: int, rounds: int, warmup: int = 200, pace_hz: float | None = None
                ) -> dict[str, float]:
    """``rounds`` rounds of ``n`` samples, each sample an echo, a ZmqBridge dispatch and a bare
    DISPATCH request back to back, so the three see the same machine; ratios per round (their
    median is the figure: a shared machine's bad second moves one round, not the verdict) and
    over all samples pooled.

    Back to back (``pace_hz`` None), the runtime starts and finishes every command it
    acknowledges, some 2,000 a second, so each 30 Hz control step runs dozens of them while
    requests arrive. Paced, samples start ``pace_hz`` times a second: a harness's rate (it
    dispatches a command and waits for it), and what the runtime's control loop then carries.
    Returns the figures of the echo and the runtime DISPATCH (p50 / p90 in us, and the medians
    of the per-round ratios)."""
    with tempfile.TemporaryDirectory() as tmp:
        proc, info = serve(tmp, "--control-hz", "30")
        ctx = zmq.Context()
        try:
            bridge = ZmqBridge(ZmqBridgeConfig(endpoint=info["bind"], telemetry="",
                                               timeout_s=2.0), context=ctx)
            total = rounds * n + warmup
            cmds = [command(f"rt-{i}", "wait", steps=0) for i in range(total + 1)]
            sample = Message(MessageType.DISPATCH, 1, "manip", cmds[0].command_id,
                             {"command": cmds[0].to_wire(), "start_budget_ms": 5000.0})
            req_sizes = [len(f) for f in encode(sample)]
            bridge.dispatch(cmds[0])
            client = bridge.client
            ack_reply = client.request(sample)  # a duplicate: same size as a first ack
            rep_sizes = [len(f) for f in encode(ack_reply)]
            echo, einfo = spawn(["-c", ECHO, *map(str, rep_sizes)])
            raw = ctx.socket(zmq.REQ)
            raw.setsockopt(zmq.LINGER, 0)
            raw.connect(einfo["bind"])
            payload = [b"q" * k for k in req_sizes]
            t_raw, t_bridge, t_proto = [], [], []
            next_at = [time.perf_counter()]

            def pace() -> int:
                """Paced: wait for this request's turn (each of the three waits alike, so
                each starts as idle as the others); the clock after."""
                if pace_hz is not None:
                    next_at[0] += 1.0 / (3 * pace_hz)
                    time.sleep(max(0.0, next_at[0] - time.perf_counter()))
                return time.perf_counter_ns()

            for i in range(1, total + 1):
                pre = Message(MessageType.DISPATCH, 0, "manip", f"p-{i}", {
                    "command": {**cmds[i].to_wire(), "command_id": f"p-{i}"},
                    "start_budget_ms": 5000.0})
                t0 = pace()
                raw.send_multipart(payload)
                raw.recv_multipart()
                t1 = time.perf_counter_ns()
                t2 = pace()
                bridge.dispatch(cmds[i])
                t3 = time.perf_counter_ns()
                t4 = pace()
                client.request(pre)
                t5 = time.perf_counter_ns()
                if i > warmup:
                    t_raw.append((t1 - t0) / 1e3)
                    t_bridge.append((t3 - t2) / 1e3)
                    t_proto.append((t5 - t4) / 1e3)
            bridge.close()
            proc.terminate()
            proc.wait(10)
            refs: dict[str, tuple[list[float], list[float]]] = {}
            if pace_hz is None:  # references: the same DISPATCH to less than the runtime
                mem, minfo = serve(tmp, "--control-hz", "30", journal=False)
                refs["runtime DISPATCH, in-memory journal"] = side_round_trips(
                    mem, minfo, ctx, raw, payload, cmds[:n + warmup], warmup)
                bare, binfo = spawn(["-c", BARE, str(ROOT)])
                refs["broker + wire, fixed ack (no host)"] = side_round_trips(
                    bare, binfo, ctx, raw, payload, cmds[:n + warmup], warmup)
            raw.send(b"stop")
            raw.recv()
            raw.close(0)
            echo.wait(10)
        finally:
            proc.terminate()
            proc.wait(10)
            ctx.term()
    how = "back to back" if pace_hz is None else f"paced at {pace_hz:g} samples/s"
    print(f"\n1. dispatch -> ack round trip, {how}: {rounds} rounds x {n} samples, request "
          f"{sum(req_sizes)} B in frames {req_sizes}, reply {sum(rep_sizes)} B")
    print(f"   {'':40s} {'p50 us':>8s} {'p90 us':>8s} {'p99 us':>8s} {'x p50':>6s} "
          f"{'x p90':>6s} {'x p99':>6s}   per-round x p50 | x p90 | x p99")

    def cut(xs: list[float]) -> list[list[float]]:
        return [xs[r * n:(r + 1) * n] for r in range(rounds)]

    qs = (0.5, 0.9, 0.99)
    for name, xs in (("raw pyzmq REQ/REP echo (baseline)", t_raw),
                     ("runtime DISPATCH (wire + host + journal)", t_proto),
                     ("ZmqBridge.dispatch (+ Command codec)", t_bridge)):
        per = [[pct(a, q) / pct(b, q) for q in qs]
               for a, b in zip(cut(xs), cut(t_raw), strict=True)]
        print(f"   {name:40s} " + " ".join(f"{pct(xs, q):8.1f}" for q in qs) + " "
              + " ".join(f"{pct(xs, q) / pct(t_raw, q):6.2f}" for q in qs) + "   "
              + " | ".join(" ".join(f"{r[k]:.2f}" for r in per) for k in range(len(qs))))
        if xs is t_proto:
            verdict = [statistics.median(r[k] for r in per) for k in range(len(qs))]
    print(f"   runtime DISPATCH, median of the rounds: {verdict[0]:.2f}x at p50 "
          f"(target <= 1.50), {verdict[1]:.2f}x at p90, {verdict[2]:.2f}x at p99 "
          "(target <= 2.00)")
    figures = {"echo_p50": pct(t_raw, 0.5), "echo_p90": pct(t_raw, 0.9),
               "dispatch_p50": pct(t_proto, 0.5), "dispatch_p90": pct(t_proto, 0.9),
               "x_p50": verdict[0], "x_p90": verdict[1], "x_p99": verdict[2]}
    if not refs:
        return figures
    print("   reference only (one round each after, against the echo again):")
    for name, (t_raw_ref, t_ref) in refs.items():
        base = [pct(t_raw_ref, q) for q in qs]
        ref = [pct(t_ref, q) for q in qs]
        print(f"   {'raw pyzmq REQ/REP echo (baseline)':40s} "
              + " ".join(f"{b:8.1f}" for b in base) + " " + " ".join(f"{1:6.2f}" for _ in qs))
        print(f"   {name:40s} " + " ".join(f"{r:8.1f}" for r in ref) + " "
              + " ".join(f"{r / b:6.2f}" for r, b in zip(ref, base, strict=True)))
    server, client = server_python()
    print(f"   the runtime's Python per DISPATCH in one process, no sockets (median): "
          f"{server:.1f} us (decode, validate, submit, journal, encode the ack); the client's "
          f"encode + decode {client:.1f} us")
    figures.update(server_python_us=server, client_codec_us=client)
    return figures


def summary(runs: list[dict[str, float]], loads: list[tuple[float, float, float]]) -> None:
    """Medians over repeated back-to-back measurements (each its own runtime process)."""
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(f"\nback to back, {len(runs)} repeats (each a fresh runtime, 5 rounds), medians: "
          f"echo p50 {med('echo_p50'):.1f} us, p90 {med('echo_p90'):.1f} us; runtime DISPATCH "
          f"p50 {med('dispatch_p50'):.1f} us, p90 {med('dispatch_p90'):.1f} us; ratio "
          f"{med('x_p50'):.2f}x at p50 (per repeat "
          + " ".join(f"{r['x_p50']:.2f}" for r in runs) + f"), {med('x_p90'):.2f}x at p90 "
          "(" + " ".join(f"{r['x_p90']:.2f}" for r in runs) + f"), {med('x_p99'):.2f}x at p99; "
          f"runtime Python per DISPATCH {med('server_python_us'):.1f} us, client codec "
          f"{med('client_codec_us'):.1f} us")
    print("load average (1 / 5 / 15 min) before each repeat and after the last: "
          + "; ".join(" / ".join(f"{x:.1f}" for x in load) for load in loads))


def side_round_trips(proc: subprocess.Popen, info: dict, ctx: zmq.Context, raw: zmq.Socket,
                     payload: list[bytes], cmds: list, warmup: int
                     ) -> tuple[list[float], list[float]]:
    """Echo and DISPATCH to ``proc`` (a reference server), interleaved as above; stops it."""
    client = LazyPirateClient(info["bind"], context=ctx, timeout_s=2.0)
    t_raw, t_ref = [], []
    try:
        for i in range(1, len(cmds)):
            pre = Message(MessageType.DISPATCH, 0, "manip", f"m-{i}", {
                "command": {**cmds[i].to_wire(), "command_id": f"m-{i}"},
                "start_budget_ms": 5000.0})
            t0 = time.perf_counter_ns()
            raw.send_multipart(payload)
            raw.recv_multipart()
            t1 = time.perf_counter_ns()
            client.request(pre)
            t2 = time.perf_counter_ns()
            if i >= warmup:
                t_raw.append((t1 - t0) / 1e3)
                t_ref.append((t2 - t1) / 1e3)
    finally:
        client.close()
        if proc.stdin is not None:
            proc.stdin.close()
        proc.terminate()
        proc.wait(10)
    return t_raw, t_ref


def _throughput_client(endpoint: str, service: str, mtype: int, count: int,
                       out: mp.Queue) -> None:
    ctx = zmq.Context()
    c = LazyPirateClient(endpoint, context=ctx, timeout_s=5.0, retries=1)
    t0 = time.perf_counter()
    for i in range(count):
        r = c.request(Message(MessageType(mtype), 0, service, f"q{i}", {"i": i}))
        if r.type is MessageType.ERROR:
            raise SystemExit(f"error reply: {dict(r.body)}")
    out.put((count, time.perf_counter() - t0))
    c.close()
    ctx.term()


def throughput(requests: int, clients: int) -> None:
    spawn_ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        proc, info = serve(tmp, "--control-hz", "30")
        broker, binfo = spawn(["-m", "runtime_bridge.zmq", "broker", "--bind",
                               "tcp://127.0.0.1:*"])
        worker = subprocess.Popen([sys.executable, "-c", WORKER, binfo["bind"], str(ROOT)],
                                  stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True,
                                  env=ENV, cwd=ROOT)
        worker.stdout.readline()  # type: ignore[union-attr]
        time.sleep(0.3)  # registration
        try:
            print(f"\n2. broker throughput, {clients} client processes x {requests // clients} "
                  "sequential requests")
            for name, endpoint, service, mtype in (
                    ("remote worker 'echo' via broker", binfo["bind"], "echo",
                     MessageType.REQUEST),
                    ("runtime local service (QUERY)", info["bind"], "manip",
                     MessageType.QUERY)):
                q: mp.Queue = spawn_ctx.Queue()
                procs = [spawn_ctx.Process(target=_throughput_client, args=(
                    endpoint, service, int(mtype), requests // clients, q))
                    for _ in range(clients)]
                t0 = time.perf_counter()
                for p in procs:
                    p.start()
                results = [q.get(timeout=300) for _ in procs]
                wall = time.perf_counter() - t0
                for p in procs:
                    p.join()
                total = sum(n for n, _ in results)
                busy = max(t for _, t in results)
                print(f"   {name:34s} {total / busy:9.0f} req/s  ({total} requests, "
                      f"{wall:.1f} s with process start-up)")
        finally:
            worker.stdin.close()  # type: ignore[union-attr]
            worker.wait(10)
            for p in (broker, proc):
                p.terminate()
                p.wait(10)


def _flood_client(endpoint: str, first: int, clients: int, per_client: int,
                  out: mp.Queue) -> None:
    """Each thread is one client dispatching its commands one after the other. A dispatch whose
    outcome is unknown is reconciled by query, as the runner would: if the runtime never got
    it, it is sent again under the same id; never under a new one."""
    stats = Counter()
    errors: list[str] = []
    worst = [0.0]

    def one(k: int) -> None:
        ctx = zmq.Context.instance()
        bridge = ZmqBridge(ZmqBridgeConfig(endpoint=endpoint, telemetry="", timeout_s=2.0,
                                           retries=3), context=ctx)
        try:
            for i in range(per_client):
                cmd = command(f"flood-{k}-{i}", "wait", steps=0, start_within_ms=60_000)
                t0 = time.perf_counter()
                while True:
                    try:
                        ack = bridge.dispatch(cmd)
                        break
                    except WireError as err:
                        if err.code != WireCode.OUTCOME_UNKNOWN:
                            raise
                        stats["unknown"] += 1
                        if bridge.query(cmd.command_id).state is not RuntimeState.NOT_FOUND:
                            stats["reconciled"] += 1
                            ack = None
                            break
                worst[0] = max(worst[0], time.perf_counter() - t0)
                stats["acked" if ack is None or ack.accepted else "refused"] += 1
                stats["duplicate"] += bool(ack is not None and ack.duplicate)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            bridge.close()

    threads = [threading.Thread(target=one, args=(first + j,)) for j in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((dict(stats), errors, worst[0]))


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def flood(clients: int, per_client: int, processes: int) -> None:
    spawn_ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "executions.log")
        proc, info = serve(tmp, "--control-hz", "100", env={**ENV, "HBT_EXEC_LOG": log})
        try:
            rss = [rss_kib(proc.pid)]
            q: mp.Queue = spawn_ctx.Queue()
            per_proc = clients // processes
            procs = [spawn_ctx.Process(target=_flood_client, args=(
                info["bind"], j * per_proc, per_proc, per_client, q)) for j in range(processes)]
            t0 = time.perf_counter()
            for p in procs:
                p.start()
            results = []
            while len(results) < len(procs):
                with contextlib.suppress(queue.Empty):
                    results.append(q.get(timeout=0.5))
                rss.append(rss_kib(proc.pid))
            wall = time.perf_counter() - t0
            for p in procs:
                p.join()
            time.sleep(0.5)  # let the control loop finish the last commands
            rss.append(rss_kib(proc.pid))
        finally:
            proc.terminate()
            proc.wait(10)
        stats = sum((Counter(r[0]) for r in results), Counter())
        errors = [e for r in results for e in r[1]]
        worst = max(r[2] for r in results)
        states = dict(Counter(row[3] for cid, row in read_rows(os.path.join(
            tmp, "runtime.db")).items() if cid.startswith("flood-")))
        runs = Counter(Path(log).read_text().split()) if os.path.exists(log) else Counter()
    total = clients * per_client
    print(f"\n3. {clients} concurrent clients x {per_client} commands = {total} dispatches "
          f"({processes} client processes), {wall:.1f} s, {total / wall:.0f} dispatch/s")
    print(f"   acknowledged {stats['acked']} (resends answered as duplicates: "
          f"{stats['duplicate']}), refused {stats['refused']}, outcome unknown "
          f"{stats['unknown']} (reconciled by query: {stats['reconciled']}), client errors "
          f"{len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print(f"   slowest dispatch (with its retries): {worst * 1000:.0f} ms")
    print(f"   runtime journal: {states}")
    lost = total - states.get("CONTROL_DONE", 0)
    twice = sum(1 for n in runs.values() if n > 1)
    print(f"   lost commands: {lost}; executed twice: {twice}; executed: {len(runs)}")
    print(f"   runtime process RSS: start {rss[0] / 1024:.1f} MiB, peak {max(rss) / 1024:.1f} "
          f"MiB, end {rss[-1] / 1024:.1f} MiB")


def main() -> None:
    quick = "--quick" in sys.argv
    if "--flood" in sys.argv:
        flood(100, int(sys.argv[sys.argv.index("--flood") + 1]), 4)
        return
    print(f"bench_zmq: pyzmq {zmq.__version__}, libzmq {zmq.zmq_version()}, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 1
    runs, loads = [], []
    for _ in range(repeats):
        loads.append(os.getloadavg())
        runs.append(round_trips(500 if quick else 3000, 1 if quick else 5))
    loads.append(os.getloadavg())
    if repeats > 1:
        summary(runs, loads)
    round_trips(300 if quick else 1500, 1, warmup=50, pace_hz=100.0)
    if "--round-trip" in sys.argv:
        return
    throughput(2000 if quick else 20_000, 4)
    if quick:
        flood(10, 100, 2)
    else:
        flood(100, 1000, 4)


if __name__ == "__main__":
    main()
