"""What an evaluation takes from the results store it is pointed at, said aloud.

Before any episode runs, :func:`survey` sorts the store's recorded episodes and the planned
ones into three groups, each per task version (task, digest, condition): ``reused`` (planned
and recorded before: not run again), ``new`` (planned, not recorded: run now) and ``other``
(recorded, not part of this evaluation: another task, task version, ``--set`` value or fault).
``harness eval`` and ``harness compare`` print the groups and put them in their JSON.

A store with ``other`` episodes belongs to another evaluation: :func:`refuse_other` refuses it
(``STORE_MISMATCH``) unless ``--reuse`` is given, so an edited task or a new ``--set`` value
never lands silently beside older results. With ``--reuse`` they stay in the store and out of
this evaluation's report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_bt.errors import DefinitionError
from harness_bt.eval.plan import EpisodeSpec

__all__ = ["Reuse", "Version", "refuse_other", "seed_ranges", "survey"]


def seed_ranges(episodes: Iterable[str]) -> str:
    """``0..3, 7, 9..10`` for seeds; other episode ids (a server's ``w0.e1``) listed as
    they are, the first eight and a count."""
    ids = list(dict.fromkeys(episodes))
    if not all(e.lstrip("-").isdigit() for e in ids):
        return ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
    seeds = sorted(int(e) for e in ids)
    spans: list[list[int]] = []
    for s in seeds:
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in spans)


@dataclass(frozen=True, slots=True)
class Version:
    """The episodes of one task version under one condition."""

    task: str
    digest: str
    condition: str
    episodes: tuple[str, ...]

    def describe(self) -> str:
        word = "seeds" if all(e.lstrip("-").isdigit() for e in self.episodes) else "episodes"
        return (f"{len(self.episodes)} of {self.task} (digest {self.digest[:8]}, "
                f"{self.condition}) {word} {seed_ranges(self.episodes)}")

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "digest": self.digest, "condition": self.condition,
                "count": len(self.episodes), "episodes": seed_ranges(self.episodes)}


def _versions(items: Iterable[tuple[str, str, str, str]]) -> tuple[Version, ...]:
    groups: dict[tuple[str, str, str], list[str]] = {}
    for task, digest, condition, episode in items:
        groups.setdefault((task, digest, condition), []).append(episode)
    return tuple(Version(t, d, c, tuple(e)) for (t, d, c), e in sorted(groups.items()))


@dataclass(frozen=True, slots=True)
class Reuse:
    """See the module docstring. ``server``: the episodes are a GenManip server's, so which
    are new is the server's queue's to decide."""

    store: str
    existed: bool
    reused: tuple[Version, ...]
    new: tuple[Version, ...]
    other: tuple[Version, ...]
    server: bool = False

    @property
    def reused_count(self) -> int:
        return sum(len(v.episodes) for v in self.reused)

    @property
    def new_count(self) -> int:
        return sum(len(v.episodes) for v in self.new)

    def lines(self) -> list[str]:
        """What the command prints about the store."""
        if not self.existed:
            return [f"results store {self.store}: new"]
        out = [f"results store {self.store}: exists; reusing {self.reused_count} recorded "
               "episode(s)" + (": " + "; ".join(v.describe() for v in self.reused)
                               if self.reused else "")]
        if self.server:
            out.append("new: the server's queue decides (recorded episodes are not recorded "
                       "again)")
        else:
            out.append(f"new: {self.new_count} episode(s): " + "; ".join(
                v.describe() for v in self.new) if self.new else "new: none")
        if self.other:
            out.append("kept in the store, not in this report (--reuse): " + "; ".join(
                v.describe() for v in self.other))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "existed": self.existed, "reused": self.reused_count,
                "new": None if self.server else self.new_count,
                "reused_versions": [v.to_dict() for v in self.reused],
                "new_versions": [v.to_dict() for v in self.new],
                "other_versions": [v.to_dict() for v in self.other], "lines": self.lines()}


def survey(store: str, existed: bool, recorded: Sequence[Mapping[str, Any]],
           specs: Sequence[EpisodeSpec]) -> Reuse:
    """Sort ``recorded`` rows and the planned ``specs`` (see the module docstring)."""
    planned = {(s.digest, s.condition) for s in specs}
    keys = {(s.digest, s.condition, s.key.episode) for s in specs}
    server = any(s.sim_url is not None for s in specs)
    mine = [r for r in recorded if (r["digest"], r["condition"]) in planned]
    done = {(r["digest"], r["condition"], r["episode"]) for r in mine}
    return Reuse(
        store=store, existed=existed,
        reused=_versions((r["task"], r["digest"], r["condition"], r["episode"]) for r in mine
                         if server or (r["digest"], r["condition"], r["episode"]) in keys),
        new=() if server else _versions(
            (s.task, s.digest, s.condition, s.key.episode) for s in specs
            if (s.digest, s.condition, s.key.episode) not in done),
        other=_versions((r["task"], r["digest"], r["condition"], r["episode"])
                        for r in recorded if (r["digest"], r["condition"]) not in planned),
        server=server)


def refuse_other(reuse: Reuse, specs: Sequence[EpisodeSpec], *, allowed: bool) -> None:
    """``STORE_MISMATCH`` when the store holds another evaluation's episodes and ``--reuse``
    was not given."""
    if not reuse.other or allowed:
        return
    mine = "; ".join(dict.fromkeys(f"{s.task} (digest {s.digest[:8]}, {s.condition})"
                                   for s in specs))
    theirs = "; ".join(v.describe() for v in reuse.other)
    raise DefinitionError(
        "STORE_MISMATCH", f"the results store {reuse.store} holds another evaluation's "
        f"episodes: {theirs}; this evaluation is {mine}", where=reuse.store,
        fix="point --out at a new folder, or pass --reuse to add this evaluation's episodes "
            "beside them (each report shows only its own)")
