"""Step through a trace in the terminal: each frame shows the chart configuration, the tree of
every active phase with its nodes' statuses, the ledger's commands and the step's events.
Keys: right / l / space next, left / h back, n / p next / previous chart transition, g / G
first / last, q quit. :func:`frame_text` renders one frame as text (what ``--at`` and
``--frames`` print)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from harness_bt.errors import HarnessError
from harness_bt.viz.frames import Frame

__all__ = ["KEYS", "Replay", "frame_renderable", "frame_text", "keys_mode", "read_key"]

_STYLE = {"SUCCESS": "green", "FAILURE": "red", "RUNNING": "yellow", "UNKNOWN": "magenta",
          "HALTED": "dark_orange", "NOT_TICKED": "grey50"}
_MARK = {"SUCCESS": "✔", "FAILURE": "✘", "RUNNING": "▶", "UNKNOWN": "?", "HALTED": "■",
         "NOT_TICKED": "·"}
KEYS = "→/l/space next · ←/h back · n/p next/previous transition · g/G first/last · q quit"


def _phases_to_show(structure: Mapping[str, Any], frame: Frame) -> list[str]:
    trees = structure.get("trees", {})
    active = [p for p in frame.configuration if p in trees]
    if active:
        return active
    return [p for p in dict.fromkeys(frame.visited) if p in trees]  # the run is over: all


def _tree(phase: str, entries: list[dict[str, Any]], frame: Frame) -> Tree:
    by_path = {e["path"]: e for e in entries}
    state = "active" if phase in frame.configuration else "last run"
    root = Tree(Text(f"{phase} ({state}, activation {frame.activations.get(phase, 0)})",
                     style="bold"))

    def label(entry: dict[str, Any]) -> Text:
        node = frame.node(phase, entry["path"])
        style = _STYLE.get(node.status, "")
        text = Text(f"{_MARK.get(node.status, ' ')} {entry['name']}", style=style)
        text.append(f"  {entry['type']}", style="dim")
        notes = []
        if entry["type"] == "retry":
            notes.append(f"run {1 + node.retries}/{(entry.get('params') or {}).get('attempts')}")
        if node.command:
            notes.append(f"#{node.attempts} {node.command_state}")
        if node.verdict:
            notes.append(f"verdict {node.verdict}")
        if node.outcome and node.status in ("FAILURE", "UNKNOWN", "HALTED"):
            notes.append(node.outcome)
        if notes:
            text.append("  " + " · ".join(notes), style=style or "dim")
        return text

    def add(parent: Tree, entry: dict[str, Any]) -> None:
        branch = parent.add(label(entry))
        for kid in entry.get("children", ()):
            if kid in by_path:
                add(branch, by_path[kid])

    if entries:
        add(root, entries[0])
    return root


def frame_renderable(structure: Mapping[str, Any], frame: Frame, *, index: int | None = None,
                     total: int | None = None) -> RenderableType:
    """A frame as rich renderables: header, configuration, trees, ledger, events."""
    parts: list[RenderableType] = []
    where = f"frame {index + 1}/{total} · " if index is not None and total is not None else ""
    head = Text(f"{structure.get('task')} · {where}seq {frame.seq} · tick {frame.tick} · "
                f"t={frame.mono:.2f} s", style="bold")
    if frame.result is not None:
        head.append(f" · {frame.result.get('outcome')} ({frame.result.get('reason')})",
                    style="bold green" if frame.result.get("outcome") == "succeeded"
                    else "bold red")
    parts.append(head)
    parts.append(Text(f"configuration: {', '.join(frame.configuration) or '(none)'}   "
                      f"visited: {' → '.join(frame.visited)}"))
    trees = structure.get("trees", {})
    for phase in _phases_to_show(structure, frame):
        parts.append(_tree(phase, trees.get(phase, []), frame))
    if frame.commands:
        table = Table(title="ledger", title_justify="left", show_edge=False, pad_edge=False)
        for col in ("command", "skill", "state", "reason"):
            table.add_column(col, overflow="fold")
        for info in frame.commands.values():
            style = {"SUCCEEDED": "green", "FAILED": "red", "UNKNOWN": "magenta",
                     "RUNNING": "yellow", "EVALUATING": "cyan"}.get(info.state, "")
            table.add_row(info.command_id, info.skill, Text(info.state, style=style),
                          info.reason)
        parts.append(table)
    if frame.counters:
        parts.append(Text("budget: " + ", ".join(f"{k} {v}" for k, v in frame.counters.items())))
    if frame.events:
        parts.append(Text("events:", style="bold"))
        parts += [Text(f"  {e['seq']:>5} {e['kind']:<12} {e['text']}", style="dim")
                  for e in frame.events[-12:]]
    return Group(*parts)


def frame_text(structure: Mapping[str, Any], frame: Frame, *, width: int = 110,
               index: int | None = None, total: int | None = None) -> str:
    """A frame as plain text."""
    console = Console(width=width, record=True, file=open(os.devnull, "w"),  # noqa: SIM115
                      color_system=None, force_jupyter=False)
    console.print(frame_renderable(structure, frame, index=index, total=total))
    text = console.export_text()
    console.file.close()
    return text


def read_key() -> str:
    """One key press from the terminal (in cbreak mode: see :func:`keys_mode`): ``right``,
    ``left``, ``up``, ``down`` or a character."""
    fd = sys.stdin.fileno()
    ch = os.read(fd, 1).decode(errors="replace")
    if ch == "\x1b":
        seq = os.read(fd, 2).decode(errors="replace")
        return {"[C": "right", "[D": "left", "[A": "up", "[B": "down"}.get(seq, "esc")
    return ch


@contextlib.contextmanager
def keys_mode() -> Iterator[None]:
    """The terminal in cbreak mode (keys arrive one by one, unechoed; output and Ctrl-C as
    usual) for the whole session, so no key typed while a frame draws is lost."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


class Replay:
    """Interactive stepping over frames (``keys``: a key source, for tests)."""

    def __init__(self, structure: Mapping[str, Any], frames: list[Frame], *,
                 console: Console | None = None, keys: Callable[[], str] | None = None) -> None:
        if not frames:
            raise HarnessError("EMPTY_TRACE", "the trace has no events to step through")
        self.structure = structure
        self.frames = frames
        self.index = 0
        self.console = console or Console()
        self.keys = keys or read_key

    def step(self, key: str) -> bool:
        """Apply one key; False when it means quit."""
        last = len(self.frames) - 1
        if key in ("q", "\x03", "esc"):
            return False
        if key in ("right", "l", " ", "down"):
            self.index = min(last, self.index + 1)
        elif key in ("left", "h", "up"):
            self.index = max(0, self.index - 1)
        elif key == "g":
            self.index = 0
        elif key == "G":
            self.index = last
        elif key in ("n", "p"):
            step = 1 if key == "n" else -1
            i = self.index + step
            while 0 <= i <= last and not any(e["kind"] == "chart" for e in self.frames[i].events):
                i += step
            self.index = max(0, min(last, i))
        return True

    def run(self) -> int:
        """Draw, read a key, repeat until ``q``; returns the last frame's index."""
        with keys_mode() if self.keys is read_key else contextlib.nullcontext():
            while True:
                self.console.clear()
                self.console.print(frame_renderable(self.structure, self.frames[self.index],
                                                    index=self.index, total=len(self.frames)))
                self.console.print(Text(KEYS, style="dim"))
                if not self.step(self.keys()):
                    return self.index
