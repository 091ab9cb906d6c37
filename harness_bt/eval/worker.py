"""The worker process of :class:`~harness_bt.eval.workers.ProcessPool`:
``python -m harness_bt.eval.worker DRIVER_PID EPISODE_FN``.

It reads one request per line on stdin (``{"spec": ..., "skip": [...]}`` as JSON), runs it,
and writes its messages (``row``, ``done``, ``error``; see
:func:`~harness_bt.eval.workers.run_in_worker`) one JSON object per line on the stdout it was
started with. Everything else that writes to file descriptor 1 (native libraries do) goes to
stderr. It dies with its driver (``PR_SET_PDEATHSIG``), and ends when stdin closes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

import orjson

__all__ = ["main"]


def _die_with(parent: int) -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PDEATHSIG
    if os.getppid() != parent:  # the driver died before the signal was armed
        os._exit(1)


def main(argv: list[str]) -> int:
    parent, episode_fn = int(argv[0]), argv[1]
    _die_with(parent)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from harness_bt.eval.plan import EpisodeSpec
    from harness_bt.eval.workers import run_in_worker

    def send(item: dict[str, object]) -> None:
        out.write(orjson.dumps(item) + b"\n")

    for line in sys.stdin.buffer:
        message = orjson.loads(line)
        spec = EpisodeSpec.from_dict(message["spec"])
        for item in run_in_worker(spec, episode_fn, message.get("skip", ()), emit=send):
            send(item)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
