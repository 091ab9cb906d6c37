"""What an evaluation runs: one :class:`EpisodeSpec` per (task version, condition, seed).

A spec is the unit of work handed to a worker (a local process or a Ray task): plain data that
crosses the process boundary as JSON. Its :attr:`~EpisodeSpec.key` identifies the episode in
the results store: the task's digest (its file and the files it includes, so an edited task is
a new version), the condition (the ``--set`` values and injected faults, as one label) and the
episode id (the seed; against a GenManip server, the server's episode id).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["EpisodeKey", "EpisodeSpec", "condition_label", "plan_episodes", "task_digest"]


def task_digest(path: str | Path) -> str:
    """SHA-256 of a task file and of the documents it includes (``includes:``), in order."""
    file = Path(path)
    h = hashlib.sha256(file.read_bytes())
    if file.suffix.lower() in (".yaml", ".yml"):
        try:
            doc = yaml.safe_load(file.read_text())
        except yaml.YAMLError:
            doc = None
        includes = doc.get("includes") if isinstance(doc, dict) else None
        for name in includes if isinstance(includes, list) else []:
            inc = file.parent / str(name)
            if inc.is_file():
                h.update(b"\0" + str(name).encode() + b"\0" + inc.read_bytes())
    return h.hexdigest()


def condition_label(params: Mapping[str, Any], faults: Mapping[str, float]) -> str:
    """``target=green_cube slip=0.3,nudge=0.3``: the ``--set`` values, then the faults;
    ``clean`` for neither."""
    parts = []
    if params:
        parts.append(",".join(f"{k}={params[k]}" for k in sorted(params)))
    if faults:
        parts.append(",".join(f"{k}={faults[k]:g}" for k in sorted(faults)))
    return " ".join(parts) or "clean"


@dataclass(frozen=True, slots=True)
class EpisodeKey:
    """An episode's identity in the results store."""

    digest: str
    condition: str
    episode: str


@dataclass(frozen=True, slots=True)
class EpisodeSpec:
    """One episode to run (see the module docstring). ``task``: the label reports use (the
    task file's stem); ``params``: ``--set`` values as given; ``episode``: the seed as text, or
    (``sim_url``) the GenManip worker id that drives the server's episodes; ``trace_dir``:
    where the episode's JSONL trace goes (None: no trace)."""

    task: str
    task_file: str
    digest: str
    condition: str
    seed: int
    scene: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    faults: Mapping[str, float] = field(default_factory=dict)
    trace_dir: str | None = None
    sim_url: str | None = None
    worker_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> EpisodeKey:
        return EpisodeKey(self.digest, self.condition, str(self.seed))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["params"] = dict(self.params)
        data["faults"] = dict(self.faults)
        data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeSpec:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def plan_episodes(task_files: list[Path], *, episodes: int, seed: int,
                  params: Mapping[str, str], faults: Mapping[str, float],
                  scene: str | None, trace_dir: str | None,
                  extra: Mapping[str, Any] | None = None) -> list[EpisodeSpec]:
    """Every task on seeds ``seed .. seed + episodes - 1``, interleaved by seed (so a partial
    run has covered every task about equally)."""
    condition = condition_label(params, faults)
    tasks = [(f.stem, str(f.resolve()), task_digest(f)) for f in task_files]
    return [EpisodeSpec(task=name, task_file=file, digest=digest, condition=condition,
                        seed=seed + k, scene=scene, params=dict(params), faults=dict(faults),
                        trace_dir=trace_dir, extra=dict(extra or {}))
            for k in range(episodes) for name, file, digest in tasks]
