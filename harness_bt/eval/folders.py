"""``harness compare DIR_A DIR_B``: two evaluation folders compared from their results stores,
without running an episode.

Each folder must hold a results store (``results.sqlite``) of one task version (``task``
picks one when a folder holds several). Its rows are relabelled ``A: TASK`` and ``B: TASK``, so
the report shows the two sides apart even when they are the same task. Per condition both
folders have, the episodes are paired by seed where the seeds match (exact McNemar on the
pairs, the test ``harness compare`` uses for two tasks; episodes without a partner are named
and left out of the test) and compared unpaired where no seed matches (Fisher's exact test).
Two folders of one condition each are compared even when the conditions differ. Every
difference between the sides (task, task version, condition, seeds) is said in ``notes``.

A trace file the store names but that has moved with its folder is found under the folder's
``traces/``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_bt.errors import DefinitionError
from harness_bt.eval.reuse import seed_ranges
from harness_bt.eval.store import STORE_NAME, ResultsStore

if TYPE_CHECKING:
    from harness_bt.eval.stats import Comparison, UnpairedComparison

__all__ = ["FolderComparison", "compare_folders", "is_eval_folder", "read_folder",
           "which_compare"]


def is_eval_folder(path: Path) -> bool:
    """A folder with a results store in it."""
    return path.is_dir() and (path / STORE_NAME).is_file()


def which_compare(a: Path, b: Path) -> str:
    """``"folders"`` when both are evaluation folders, ``"tasks"`` when neither is a folder;
    anything else is refused with what each argument is."""
    if not a.is_dir() and not b.is_dir():
        return "tasks"
    for label, path in (("A", a), ("B", b)):
        if path.is_dir() and not is_eval_folder(path):
            raise DefinitionError(
                "NO_STORE", f"{label} ({path}) is a folder without a results store "
                f"({STORE_NAME})", where=str(path),
                fix=f"give a folder harness eval wrote (harness eval TASK --out {path}), or "
                    "two task files")
    if a.is_dir() != b.is_dir():
        def kind(path: Path) -> str:
            return ("an evaluation folder" if path.is_dir() else "a task file" if path.is_file()
                    else "neither a folder nor a file")

        raise DefinitionError(
            "MIXED_ARGUMENTS", f"A ({a}) is {kind(a)} and B ({b}) is {kind(b)}",
            where=f"{a} {b}",
            fix="compare two evaluation folders (harness compare out/a out/b) or two task "
                "files (harness compare old.yaml new.yaml)")
    return "folders"


def _moved_trace(row: dict[str, Any], folder: Path) -> None:
    trace = row.get("trace")
    if trace and not Path(trace).is_file():
        here = folder / "traces" / Path(trace).name
        if here.is_file():
            row["trace"] = str(here)


def read_folder(path: Path, *, task: str | None = None) -> list[dict[str, Any]]:
    """The rows of the one task version in ``path``'s store (of ``task``, when given)."""
    with ResultsStore(path / STORE_NAME, read_only=True) as store:
        rows = store.rows()
    if not rows:
        raise DefinitionError("EMPTY_STORE", f"the results store in {path} has no episode",
                              where=str(path / STORE_NAME),
                              fix=f"run harness eval TASK --out {path} first")
    names = sorted({r["task"] for r in rows})
    if task is not None:
        rows = [r for r in rows if r["task"] == task]
        if not rows:
            raise DefinitionError("UNKNOWN_TASK", f"{path} holds no episode of task {task!r}; "
                                  f"its tasks: {', '.join(names)}", where=str(path),
                                  fix=f"pass --task {names[0]}")
    versions = sorted({(r["task"], r["digest"]) for r in rows})
    if len(versions) > 1:
        shown = ", ".join(f"{t} (digest {d[:8]})" for t, d in versions)
        fix = (f"pick one with --task NAME (one of {', '.join(names)})" if len(names) > 1
               else "compare folders of one task version each")
        raise DefinitionError("MIXED_STORE", f"{path} holds {len(versions)} task versions: "
                              f"{shown}; a folder comparison needs one", where=str(path),
                              fix=fix)
    for row in rows:
        _moved_trace(row, path)
    return rows


