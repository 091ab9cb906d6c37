"""GenManip transport and simulator speed. A script that prints; nothing here is asserted.

For 2 cameras at 640x480 RGB-D (rendered once by the built-in simulator, then replayed so
only the transport is timed): the /step round trip through our server and client with the
compatible encoding, with the binary frames fast path, and with the same-host shared-memory
fast path (arrays copied out of the segment, and as views on it), and the raw loopback floor
(the same bytes over a bare HTTP POST to a bare ASGI app on the same uvicorn), the paths taking
turns every round. Then simulator steps per second, and the same for every library scene
(objects differ: the sort scene has six) beside pick_cube.

    .venv/bin/python tests/benchmarks/bench_genmanip.py [--rounds 40] [--scenes-only]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from runtime_bridge.genmanip import codec
from runtime_bridge.genmanip.actions import ValidatedAction
from runtime_bridge.genmanip.client import ClientOptions, GenManipClient
from runtime_bridge.genmanip.server import create_app
from runtime_bridge.genmanip.serving import ServerThread
from runtime_bridge.sim.config import SimConfig, parse_camera_spec
from runtime_bridge.sim.env import SimEnv

UPSTREAM_MS = 49.0  # upstream's client + server on the same 5.7 MB payload (GENMANIP_PROTOCOL.md)
HOLD = {"control_type": "joint_position", "action": [0.0] * 7 + [0.04, 0.04]}


def cameras(size: str) -> tuple:
    return (parse_camera_spec(f"front:{size}"), parse_camera_spec(f"wrist:{size}"))


class Replay:
    """A worker environment answering every step with one pre-rendered observation."""

    def __init__(self, obs: dict[str, Any]) -> None:
        self.obs = obs
        self.t = 0

    def reset(self) -> dict[str, Any]:
        self.t = 0
        return {"obs": {**self.obs, "timestep": 0, "reset": True}, "metric": None}

    def step(self, message: Mapping[str, Any] | ValidatedAction) -> dict[str, Any]:
        self.t += 1
        return {"obs": {**self.obs, "timestep": self.t, "reset": False}, "metric": None}

    def close(self) -> None:
        pass


def raw_app(body: bytes) -> Callable[..., Any]:
    async def app(scope: dict[str, Any], receive: Callable[..., Any],
                  send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/octet-stream"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
    return app


def interleaved(fns: Mapping[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per call of each function, taking turns every round, so that a machine
    whose load changes during the run (2 shared cores) slows every path alike."""
    for _ in range(3):
        for fn in fns.values():
            fn()
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - t0) * 1000.0)
    return out


def check(answer: Any, client: GenManipClient, name: str, media: str) -> Any:
    if client.last_media_type != media:
        raise SystemExit(f"{name}: answered in {client.last_media_type}, not {media} "
                         f"({client.shm_status})")
    return answer


def fmt(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=10)
    return f"median {statistics.median(ms):7.2f} ms  (p10 {q[0]:6.2f}, p90 {q[-1]:6.2f})"


