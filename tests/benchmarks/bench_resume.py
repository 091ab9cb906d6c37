"""Crash-resume cycles against a real runtime server: ``harness run trees/pick_cube.yaml
--runtime URL --journal run.db`` is killed with SIGKILL while a command of a given skill is
RUNNING in the runtime (read from the runtime's journal), then ``harness resume run.db``
finishes it. Each case starts its own ``harness runtime serve --backend sim`` (a fresh scene).

Per case: the outcome, the commands the runtime received, commands it started more than once
(must be 0), steps it completed more than once (a recovery may redo a step after a failure,
e.g. the lift the runtime held when its lease ran out), the commands the runtime held itself
(lease expired), the time from starting ``harness resume`` to its first reconciliation query
(process start and imports included), and the wall time of the resume. The
baseline is an uninterrupted journaled run measured in the same session; the ratio is
(time until the kill + resume) / baseline.

    python tests/benchmarks/bench_resume.py [--leases 30000,1000] [--skills approach,grasp,lift]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "trees" / "pick_cube.yaml")
sys.path.insert(0, str(ROOT))

from runtime_bridge.host.record_log import read_rows  # noqa: E402


def harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness_bt.cli", *args]


def records(path: Path) -> list[tuple[str, str | None, str, list[str]]]:
    return [(c, json.loads(cmd)["skill"] if cmd else None, s, [e["kind"] for e in
                                                              json.loads(ev)])
            for c, cmd, _, s, _, _, _, _, ev in read_rows(path).values()]


def serve(workdir: Path, lease_ms: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        harness("runtime", "serve", "--backend", "sim", "--bind", "tcp://127.0.0.1:*",
                "--telemetry", "tcp://127.0.0.1:*", "--journal", str(workdir / "rt.db"),
                "--lease-ms", str(lease_ms)),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            return proc, str(json.loads(line)["bind"])
    raise SystemExit(f"the runtime exited with {proc.wait()} before it was ready")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(20)
    if proc.stdout is not None:
        proc.stdout.close()


def case(lease_ms: int, skill: str | None) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench_resume_"))
    server, bind = serve(workdir, lease_ms)
    try:
        began = time.monotonic()
        run = subprocess.Popen(harness("run", TASK, "--runtime", bind, "--journal",
                                       str(workdir / "run.db"), "--json"),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               cwd=ROOT)
        if skill is None:
            out, _ = run.communicate(timeout=300)
            report = json.loads(out)
            killed_at = resumed_s = 0.0
            reconciled_s = None
        else:
            while not any(s == skill and st == "RUNNING"
                          for _, s, st, _ in records(workdir / "rt.db")):
                if run.poll() is not None or time.monotonic() - began > 120:
                    break
                time.sleep(0.02)
            run.send_signal(signal.SIGKILL)
            run.communicate()
            killed_at = time.monotonic()
            wall0 = time.time()
            trace = workdir / "resumed.jsonl"
            res = subprocess.run(harness("resume", str(workdir / "run.db"), "--json",
                                         "--trace", str(trace)),
                                 capture_output=True, text=True, cwd=ROOT, timeout=300)
            resumed_s = time.monotonic() - killed_at
            report = json.loads(res.stdout) if res.stdout.startswith("{") else {}
            walls = [e["wall"] for e in map(json.loads, trace.open())
                     if e["kind"] == "reconcile"] if trace.exists() else []
            reconciled_s = walls[0] - wall0 if walls else None
        total = time.monotonic() - began
        recs = records(workdir / "rt.db")
        started = Counter(c for c, _, _, ev in recs for k in ev if k == "started")
        done = Counter(c.rsplit("#", 1)[0] for c, _, st, _ in recs if st == "CONTROL_DONE")
        episode = (report.get("episodes") or [{}])[0]
        return {"lease_ms": lease_ms, "kill": skill or "-", "reason": episode.get("reason"),
                "commands": len(recs),
                "started_twice": sum(n - 1 for n in started.values() if n > 1),
                "steps_redone": sum(n - 1 for n in done.values() if n > 1),
                "held": sum(st == "STOPPED" for _, _, st, _ in recs),
                "reconciled_s": reconciled_s, "resume_s": resumed_s, "total_s": total}
    finally:
        stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", default="30000,1000")
    parser.add_argument("--skills", default="approach,grasp,lift")
    args = parser.parse_args()
    baseline = case(30000, None)
    print(f"baseline (no kill): {baseline['reason']}, {baseline['commands']} commands, "
          f"{baseline['total_s']:.1f} s wall", flush=True)
    rows = []
    for lease in (int(x) for x in args.leases.split(",")):
        for skill in args.skills.split(","):
            row = case(lease, skill)
            rows.append(row)
            print(row, flush=True)
    head = ("lease_ms", "kill", "reason", "commands", "started_twice", "steps_redone", "held",
            "reconciled_s", "resume_s", "total_s", "x baseline")
    print(" ".join(f"{h:>13}" for h in head))
    for r in rows:
        print(" ".join(f"{v:>13}" for v in (
            r["lease_ms"], r["kill"], str(r["reason"]), r["commands"], r["started_twice"],
            r["steps_redone"], r["held"],
            "-" if r["reconciled_s"] is None else f"{r['reconciled_s']:.2f}",
            f"{r['resume_s']:.1f}", f"{r['total_s']:.1f}",
            f"{r['total_s'] / baseline['total_s']:.2f}")))
    done = sum(r["reason"] == "done" for r in rows)
    print(f"resumed runs completed: {done}/{len(rows)}; commands started twice: "
          f"{sum(r['started_twice'] for r in rows)}")


if __name__ == "__main__":
    main()
