"""``harness sim serve`` and ``harness sim snapshot``: the built-in simulator from the shell."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import typer

from harness_bt.errors import DefinitionError
from runtime_bridge.sim.config import (
    CAMERA_PRESETS,
    DEFAULT_CAMERAS,
    DEFAULT_HOLD_STEPS,
    CameraSpec,
    FaultRates,
    SimConfig,
    parse_camera_spec,
)

__all__ = ["app", "parse_sets"]

app = typer.Typer(help="The built-in PyBullet Franka simulator (GenManip-compatible).",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

_CAMERA_HELP = ("camera spec, repeatable: NAME[:WxH][:eye=x,y,z][:target=x,y,z][:fov=deg]"
                f"[:mount=wrist]; presets: {', '.join(CAMERA_PRESETS)}")
_ARM_MESHES_HELP = ("simple: draw the Panda with its collision meshes (renders twice as fast); "
                    "detailed: with its visual meshes. The physics is the same.")


def parse_sets(items: list[str] | None) -> dict[str, object]:
    """``["target=green_cube", "offset=0,0.1"]`` -> values (numbers and comma-separated vectors
    read as numbers; the scene checks each against its parameter's type)."""
    out: dict[str, object] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise DefinitionError("INVALID_OPTION", f"--set {item!r} is not NAME=VALUE",
                                  fix="write e.g. --set target=green_cube")
        out[name.strip()] = _value(text.strip())
    return out


def _value(text: str) -> object:
    parts = [p.strip() for p in text.strip("[]").split(",")]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        return text
    if not all(math.isfinite(v) for v in numbers):
        return text
    return numbers if ("," in text or text.startswith("[")) else numbers[0]


def _cameras(specs: list[str] | None, default: tuple[str, ...]) -> tuple[CameraSpec, ...]:
    return tuple(parse_camera_spec(s) for s in (specs or default))


@app.command("serve")
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8087, help="TCP port (GenManip's default is 8087)."),
    scene: list[str] = typer.Option(["pick_cube"], "--scene", "--task", help="Scene name or "
                                    "scene file, repeatable (harness scenes lists them; "
                                    "GenManip calls it a task)."),
    set_: list[str] = typer.Option(None, "--set", help="A scene parameter, NAME=VALUE, "
                                   "repeatable (e.g. target=green_cube)."),
    episodes: int = typer.Option(10, help="Seeds (episodes) per scene."),
    num_steps: int = typer.Option(600, help="Steps per episode before it times out."),
    seed: int = typer.Option(0, help="First layout seed."),
    camera: list[str] = typer.Option(None, "--camera", help=_CAMERA_HELP + "; default: "
                                     "what harness run uses in-process, front and left at "
                                     "256x192 (upstream: --camera front:640x480 --render all)"),
    token: str = typer.Option(None, envvar="HARNESS_SIM_TOKEN",
                              help="Require 'Authorization: Bearer TOKEN'."),
    fault_nudge: float = typer.Option(0.0, help="Per-episode probability: nudge the target."),
    fault_slip: float = typer.Option(0.0, help="Per-episode probability: grasp slip in transport."),
    fault_occlude: float = typer.Option(0.0, help="Per-step probability: occlude a camera."),
    fault_drop: float = typer.Option(0.0, help="Per-/step probability: drop the answer."),
    fault_delay: float = typer.Option(0.0, help="Per-/step probability: delay the answer."),
    delay_s: float = typer.Option(0.5, help="How long a delayed answer waits (seconds)."),
    success_hold_steps: int = typer.Option(
        DEFAULT_HOLD_STEPS, min=1, help="Steps the success condition must hold before the "
        "episode ends: long enough for a controller to judge the result itself before the "
        "episode rolls over (as harness run in-process; upstream holds a few steps)."),
    render: str = typer.Option("round_robin", help="round_robin: one camera per step in turn; "
                               "all: every camera every step (a GenManip client reads images "
                               "every step; harness run in-process renders on demand)."),
    arm_meshes: str = typer.Option("simple", help=_ARM_MESHES_HELP),
    shm: bool = typer.Option(True, help="Offer the shared-memory fast path to harness-bt "
                             "clients on this host (segments under /dev/shm, removed on exit)."),
    workers: int = typer.Option(0, "--workers", min=0, help="Simulator instances to start "
                                "now, worker ids 0..K-1, sharing the episode queue (harness "
                                "eval --sim URL --workers K drives them; more ids are created "
                                "on demand)."),
    ros2: bool = typer.Option(False, "--ros2", help="Serve the arm as a ROS 2 robot over DDS "
                              "instead (action servers and topics; docs/ros2.md)."),
    ros2_domain: int = typer.Option(0, "--ros2-domain", envvar="ROS_DOMAIN_ID",
                                    help="--ros2: the ROS_DOMAIN_ID."),
    ros2_mapping: str = typer.Option(None, "--ros2-mapping", help="--ros2: the skill -> "
                                     "action mapping file (default: the built-in one)."),
    ros2_journal: str = typer.Option(None, "--ros2-journal", help="--ros2: a SQLite file "
                                     "for the runtime's record (and FILE.goals for the goals), "
                                     "so a restart answers for the goals of the last one."),
    ros2_truth: bool = typer.Option(False, "--ros2-truth", help="--ros2: publish the "
                                    "simulator's ground truth on /harness/sim/truth (tests, "
                                    "benchmarks)."),
    zenoh: str = typer.Option(None, "--zenoh", help="--ros2: over Zenoh instead of DDS, "
                              "listening on this endpoint (e.g. tcp/127.0.0.1:7447; "
                              "docs/ros2.md)."),
) -> None:
    """Serve the GenManip HTTP routes (/create_workers, /reset, /step, /kill; GET /docs)."""
    if zenoh is not None and not ros2:
        raise DefinitionError("INVALID_OPTION", f"--zenoh {zenoh}: only the ROS 2 robot "
                              "(--ros2) speaks Zenoh", where="harness sim serve",
                              fix="add --ros2, or drop --zenoh")
    if ros2:
        from runtime_bridge.ros2.serve import refuse_http_options, serve_ros2

        refuse_http_options(scenes=scene, episodes=episodes, num_steps=num_steps, camera=camera,
                            token=token, workers=workers, faults=(fault_nudge, fault_slip,
                                                                  fault_occlude, fault_drop,
                                                                  fault_delay))

        serve_ros2(scene=scene[0], params=parse_sets(set_) or None, seed=seed,
                   domain=ros2_domain, mapping=ros2_mapping, journal=ros2_journal,
                   zenoh=zenoh, truth=ros2_truth)
        return
    from harness_bt import listen
    from runtime_bridge.sim.server import create_sim_app

    config = SimConfig(
        scenes=tuple(scene), params=parse_sets(set_), episodes=episodes, num_steps=num_steps,
        seed=seed,
        cameras=_cameras(camera, DEFAULT_CAMERAS),
        faults=FaultRates(nudge=fault_nudge, slip=fault_slip, occlude=fault_occlude,
                          drop=fault_drop, delay=fault_delay, delay_s=delay_s),
        success_hold_steps=success_hold_steps, render=render, arm_meshes=arm_meshes,
    )
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        typer.secho(f"warning: listening on {host} without --token: anyone who can reach the "
                    "port can drive the robot", fg=typer.colors.YELLOW, err=True)
    app_ = create_sim_app(config, token=token, shm=shm)
    sock = listen.bind(host, port, option="--port")  # a port in use: PORT_IN_USE, at once
    port = sock.getsockname()[1]
    try:
        app_.state.workers.create([str(k) for k in range(workers)])
    except BaseException:
        sock.close()
        raise
    typer.echo(f"harness sim: scenes {', '.join(config.scenes)} x {episodes} seeds, "
               f"{num_steps} steps, success held {config.success_hold_steps} steps, cameras "
               f"{', '.join(f'{c.name}:{c.width}x{c.height}' for c in config.cameras)} "
               f"({render})" + (f", {workers} workers" if workers else "") + "; "
               f"http://{host}:{port} (docs at /docs, results at /harness/results)")
    listen.serve(app_, sock)


