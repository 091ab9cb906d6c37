"""Crash-resume with an object occluded after it was seen: the demonstration.

Runs :func:`runtime_bridge.testing.hiding.occluded_resume` twice on pick_and_place (seed 0):
a runtime process over the built-in simulator, ``harness run --journal`` killed with SIGKILL
half a second after the tray was hidden from the camera (once the cube was lifted), then
``harness resume`` with its world memory, and ``harness resume --forget-world`` (the run as
it was before world memory) on a second, identical setup. Prints, for each, how the resumed
run ended, what its checkpoint restored, how the resumed transport found the tray, the
commands the runtime started twice, and the wall times (first run to the kill; the resume).

    python tests/benchmarks/resume_memory.py [--seed 0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from runtime_bridge.testing.hiding import Occluded, Scenario, occluded_resume  # noqa: E402


def _starter(started: list[subprocess.Popen[str]]) -> Any:
    def start(*argv: str, stdin: int | None = None, stdout: int | None = subprocess.PIPE,
              stderr: int | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
        proc = subprocess.Popen(list(argv), stdin=stdin, stdout=stdout, stderr=stderr,
                                text=True, cwd=ROOT)
        started.append(proc)
        return proc
    return start


def _found(run: Occluded) -> str:
    plans = [e["data"] for e in run.trace if e["kind"] == "blackboard"
             and e["data"]["key"] == "plan" and e["data"]["writer"] == "carry/look"]
    if plans:
        tray = plans[0]["value"]["objects"]["tray"]
        return "from memory (v{version})".format(**tray) if tray["remembered"] else "seen"
    failed = [e["data"]["outcome"] for e in run.trace if e["kind"] == "outcome"
              and e["data"]["event"] == "failed.transport"]
    return f"not found ({failed[0]['reason']}: {failed[0]['details']['missing']})" \
        if failed else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="keep each run's files under this directory")
    args = parser.parse_args()
    rows = []
    for forget in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            work = (args.keep / ("forget_world" if forget else "memory")) if args.keep \
                else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            for name in ("pick_and_place.yaml", "steps.yaml"):  # a budget load cannot exhaust
                text = (ROOT / "trees" / name).read_text()
                (work / name).write_text(text.replace("max_time_s: 27.0", "max_time_s: 150.0"))
            started: list[subprocess.Popen[str]] = []
            try:
                run = occluded_resume(Scenario(task=str(work / "pick_and_place.yaml"),
                                               seed=args.seed, forget_world=forget),
                                      work, _starter(started))
            finally:
                for proc in started:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
        world = next(e["data"]["world"] for e in run.trace if e["kind"] == "resume")
        restored = "none (--forget-world)" if world.get("forgotten") else \
            ", ".join(f"{k} v{v}" for k, v in sorted(world["objects"].items()))
        rows.append(("harness resume" + (" --forget-world" if forget else ""),
                     f"{run.episode['outcome']} ({run.episode['reason']})", restored,
                     _found(run), str(len(run.started_twice())), f"{run.first_s:.1f}",
                     f"{run.resume_s:.1f}"))
    head = ("resumed with", "result", "restored", "tray in the resumed transport",
            "started twice", "first run s", "resume s")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    for row in (head, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
