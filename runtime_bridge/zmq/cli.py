"""``harness runtime``: serve a ZeroMQ runtime, or run a stand-alone broker."""

from __future__ import annotations

import gc
import json
import logging
import sys

import typer

from harness_bt import listen
from harness_bt.runtime.executor import load_executors
from runtime_bridge.backends import backend_from_spec
from runtime_bridge.host import HostConfig
from runtime_bridge.sim.cli import parse_sets
from runtime_bridge.zmq.broker import Broker, BrokerConfig
from runtime_bridge.zmq.server import RuntimeServer, RuntimeServerConfig

__all__ = ["app"]

SWITCH_INTERVAL_S = 0.0001  # the runtime process's GIL switch interval (Python's default: 5 ms)

#: young-generation collections every this many net allocations (Python's default: 700)
GC_YOUNG_THRESHOLD = 10_000


def quiet_collector() -> None:
    """Keep the cyclic garbage collector out of the answers' way in a runtime process: what
    start-up built (modules, schemas, the backend) is frozen, never to be scanned again, and
    young collections run about fourteen times less often (each some milliseconds at most).
    Each collection holds the interpreter; by default one hit every fiftieth request and a
    full one scanned everything the process had ever imported."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)


app = typer.Typer(name="runtime", help="The robot-side ZeroMQ runtime: serve, broker.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.command("serve")
def serve(
    backend: str = typer.Option("kinematic", help="kinematic | sim | http://GENMANIP | "
                                "package.module:factory"),
    sim_scene: str = typer.Option(None, "--sim-scene", help="--backend sim: the scene it "
                                  "serves, a name or a scene file, e.g. pick_and_place "
                                  "(default: pick_cube)"),
    sim_set: list[str] = typer.Option(None, "--sim-set", help="--backend sim: a scene "
                                      "parameter, NAME=VALUE, repeatable"),
    seed: int = typer.Option(None, "--seed", help="--backend sim: the scene's layout seed "
                             "(default: 0)"),
    bind: str = typer.Option("tcp://127.0.0.1:5555", help="where the broker listens "
                             "(tcp://127.0.0.1:* picks a free port)"),
    connect: str = typer.Option("", help="serve as a worker of this external broker instead"),
    telemetry: str = typer.Option("tcp://127.0.0.1:5556", help="PUB endpoint ('' for none)"),
    journal: str = typer.Option("runtime.db", help="the runtime's durable record (SQLite)"),
    executors: str = typer.Option("", help="package.module:factory building executors "
                                  "(default: every executor installed)"),
    service: str = typer.Option("manip", help="the service name to register"),
    control_hz: float = typer.Option(30.0, help="control steps per second"),
    lease_ms: float = typer.Option(1000.0, help="lease per command (0: no leases)"),
    retention_s: float = typer.Option(86400.0, help="how long finished records are kept"),
    heartbeat_ms: float = typer.Option(1000.0, help="broker <-> worker heartbeat interval"),
    log_level: str = typer.Option("WARNING", help="logging level"),
) -> None:
    """Serve the runtime: host executors, run the control loop, answer over ZeroMQ.

    Prints one JSON line with the bound endpoints once it is ready."""
    logging.basicConfig(level=log_level.upper())
    # The control thread's step is pure Python; the I/O thread gives up the GIL at each frame
    # it sends and each journal write, and by default waits up to 5 ms to get it back. In this
    # process an answer matters more than a step's throughput.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    server = RuntimeServer(
        backend_from_spec(backend, dt=1.0 / control_hz, sim_scene=sim_scene,
                          sim_params=parse_sets(sim_set) or None, seed=seed),
        load_executors(executors or None),
        RuntimeServerConfig(
            bind=bind, connect=connect or None, telemetry=telemetry or None,
            service=service, journal=journal or None,
            host=HostConfig(lease_s=lease_ms / 1000.0 if lease_ms > 0 else None,
                            retention_s=retention_s),
            heartbeat_interval_s=heartbeat_ms / 1000.0,
        ),
    )
    try:
        endpoints = server.start()
        quiet_collector()
        listen.wait_until_interrupted(
            server.stop, ended=lambda: server.wait(0),
            announce=lambda: typer.echo(json.dumps({"ready": True, **endpoints})))
    finally:
        server.stop()
    if server.failure is not None:
        raise server.failure


@app.command("broker")
def broker(
    bind: str = typer.Option("tcp://127.0.0.1:5555", help="where the broker listens"),
    heartbeat_ms: float = typer.Option(1000.0, help="worker heartbeat interval"),
    log_level: str = typer.Option("WARNING", help="logging level"),
) -> None:
    """Run a stand-alone broker that routes requests to registered services by name."""
    logging.basicConfig(level=log_level.upper())
    b = Broker(BrokerConfig(bind=bind, heartbeat_interval_s=heartbeat_ms / 1000.0))
    try:
        bound = b.start()
        listen.wait_until_interrupted(
            b.stop, announce=lambda: typer.echo(json.dumps({"ready": True, "bind": bound})))
    finally:
        b.stop()
