"""Shared test helpers: render a runner's state compactly, tick with a fake clock, drive a
headless Chromium."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_bt import FakeClock, TaskRunner
from harness_bt.run.settings import RunnerSettings, RunParts

LETTER = {"SUCCESS": "S", "FAILURE": "F", "RUNNING": "R", "INVALID": "-"}


def view(runner: TaskRunner) -> tuple[tuple[str, ...], dict[str, str]]:
    """(chart configuration, {phase: "node=S node=R ..."}) with every node of every active
    phase's tree, in pre-order, by node name (unique within the example's trees)."""
    out = {}
    for phase, statuses in runner.status_map().items():
        out[phase] = " ".join(f"{p.rsplit('/', 1)[-1]}={LETTER[s]}" for p, s in statuses.items())
    return runner.configuration, out


def tick_views(runner: TaskRunner, clock: FakeClock, n: int, dt: float = 0.05
               ) -> list[tuple[Any, ...]]:
    """Tick ``n`` times (advancing ``dt`` after each) and return the view after every tick."""
    views = []
    for _ in range(n):
        runner.tick()
        views.append(view(runner))
        clock.advance(dt)
    return views


def run_to_end(runner: TaskRunner, clock: FakeClock, max_ticks: int = 400, dt: float = 0.05
               ) -> list[tuple[Any, ...]]:
    views = []
    for _ in range(max_ticks):
        runner.tick()
        views.append(view(runner))
        if runner.phase == "finished":
            return views
        clock.advance(dt)
    raise AssertionError(f"run did not finish in {max_ticks} ticks: {runner.configuration}")


def one_phase(tree: Any, *, budget: Any = None, name: str = "t") -> Any:
    """A task with one atomic phase ``work`` and a final for every outcome."""
    from harness_bt import Final, Phase, Task, on

    return Task(name, [
        Phase("work", tree, transitions=[
            on("succeeded", "done"), on("failed", "aborted_failed"),
            on("unknown", "aborted_unknown"), on("budget_exhausted", "aborted_budget")]),
        Final("done"), Final("aborted_failed"), Final("aborted_unknown"),
        Final("aborted_budget"),
    ], budget=budget)


def runner_for(task: Any, clock: FakeClock, rt: Any, **kw: Any) -> TaskRunner:
    """A runner of ``task`` on ``rt`` with the example's skills; ``kw`` may name any field of
    :class:`RunnerSettings` or :class:`RunParts` besides TaskRunner's own keywords."""
    from harness_bt.testing.example import example_skills

    kw.setdefault("skills", example_skills())
    settings = {k: kw.pop(k) for k in list(kw) if k in RunnerSettings.__dataclass_fields__}
    parts = {k: kw.pop(k) for k in list(kw) if k in RunParts.__dataclass_fields__}
    return TaskRunner(task, bridge=rt, clock=clock, run_id="r",
                      settings=RunnerSettings(**settings), parts=RunParts(**parts), **kw)


def last_failure(runner: TaskRunner) -> dict[str, Any]:
    return runner.trace.of_kind("failure")[-1]["data"]["outcome"]


@contextlib.contextmanager
def chromium(tmp_path: Path, size: str = "1400,900", *extra: str) -> Iterator[Any]:
    """A headless Chromium driven by Selenium (Debian's chromium and chromium-driver), quit on
    exit; a missing browser fails the test with how to install it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_exe = shutil.which("chromedriver")
    if exe is None or driver_exe is None:
        pytest.fail("chromium and chromium-driver are needed: `make test` installs them with "
                    "apt when root, or apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = exe
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", f"--window-size={size}",
                "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", *extra):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(driver_exe))
    try:
        yield driver
    finally:
        driver.quit()
