"""The meaning planner against the templates planner on the same instructions: how many of the
held-out phrasings (tests/harness_bt/planner/meaning_table.py: HELD_OUT, AFTER and CLEARING)
and of the templates table (library_table.py) each chooses right (task and binding), and the
time one plan takes (median over repeated rounds, both planners interleaved in the same process; the
library is loaded once, as a command loads it once per run).

Run: ``python tests/benchmarks/bench_planner.py [--rounds N]``."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness_bt.planner.candidates import library_candidates  # noqa: E402
from harness_bt.planner.meaning import MeaningPlanner  # noqa: E402
from harness_bt.planner.model import PlanRequest  # noqa: E402
from harness_bt.planner.templates import TemplatePlanner  # noqa: E402
from tests.harness_bt.planner.library_table import TABLE  # noqa: E402
from tests.harness_bt.planner.meaning_table import AFTER, CLEARING, HELD_OUT  # noqa: E402

Row = tuple[str, str, dict[str, Any]]


def right(planner: Any, library: Any, rows: list[Row]) -> int:
    hits = 0
    for text, task, params in rows:
        plan = planner.plan(PlanRequest(text, library)).plan
        hits += plan is not None and (plan.task, dict(plan.params)) == (task, params)
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    library = library_candidates(ROOT / "trees")
    planners = {"templates": TemplatePlanner(), "meaning": MeaningPlanner()}
    tables = {f"held-out ({len(HELD_OUT)})": HELD_OUT, f"after ({len(AFTER)})": AFTER,
              f"clearing ({len(CLEARING)})": CLEARING,
              f"templates table ({len(TABLE)})": TABLE}
    print(f"{'table':24} {'templates':>10} {'meaning':>10}")
    for name, rows in tables.items():
        got = {p: right(planner, library, rows) for p, planner in planners.items()}
        print(f"{name:24} {got['templates']:>6}/{len(rows):<3} {got['meaning']:>6}/{len(rows):<3}")
    rows = [*HELD_OUT, *AFTER, *CLEARING, *TABLE]
    times: dict[str, list[float]] = {p: [] for p in planners}
    for _ in range(args.rounds):
        for p, planner in planners.items():
            start = time.perf_counter()
            for text, _, _ in rows:
                planner.plan(PlanRequest(text, library))
            times[p].append((time.perf_counter() - start) / len(rows) * 1000)
    med = {p: statistics.median(v) for p, v in times.items()}
    print(f"ms per plan (median of {args.rounds} rounds of {len(rows)}): templates "
          f"{med['templates']:.2f}, meaning {med['meaning']:.2f} "
          f"(ratio {med['meaning'] / med['templates']:.2f}x)")


if __name__ == "__main__":
    main()
