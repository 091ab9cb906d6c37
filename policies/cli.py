"""``harness policy serve`` and ``harness policy list``: the built-in policy server from the
shell (docs/policies.md)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from harness_bt import listen
from harness_bt.errors import DefinitionError

__all__ = ["app"]

app = typer.Typer(help="Serve policies over openpi's WebSocket policy protocol.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.command("serve")
def serve(
    policy: str = typer.Option(None, "--policy", help="The policy to serve (harness policy list "
                               "names them; default: pick)."),
    port: int = typer.Option(8000, "--port", help="TCP port (openpi's default is 8000; 0 "
                             "picks a free one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by "
                             "default)."),
    misgrasp_rate: float = typer.Option(0.0, "--misgrasp-rate", help="Per session: the "
                                        "probability of grasping beside the object without "
                                        "noticing (0..1)."),
    pose_noise_m: float = typer.Option(0.0, "--pose-noise-m", help="Per session: standard "
                                       "deviation (metres) of the error on the perceived "
                                       "position."),
    seed: int = typer.Option(0, "--seed", help="Root of every session's randomness (a "
                             "session's draws depend on the seed and its session id only)."),
    max_message_mb: float = typer.Option(64.0, "--max-message-mb", help="Largest "
                                         "observation accepted (MiB)."),
    log_level: str = typer.Option("INFO", "--log-level", help="Server log on stderr (one line "
                                  "per connection at INFO)."),
) -> None:
    """Serve a policy until interrupted; print one JSON line with its URL once it listens."""
    from policies.registry import (
        PolicySettings,
        default_policy,
        policy_metadata,
        policy_registry,
    )
    from policies.server import PolicyServer, PolicyServerSettings

    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise DefinitionError("INVALID_OPTION", f"--log-level {log_level!r} is not a logging "
                              "level", fix="use DEBUG, INFO, WARNING or ERROR")
    settings = PolicySettings(misgrasp_rate=misgrasp_rate, pose_noise_m=pose_noise_m,
                              seed=seed)
    registry = policy_registry(entry_points=True)
    policy = policy or default_policy(registry)
    kind = registry.get(policy, where="--policy")
    if not 0 <= port <= 65535:
        raise DefinitionError("INVALID_OPTION", f"--port {port} is not 0..65535",
                              fix="use e.g. --port 8000, or 0 for a free port")
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(max(level, logging.WARNING))
    if host not in _LOOPBACK:
        typer.secho(f"warning: serving on {host}: anyone who can reach the port can use the "
                    "policy (the protocol has no authentication)", fg=typer.colors.YELLOW,
                    err=True)
    factory = kind.build(settings)
    server = PolicyServer(factory, PolicyServerSettings(
        host=host, port=port, max_message_bytes=int(max_message_mb * (1 << 20))),
        metadata=policy_metadata(policy, kind, settings, factory))

    def announce() -> None:
        typer.echo(json.dumps({"ready": True, "url": server.url, "policy": policy,
                               "settings": settings.to_dict()}))
        sys.stdout.flush()

    server.start()
    try:
        listen.wait_until_interrupted(server.stop, ended=lambda: not server.running,
                                      announce=announce)
    finally:
        logging.getLogger("policies.server").info(
            "policy server stopped after %d connections, %d requests, %d failures",
            server.connections, server.requests, server.failures)


@app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the installed policies (the harness_bt.policies entry points)."""
    from policies.registry import policy_registry

    registry = policy_registry(entry_points=True)
    rows: list[dict[str, Any]] = [
        {"name": name, "description": kind.description, "knobs": list(kind.knobs),
         "origin": str(registry.origin(name))} for name, kind in registry.items()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    console = Console(highlight=False)
    if not console.is_terminal:
        for row in rows:
            console.print(f"{row['name']}  {row['description']} (knobs: "
                          f"{', '.join(row['knobs']) or 'none'})", markup=False,
                          soft_wrap=True)
        return
    table = Table(title="policies", title_justify="left")
    for column in ("policy", "description", "knobs"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(str(row["name"]), str(row["description"]), ", ".join(row["knobs"]))
    console.print(table)