@app.command("snapshot")
def snapshot(
    scene: str = typer.Option("pick_and_place", help="Scene name or scene file to show."),
    set_: list[str] = typer.Option(None, "--set", help="A scene parameter, NAME=VALUE."),
    seed: int = typer.Option(0, help="Layout seed."),
    camera: list[str] = typer.Option(None, "--camera", help=_CAMERA_HELP),
    out: Path = typer.Option(Path("out/snapshot"), help="Directory for the PNG files."),
    arm_meshes: str = typer.Option("simple", help=_ARM_MESHES_HELP),
) -> None:
    """Write each camera's RGB and depth of a scene's first observation as PNG files."""
    from PIL import Image

    from runtime_bridge.sim.env import SimEnv

    cams = tuple(parse_camera_spec(s) for s in camera) if camera else (
        CAMERA_PRESETS["front"], CAMERA_PRESETS["wrist"])
    out.mkdir(parents=True, exist_ok=True)
    config = SimConfig(scenes=(scene,), params=parse_sets(set_), seed=seed, cameras=cams,
                       arm_meshes=arm_meshes)
    with SimEnv(config) as env:
        obs = env.reset()["obs"]
    for name, cam in obs["camera_data"].items():
        rgb_path = out / f"{name}_rgb.png"
        Image.fromarray(cam["rgb"]).save(rgb_path)
        depth = cam["depth"]
        near, far = float(depth.min()), float(np.percentile(depth, 99))
        vis = np.clip((far - depth) / max(far - near, 1e-6), 0, 1)  # near is bright
        Image.fromarray((vis * 255).astype(np.uint8)).save(out / f"{name}_depth.png")
        mm = np.clip(depth * 1000.0, 0, 65535).astype(np.uint16)
        Image.fromarray(mm).save(out / f"{name}_depth_mm.png")
        typer.echo(f"{name}: {rgb_path}, {out / f'{name}_depth.png'} (depth {near:.3f}.."
                   f"{float(depth.max()):.3f} m; 16-bit millimetres in {name}_depth_mm.png)")
