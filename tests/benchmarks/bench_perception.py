"""Perception cost per frame: the colour lookup table against HSV per image, side by side on the
same recorded frames, with the masks and detections compared.

The frames are the ones colour perception is given while library tasks run in-process
(``harness_bt.run.episodes.run_episodes``, frames on demand: what ``harness run`` does):
``ColourPerception.detect`` is wrapped to keep its arguments. They are then replayed, taking
turns, through

- ``hsv``: the float32 HSV conversion of the whole image and one :meth:`ColourRange.mask` per
  colour (what ``detect`` did before the table): the baseline;
- ``table``: :class:`skills.perception.vision.ColourTable` (a fresh table: its colours are
  learnt during the replay, as in a worker's first episode) and a mask per colour from its
  bits;
- ``detect``: the whole of ``ColourPerception.detect`` (table, masks, back-projection, box
  fits, occlusion) per frame, for scale.

It prints the median milliseconds per frame of each, the ratio against the baseline, and
whether every mask of every frame came out the same both ways (it must: the table classifies
each colour with the same float32 arithmetic). Nothing is asserted.

    python tests/benchmarks/bench_perception.py                     # 2 episodes of 2 tasks
    python tests/benchmarks/bench_perception.py --tasks trees/stack.yaml --episodes 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness_bt.authoring import load_task  # noqa: E402
from harness_bt.authoring.scenes import with_scene  # noqa: E402
from harness_bt.run.episodes import run_episodes  # noqa: E402
from harness_bt.runtime.episodes import RunOptions  # noqa: E402
from runtime_bridge.inproc import open_runtime  # noqa: E402
from skills.perception.perceive import ColourPerception  # noqa: E402
from skills.perception.vision import ColourTable, hsv  # noqa: E402


def record(task_file: Path, episodes: int, seed: int) -> list[tuple[Any, ...]]:
    """(perception, camera, frame, observation) of every frame ``detect`` was given."""
    seen: list[tuple[Any, ...]] = []
    original = ColourPerception.detect

    def keep(self: ColourPerception, camera: str, frame: Any, observation: Any) -> Any:
        seen.append((self, camera, frame, observation))
        return original(self, camera, frame, observation)

    loaded = load_task(task_file)
    options = with_scene(RunOptions(task=loaded.name, scene=loaded.scene, params=loaded.params,
                                    episodes=episodes, seed=seed))
    ColourPerception.detect = keep  # type: ignore[method-assign]
    try:
        runtime = open_runtime(options)
        try:
            run_episodes(loaded, options, runtime=runtime)
        finally:
            runtime.close()
    finally:
        ColourPerception.detect = original  # type: ignore[method-assign]
    return seen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="trees/pick_and_place.yaml,trees/stack.yaml")
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=0, help="pin to this core (-1: do not pin)")
    args = ap.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    frames: list[tuple[Any, ...]] = []
    for task in (t.strip() for t in args.tasks.split(",") if t.strip()):
        path = Path(task) if Path(task).is_absolute() else ROOT / task
        frames += record(path, args.episodes, args.seed)
    if not frames:
        print("no frames were perceived")
        return 1
    times: dict[str, list[float]] = {"hsv": [], "table": [], "detect": []}
    same = True
    for _ in range(args.repeats):
        tables: dict[int, ColourTable] = {}
        for perception, camera, frame, observation in frames:
            ranges = tuple(dict.fromkeys(s.colour for s in perception.catalogue))
            table = tables.setdefault(id(perception), ColourTable(ranges))
            rgb = np.asarray(frame.rgb)
            t0 = time.perf_counter()
            h, s, v = hsv(rgb)
            old = [c.mask(h, s, v) for c in ranges]
            t1 = time.perf_counter()
            bits = table.classify(rgb)
            new = [table.mask(bits, c) for c in ranges]
            t2 = time.perf_counter()
            perception.detect(camera, frame, observation)
            t3 = time.perf_counter()
            same &= all(np.array_equal(a, b) for a, b in zip(old, new, strict=True))
            times["hsv"].append(t1 - t0)
            times["table"].append(t2 - t1)
            times["detect"].append(t3 - t2)
    shapes = sorted({np.asarray(f[2].rgb).shape[:2] for f in frames})
    print(f"{len(frames)} frames ({', '.join(f'{w}x{h}' for h, w in shapes)}) from "
          f"{args.tasks}, {args.episodes} episode(s) each from seed {args.seed}, "
          f"{args.repeats} replays, pinned to core {args.cpu}:")
    base = statistics.median(times["hsv"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<7} median {med * 1e3:6.3f} ms per frame ({med / base:5.2f}x hsv)")
    print(f"  masks the same both ways on every frame: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
