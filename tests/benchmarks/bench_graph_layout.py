"""Graph layout benchmark: what keeping the order costs Graphviz, and what it buys.

For every task of the library (``trees/``), the running example (``fetch_cup``) and the
eleven-phase test task (``relay``), the DOT ``harness viz`` writes (phases in flow order,
children kept left to right by same-rank chains and ``remincross=false``) is rendered to SVG
beside a baseline measured in the same run: the same DOT without the ordering constraints
(no chains, no ``ordering=out``, no ``remincross=false``). Printed per task: phases, the
drawing's size (pt), the median ``dot`` time of each and their ratio, and how many groups of
tree siblings each drew out of order (read from the SVG's coordinates), and whether the
phases came out top to bottom in flow order.

    python tests/benchmarks/bench_graph_layout.py              # 3 rounds
    python tests/benchmarks/bench_graph_layout.py --rounds 5
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness_bt.authoring import load_task  # noqa: E402
from harness_bt.testing.example import example_skills  # noqa: E402
from harness_bt.viz import drawing, render_dot, to_dot  # noqa: E402
from harness_bt.viz.layout import flow_order  # noqa: E402
from tests.harness_bt.viz.test_flow_layout import RELAY, boxes  # noqa: E402


def unconstrained(dot: str) -> str:
    dot = dot.replace("ordering=out, remincross=false, ", "")
    return re.sub(r"\n\s*\{rank=same; n\d+(?: -> n\d+)+ \[style=invis\];\}", "", dot)


def timed(dot: str, rounds: int) -> tuple[float, str]:
    times, svg = [], ""
    for _ in range(rounds):
        began = time.perf_counter()
        svg = render_dot(dot, "svg").decode()
        times.append(time.perf_counter() - began)
    return statistics.median(times), svg


def out_of_order(task: object, svg: str) -> tuple[int, bool]:
    d = drawing(task.structure())  # type: ignore[attr-defined]
    box = boxes(svg)
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        kids.setdefault(a, []).append(b)
    wrong = sum(1 for children in kids.values()
                if [box[k][0] for k in children] != sorted(box[k][0] for k in children))
    order = flow_order([c for c in d.clusters if c.kind != "final"],
                       [(t.source, t.target) for t in d.transitions], d.initial)
    tops = [box[f"phase_{c.id}"][1] for c in order]
    return wrong, tops == sorted(tops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tasks = [(p.stem, load_task(p)) for p in sorted((ROOT / "trees").glob("*.yaml"))
             if p.stem != "steps"]
    tasks += [("fetch_cup", load_task(ROOT / "harness_bt/testing/fetch_cup.yaml",
                                      skills=example_skills())), ("relay", load_task(RELAY))]
    print(f"{'task':18} {'phases':>6} {'size (pt)':>12} {'dot ms':>8} {'baseline':>8} "
          f"{'ratio':>6} {'out of order':>13} {'flow order':>11}")
    ratios = []
    for name, task in tasks:
        dot = to_dot(drawing(task.structure()))
        t_new, svg = timed(dot, args.rounds)
        t_old, svg_old = timed(unconstrained(dot), args.rounds)
        size = re.search(r'<svg width="(\d+)pt" height="(\d+)pt"', svg)
        phases = sum(1 for p in task.structure()["phases"] if p["kind"] != "final")
        wrong, flows = out_of_order(task, svg)
        wrong_old, flows_old = out_of_order(task, svg_old)
        ratios.append(t_new / t_old)
        print(f"{name:18} {phases:6} {size[1] + 'x' + size[2] if size else '?':>12} "
              f"{t_new * 1000:8.0f} {t_old * 1000:8.0f} {t_new / t_old:6.2f} "
              f"{f'{wrong} vs {wrong_old}':>13} {f'{flows} vs {flows_old}':>11}")
    print(f"median dot time ratio, constrained / baseline: {statistics.median(ratios):.2f}x "
          f"over {len(ratios)} tasks, {args.rounds} rounds each")


if __name__ == "__main__":
    main()
