"""What every test shares: one injected clock, one leak policy, one way to close what a test
made, one way to start a process of the project and wait until it is ready."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harness_bt.clock import FakeClock

ROOT = Path(__file__).resolve().parents[1]
#: The environment of a child process: this checkout on its path.
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
#: How long what a test started may take to end after it (threads, processes).
SETTLE_S = 5.0
T = TypeVar("T")


@pytest.fixture
def clock() -> FakeClock:
    """A clock that moves only when the test says: no test sleeps to let time pass."""
    return FakeClock()


def _children() -> set[int]:
    """The child processes of this one (Linux: from /proc)."""
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
        with contextlib.suppress(OSError):
            out.update(int(pid) for pid in (task / "children").read_text().split())
    return out


def _segments() -> set[str]:
    """This process's shared-memory segments (a GenManip server unlinks its own on stop)."""
    mine = f"hbt-{os.getpid()}-"
    return {n for n in os.listdir("/dev/shm") if n.startswith(mine)} \
        if os.path.isdir("/dev/shm") else set()


@pytest.fixture(autouse=True)
def nothing_leaked() -> Iterator[None]:
    """The leak policy: a test leaves no thread (daemon or not), no child process and no
    shared-memory segment behind. What it started gets ``SETTLE_S`` to end."""
    threads = set(threading.enumerate())
    children = _children()
    yield
    deadline = time.monotonic() + SETTLE_S
    while True:
        extra = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        alive = _children() - children
        if not (extra or alive) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    left = _segments()
    for name in left:  # do not pollute the next test, then fail
        with contextlib.suppress(OSError):
            os.unlink(os.path.join("/dev/shm", name))
    assert not extra, f"the test left threads running: {extra}"
    assert not alive, f"the test left child processes running: {sorted(alive)}"
    assert not left, f"the test left shared-memory segments behind: {sorted(left)}"


@pytest.fixture
def closing() -> Iterator[Callable[..., Any]]:
    """``closing(thing, close=None) -> thing``: close ``thing`` (``thing.close()``, or the
    given callable) at teardown, the last made first. Every close runs; the first failure is
    raised after all of them."""
    closers: list[Callable[[], object]] = []

    def track(thing: T, close: Callable[[], object] | None = None) -> T:
        closers.append(close if close is not None else thing.close)  # type: ignore[attr-defined]
        return thing

    yield track
    errors: list[BaseException] = []
    for close in reversed(closers):
        try:
            close()
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise errors[0]


class Processes:
    """Child processes of one test, started with this checkout on their path; each is killed
    (when still running) and reaped at teardown."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *argv: str, env: dict[str, str] | None = None,
              stdout: int | None = subprocess.PIPE,
              stderr: int | None = subprocess.DEVNULL,
              stdin: int | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(list(argv), stdout=stdout, stderr=stderr, stdin=stdin,
                                text=True, env={**ENV, **(env or {})}, cwd=ROOT)
        self.started.append(proc)
        return proc

    def ready(self, *argv: str, env: dict[str, str] | None = None
              ) -> tuple[subprocess.Popen[str], dict[str, Any]]:
        """Start a server of the project and wait for the JSON line it prints once ready (it
        may print other lines first: PyBullet does)."""
        proc = self.start(*argv, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                return proc, dict(json.loads(line))
        raise AssertionError(f"{argv[:4]} exited with {proc.wait()} before it was ready")

    def close(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.wait(20)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def processes() -> Iterator[Processes]:
    made = Processes()
    yield made
    made.close()


def python(*args: str) -> list[str]:
    """A command line running this project's Python with ``args``."""
    return [sys.executable, *args]


# ---------------------------------------------------------------------------- example packages
#: The example packages under examples/ are installed into the test environment: ``make
#: setup`` does it; when one is missing (a virtualenv made otherwise), the session installs it
#: once with pip (editable, no dependencies) and puts it on the path.
PUSH = ROOT / "examples" / "harness-push"


def ensure_installed(package: Path, module: str) -> None:
    """``module`` importable and its distribution's entry points visible."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution(package.name)
        importlib.import_module(module)
        return
    except (PackageNotFoundError, ImportError):
        pass
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--disable-pip-version-check", "-e", str(package)], check=True,
                   timeout=600)
    if str(package) not in sys.path:  # the editable finder is read at start-up only
        sys.path.insert(0, str(package))
    importlib.invalidate_caches()
    importlib.import_module(module)


@pytest.fixture(scope="session")
def push_package() -> Path:
    """The harness-push example package, installed; its folder."""
    ensure_installed(PUSH, "harness_push")
    return PUSH