def transport(rounds: int) -> None:
    with SimEnv(SimConfig(cameras=cameras("640x480"))) as env:
        obs = env.reset()["obs"]
    compat_bytes = codec.dumps({"0": {"obs": obs, "metric": None}})
    frames_bytes = codec.dumps_frames({"0": {"obs": obs, "metric": None}})
    print(f"payload: 2 cameras 640x480 RGB-D; compatible {len(compat_bytes) / 1e6:.2f} MB, "
          f"fast path {len(frames_bytes) / 1e6:.2f} MB")
    action = codec.dumps({"0": HOLD})
    paths = (("compatible", {"fast_path": False}, codec.COMPAT_MEDIA_TYPE),
             ("fast path", {"shm": False}, codec.FRAMES_MEDIA_TYPE),
             ("shm fast path", {}, codec.SHM_MEDIA_TYPE),
             ("shm fast path, views", {"shm_copy": False}, codec.SHM_MEDIA_TYPE))
    floors = (("floor (compat bytes)", compat_bytes), ("floor (frames bytes)", frames_bytes))
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(ServerThread(create_app(lambda wid: Replay(obs))))
        fns: dict[str, Callable[[], Any]] = {}
        for name, options, media in paths:
            client = stack.enter_context(GenManipClient(
                server.url, options=ClientOptions(**options)))  # type: ignore[arg-type]
            client.create_workers()
            client.reset()
            fns[name] = lambda c=client, n=name, m=media: check(c.step({"0": HOLD}), c, n, m)
        for name, body in floors:
            raw = stack.enter_context(ServerThread(raw_app(body)))
            http = stack.enter_context(httpx.Client(base_url=raw.url))
            fns[name] = lambda h=http: h.post("/step", content=action).content
        results = interleaved(fns, rounds)
    for name, ms in results.items():
        print(f"  {name:22s} {fmt(ms)}")
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"  compatible vs upstream's ~{UPSTREAM_MS:.0f} ms: "
          f"{UPSTREAM_MS / med['compatible']:.2f}x "
          f"({'meets' if med['compatible'] <= UPSTREAM_MS else 'misses'} the target)")
    print(f"  fast path vs upstream's ~{UPSTREAM_MS:.0f} ms: {UPSTREAM_MS / med['fast path']:.1f}x "
          f"({'meets' if UPSTREAM_MS / med['fast path'] >= 10 else 'misses'} the >= 10x target)")
    print(f"  fast path vs compatible (same run): {med['compatible'] / med['fast path']:.1f}x")
    for name in ("shm fast path", "shm fast path, views"):
        ratio = UPSTREAM_MS / med[name]
        print(f"  {name} vs upstream's ~{UPSTREAM_MS:.0f} ms: {ratio:.1f}x "
              f"({'meets' if ratio >= 10 else 'misses'} the >= 10x target); vs compatible "
              f"(same run): {med['compatible'] / med[name]:.1f}x; vs frames fast path: "
              f"{med['fast path'] / med[name]:.1f}x")
    if med["floor (frames bytes)"] > UPSTREAM_MS / 10:
        print(f"  note: the >= 10x target ({UPSTREAM_MS / 10:.1f} ms) is below this machine's "
              f"bare-HTTP floor for the same bytes ({med['floor (frames bytes)']:.1f} ms); "
              "only the shm path, which sends no array bytes over TCP, can beat it")
    print(f"  compatible / its floor: {med['compatible'] / med['floor (compat bytes)']:.2f}x;  "
          f"fast path / its floor: {med['fast path'] / med['floor (frames bytes)']:.2f}x")


def _steps_per_s(cams: tuple, meshes: str, n: int, rounds: int = 3,
                 scene: str = "pick_cube") -> float:
    """Median over ``rounds`` of ``n`` held steps, in steps per second."""
    with SimEnv(SimConfig(scenes=(scene,), cameras=cams, num_steps=10_000,
                          arm_meshes=meshes)) as env:
        env.reset()
        env.step(HOLD)
        rates = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(n):
                env.step(HOLD)
            rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def sim_speed(steps: int) -> None:
    print("simulator (in-process, joint_position hold action; the Panda drawn with its simple "
          "collision meshes, the default, vs its detailed visual meshes, same run):")
    for label, cams in (("no cameras", ()), ("1 camera 256x192", (parse_camera_spec(
            "front:256x192:fov=40"),)), ("2 cameras 320x240", cameras("320x240")),
                        ("2 cameras 640x480", cameras("640x480"))):
        n = steps * (10 if not cams else 1)
        simple = _steps_per_s(cams, "simple", n)
        detailed = _steps_per_s(cams, "detailed", n)
        print(f"  {label:20s} {simple:7.1f} steps/s ({1e3 / simple:6.1f} ms/step, "
              f"{simple / 30.0:.2f}x real time at 1/30 s); detailed arm {detailed:7.1f} steps/s;"
              f" simple / detailed {simple / detailed:.2f}x")


def scene_speed(steps: int) -> None:
    """Each library scene with one 256x192 camera, beside pick_cube in the same run."""
    cam = (parse_camera_spec("front:256x192:fov=40"),)
    print("scenes (in-process, 1 camera 256x192, simple arm; median of 3 rounds):")
    base = None
    for scene in ("pick_cube", "pick_and_place", "stack", "place_at", "sort", "table"):
        rate = _steps_per_s(cam, "simple", steps, scene=scene)
        base = base or rate
        print(f"  {scene:15s} {rate:7.1f} steps/s ({rate / 30.0:.2f}x real time at 1/30 s; "
              f"{rate / base:.2f}x pick_cube)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--sim-steps", type=int, default=20)
    parser.add_argument("--scenes-only", action="store_true",
                        help="only the speed of each library scene")
    args = parser.parse_args()
    if not args.scenes_only:
        transport(args.rounds)
        sim_speed(args.sim_steps)
    scene_speed(args.sim_steps * 3)


if __name__ == "__main__":
    main()
