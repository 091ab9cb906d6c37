"""What a run asks of its runtime beyond the common options: :class:`RuntimeSettings`, one
typed field per setting any built-in runtime reads (None: that runtime's default), checked
when built. A runtime reads the fields it knows and ignores the others."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.plugins import did_you_mean

__all__ = ["RuntimeSettings"]

_WHOLE = frozenset({"num_steps", "success_hold_steps", "batch_steps", "min_epoch"})
_NUMBERS = frozenset({"frame_hz", "tick_s", "connect_timeout_s", "max_age_s"})
_TEXT = frozenset({"executors", "worker_id", "render", "service", "telemetry", "mapping",
                   "record_ros2"})
_FLAGS = frozenset({"keep_world"})


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """Runtime-specific settings of one run.

    The in-process simulator: ``executors`` (``package.module:factory`` instead of the
    installed executors), ``worker_id``, ``num_steps`` (steps per episode),
    ``success_hold_steps``, ``render`` (the render mode), ``frame_hz`` (frames a watcher
    gets while commands run), ``batch_steps`` (steps one poll may run while nobody looks),
    ``keep_world`` (keep the simulator's world for the process's next run: eval workers).
    A ZeroMQ runtime server: ``service``, ``min_epoch`` (the control epoch a resumed run
    must exceed), ``tick_s``, ``connect_timeout_s``, ``telemetry`` (a PUB endpoint to
    subscribe to instead of the announced one). A ROS 2 robot: ``mapping`` (the skill
    mapping file), ``max_age_s`` (oldest observation accepted), ``cameras``,
    ``record_ros2`` (a rosbag2 file to record into), ``tick_s``, ``connect_timeout_s``."""

    executors: str | None = None
    worker_id: str | None = None
    num_steps: int | None = None
    success_hold_steps: int | None = None
    render: str | None = None
    frame_hz: float | None = None
    batch_steps: int | None = None
    service: str | None = None
    min_epoch: int | None = None
    tick_s: float | None = None
    connect_timeout_s: float | None = None
    telemetry: str | None = None
    mapping: str | None = None
    max_age_s: float | None = None
    cameras: tuple[str, ...] | None = None
    record_ros2: str | None = None
    keep_world: bool | None = None

    def __post_init__(self) -> None:
        for name, value in self.given().items():
            if name in _WHOLE and (isinstance(value, bool) or not isinstance(value, int)
                                   or value < 0):
                raise DefinitionError("INVALID_RUNTIME_SETTING", f"runtime setting "
                                      f"{name}={value!r} must be a whole number >= 0",
                                      fix=f"give {name} as e.g. 600")
            if name in _NUMBERS and (isinstance(value, bool) or not isinstance(value, int | float)
                                     or not math.isfinite(value) or value < 0):
                raise DefinitionError("INVALID_RUNTIME_SETTING", f"runtime setting "
                                      f"{name}={value!r} must be a finite number >= 0",
                                      fix=f"give {name} in seconds or hertz, e.g. 2.0")
            if name in _FLAGS and not isinstance(value, bool):
                raise DefinitionError("INVALID_RUNTIME_SETTING", f"runtime setting "
                                      f"{name}={value!r} must be true or false",
                                      fix=f"give {name} as true or false")
            if name in _TEXT and not isinstance(value, str):
                raise DefinitionError("INVALID_RUNTIME_SETTING", f"runtime setting "
                                      f"{name}={value!r} must be text",
                                      fix=f"give {name} as a string")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, where: str = "runtime settings"
                     ) -> RuntimeSettings:
        """Settings from ``{name: value}`` (a command line's or a file's); an unknown name
        is refused with the known ones."""
        known = cls.names()
        for name in values:
            if name not in known:
                raise DefinitionError(
                    "UNKNOWN_RUNTIME_SETTING", f"{where}: no runtime setting {name!r}; known: "
                    f"{', '.join(known)}{did_you_mean(str(name), known)}",
                    fix="fix the name, or drop it")
        given = dict(values)
        if isinstance(given.get("cameras"), str):
            given["cameras"] = tuple(c for c in given["cameras"].split(",") if c)
        elif given.get("cameras") is not None:
            given["cameras"] = tuple(str(c) for c in given["cameras"])
        return cls(**given)

    def given(self) -> dict[str, Any]:
        """The settings given (not None), by name."""
        return {n: getattr(self, n) for n in self.names() if getattr(self, n) is not None}