@dataclass
class FolderComparison:
    """Both sides' rows (relabelled), the comparisons and what differs between the sides."""

    rows_a: list[dict[str, Any]]
    rows_b: list[dict[str, Any]]
    comparisons: list[Comparison | UnpairedComparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _task_note(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    da, db = a["digest"][:8], b["digest"][:8]
    if a["digest"] == b["digest"]:
        return f"same task version in both folders: {a['task']} (digest {da})"
    if a["task"] == b["task"]:
        return (f"the task version differs: A {a['task']} (digest {da}), B {b['task']} "
                f"(digest {db}): the file or a document it includes changed")
    return f"the tasks differ: A {a['task']} (digest {da}), B {b['task']} (digest {db})"


def _conditions(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]],
                notes: list[str]) -> list[tuple[str, str]]:
    ca = sorted({r["condition"] for r in rows_a})
    cb = sorted({r["condition"] for r in rows_b})
    common = [c for c in ca if c in cb]
    if not common and len(ca) == 1 and len(cb) == 1:
        notes.append(f"the conditions differ: A {ca[0]}, B {cb[0]}; compared as they are")
        return [(ca[0], cb[0])]
    for side, mine, theirs in (("A", ca, cb), ("B", cb, ca)):
        for c in mine:
            if c not in theirs:
                notes.append(f"condition {c} is only in {side}: not compared")
    if not common:
        raise DefinitionError(
            "NOTHING_TO_COMPARE", f"the folders share no condition: A {', '.join(ca)}; "
            f"B {', '.join(cb)}", fix="evaluate both with the same --set and --inject")
    return [(c, c) for c in common]


def _compare(pair: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]],
             names: tuple[str, str], condition: str, alpha: float,
             notes: list[str]) -> Comparison | UnpairedComparison:
    from harness_bt.eval.stats import compare_paired, compare_unpaired

    a, b = pair
    seeds_a = {r["seed"]: r["outcome"] == "succeeded" for r in a if r.get("seed") is not None}
    seeds_b = {r["seed"]: r["outcome"] == "succeeded" for r in b if r.get("seed") is not None}
    shared = sorted(set(seeds_a) & set(seeds_b))
    if not shared:
        notes.append(f"{condition}: no seed in common (A {_ids(a)}; B {_ids(b)}): unpaired, "
                     "Fisher's exact test")
        return compare_unpaired(*names, ([r["outcome"] == "succeeded" for r in a],
                                         [r["outcome"] == "succeeded" for r in b]),
                                condition=condition, alpha=alpha)
    alone_a = [r for r in a if r.get("seed") not in shared]
    alone_b = [r for r in b if r.get("seed") not in shared]
    text = f"{condition}: paired by seed on {len(shared)} seed(s) ({seed_ranges(map(str, shared))})"
    if alone_a or alone_b:
        text += (f"; without a partner, not in the test: {len(alone_a)} of A"
                 + (f" ({_ids(alone_a)})" if alone_a else "") + f", {len(alone_b)} of B"
                 + (f" ({_ids(alone_b)})" if alone_b else ""))
    notes.append(text)
    return compare_paired(*names, [(seeds_a[s], seeds_b[s]) for s in shared],
                          condition=condition, alpha=alpha)


def _ids(rows: Sequence[Mapping[str, Any]]) -> str:
    seeds = [str(r["seed"]) for r in rows if r.get("seed") is not None]
    others = [str(r["episode"]) for r in rows if r.get("seed") is None]
    return seed_ranges(seeds) if not others else seed_ranges(seeds + others)


def compare_folders(dir_a: Path, dir_b: Path, *, alpha: float = 0.05,
                    task: str | None = None) -> FolderComparison:
    """Compare the stores of two evaluation folders (see the module docstring)."""
    if dir_a.resolve() == dir_b.resolve():
        raise DefinitionError("INVALID_OPTION", f"A and B are the same folder ({dir_a})",
                              fix="compare two evaluation folders")
    rows_a, rows_b = read_folder(dir_a, task=task), read_folder(dir_b, task=task)
    notes = [_task_note(rows_a[0], rows_b[0])]
    names = (rows_a[0]["task"], rows_b[0]["task"])
    result = FolderComparison(rows_a, rows_b, notes=notes)
    for ca, cb in _conditions(rows_a, rows_b, notes):
        label = ca if ca == cb else f"A {ca} / B {cb}"
        result.comparisons.append(_compare(
            ([r for r in rows_a if r["condition"] == ca],
             [r for r in rows_b if r["condition"] == cb]), names, label, alpha, notes))
    for side, rows in (("A", rows_a), ("B", rows_b)):
        for row in rows:
            row["task"] = f"{side}: {row['task']}"
    return result
