"""What judging a scene's success condition through the expression language costs per
simulator step, against calling the same predicates from hand-written Python.

For every judged scene of the library (its success condition as written, parameters at their
defaults), both are evaluated on the same scripted scene state: the condition through
``Condition.evaluate`` (the one interpreter, recording every call's value as evidence), the
baseline a Python function making the same predicate calls in the same order and recording the
same values. Timed in the same process, interleaved, as the median over repeated batches.
Predicates on a scripted state are cheap, so the ratio is an upper bound of the interpreter's
share of a real step (where the predicates ask PyBullet). Run:
``python tests/benchmarks/bench_success.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness_bt.authoring.scenes import load_scene
from harness_bt.scene import Cavity, scene_registry

BATCH = 2_000
ROUNDS = 15


class _State:
    """Every object resting still in the container, let go of."""

    def __init__(self, objects: list[str]) -> None:
        self.p = {o: np.array([0.5, 0.0, 0.02]) for o in objects}

    def position(self, name: str) -> np.ndarray:
        return self.p[name]

    def start_position(self, name: str) -> np.ndarray:
        return self.p[name] - np.array([0.0, 0.1, 0.0])

    def velocity(self, name: str) -> np.ndarray:
        return np.zeros(3)

    def yaw(self, name: str) -> float:
        return 0.0

    def extents(self, name: str) -> tuple[float, float, float]:
        return (0.04, 0.04, 0.04)

    def finger_contacts(self, name: str) -> tuple[bool, bool]:
        return (False, False)

    def touching(self, a: str, b: str) -> bool:
        return True

    def on_table(self, name: str) -> bool:
        return False

    def cavity(self, name: str) -> Cavity | None:
        return Cavity((0.5, 0.0), 0.0, 0.1, 0.1, 0.0, 0.05)


def _baseline(condition: Any) -> Any:
    """The same calls as plain Python: every call of the bound tree, in order, and()-ed
    (the library's conditions are and-chains; the results are checked equal before timing)."""
    calls = []

    def collect(node: Any) -> None:
        if node[0] == "apply":
            members = next((a[2] for a in node[2] if a[0] == "group"), None)
            args = [a[1] if a[0] == "lit" else None for a in node[2]]
            at = next((i for i, a in enumerate(node[2]) if a[0] == "group"), None)
            calls.append((condition.functions[node[1]], args, node[3], at, members))
            return
        for child in node[1:]:
            if isinstance(child, tuple) and child and isinstance(child[0], str):
                collect(child)
            elif isinstance(child, tuple):
                for c in child:
                    if isinstance(c, tuple):
                        collect(c)

    collect(condition.tree)

    def run(state: Any) -> tuple[bool, dict[str, bool]]:
        values: dict[str, bool] = {}
        ok = True
        for fn, args, text, at, members in calls:
            if members is None:
                values[text] = r = fn(state, *args)
                ok = ok and r
            else:
                for m in members:
                    a = list(args)
                    a[at] = m
                    values[f"{text}[{m}]"] = r = fn(state, *a)
                    ok = ok and r
            if not ok:  # the library's conditions are and-chains: stop at the first false
                break
        return ok, values
    return run


def _time(fn: Any, state: Any) -> float:
    start = time.perf_counter()
    for _ in range(BATCH):
        fn(state)
    return (time.perf_counter() - start) / BATCH * 1e6


def main() -> None:
    print(f"{'scene':<16}{'condition us':>14}{'python us':>12}{'ratio':>8}")
    for name in scene_registry(entry_points=True).names():
        scene = load_scene(name)
        if scene.condition is None:
            continue
        state = _State(list(scene.spec.objects))
        condition, plain = scene.condition.evaluate, _baseline(scene.condition)
        assert condition(state) == plain(state), name
        a, b = [], []
        for _ in range(ROUNDS):
            a.append(_time(condition, state))
            b.append(_time(plain, state))
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:<16}{ma:>14.1f}{mb:>12.1f}{ma / mb:>8.2f}")


if __name__ == "__main__":
    main()
