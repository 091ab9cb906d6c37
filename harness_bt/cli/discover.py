"""``harness skills``, ``harness nodes``, ``harness evaluators`` and ``harness scenes``: what is
installed, from the same registries a run uses (docs/discovering.md).

Each lists its kind, or describes one entry by name (an unknown name gets the known ones and a
"did you mean"), as tables on a terminal, as plain aligned text when piped, and as JSON with
``--json``. A plug-in that fails to load is reported on stderr and left out: it cannot take the
list down.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from harness_bt.catalogue.entries import (
    INTERNAL_NODE_TYPES,
    EvaluatorEntry,
    NodeEntry,
    SkillEntry,
    evaluator_entries,
    node_entries,
    skill_entries,
)
from harness_bt.catalogue.scenes import SceneEntry, scene_entries
from harness_bt.errors import DefinitionError
from harness_bt.plugins import Group, Registry, did_you_mean

__all__ = ["evaluators", "nodes", "scenes", "skills"]

JSON_HELP = "Print JSON (the whole description) instead of text."


class _Out:
    """Tables on a terminal; aligned plain text (nothing wrapped, no colour) when piped."""

    def __init__(self) -> None:
        self.console = Console(highlight=False)
        self.rich = self.console.is_terminal
        if not self.rich:
            self.console = Console(highlight=False, soft_wrap=True, no_color=True)

    def heading(self, text: str) -> None:
        if self.rich:
            self.console.print(f"[bold]{text}[/]", markup=True)
        else:
            self.console.print(text, markup=False)

    def line(self, text: str = "") -> None:
        self.console.print(text, markup=False)

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
              title: str | None = None, indent: str = "") -> None:
        if self.rich:
            table = Table(title=title, title_justify="left", show_lines=False)
            for column in columns:
                table.add_column(column, overflow="fold")
            for row in rows:
                table.add_row(*row)
            self.console.print(table)
            return
        if title:
            self.line(title)
        widths = [max(len(str(c)) for c in col) for col in zip(columns, *rows, strict=True)]
        for row in [list(columns), *[list(r) for r in rows]]:
            cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True)]
            self.line((indent + "  ".join([*cells, str(row[-1])])).rstrip())


def _warn(error: DefinitionError) -> None:
    Console(stderr=True, highlight=False).print(f"warning: {error}", markup=False)


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _unknown(kind: str, name: str, known: list[str], every: list[str], fix: str) -> None:
    raise DefinitionError(
        f"UNKNOWN_{kind.upper().replace(' ', '_')}",
        f"unknown {kind} {name!r}; known: {', '.join(known) or '(none)'}"
        f"{did_you_mean(name, every)}", fix=fix, details={"name": name, "known": known})


# ---------------------------------------------------------------------------------- skills


def _installed() -> tuple[Any, Any, Any]:
    from harness_bt.evaluation import EvaluatorRegistry
    from harness_bt.runtime.executor import ExecutorRegistry
    from harness_bt.skill import SkillRegistry

    skills_ = SkillRegistry()
    skills_.load(Group.SKILLS, on_error=_warn)
    evaluators_ = EvaluatorRegistry()
    evaluators_.load(Group.EVALUATORS, on_error=_warn)
    executors: Registry[Any] = ExecutorRegistry()
    executors.load(Group.EXECUTORS, on_error=_warn)
    return skills_, evaluators_, executors


def _evaluated_by(entry: SkillEntry) -> str:
    return ", ".join(p.evaluator + (f" ({p.when})" if p.when else "")
                     for p in entry.postconditions) or "-"


def _skill_detail(out: _Out, entry: SkillEntry) -> None:
    out.heading(f"skill {entry.name} (version {entry.version}): {entry.description}")
    out.line(f"from: {entry.source} ({entry.source.origin})")
    out.line("executor: " + (f"{entry.executor} ({entry.executor.origin})" if entry.executor
                             else "none installed here (a runtime elsewhere may run it)"))
    out.line(f"resources: {', '.join(entry.resources) or '(none)'}")
    out.line()
    out.heading(f"params ({entry.params_model}): {entry.params_doc}")
    rows = [[p.name, p.type, "required" if p.required else json.dumps(p.default),
             " ".join(filter(None, [p.range_text(), p.length_text()])), p.unit,
             p.description] for p in entry.params]
    out.table(["param", "type", "default", "range", "unit", "meaning"], rows, indent="  ")
    out.line()
    out.heading("postconditions (judged from observations by these evaluators)")
    for post in entry.postconditions:
        missing = "" if post.registered else "  (evaluator not installed here!)"
        out.line(f"  {post.evaluator}" + (f"  when {post.when}" if post.when and
                                          not post.when.startswith("unless") else
                                          f"  {post.when}" if post.when else "  always")
                 + missing)
    for note in entry.notes:
        out.line(f"  {note}")
    life = entry.lifecycle
    out.line()
    out.line(f"lifecycle: start within {life['start_within_ms']:g} ms, run at most "
             f"{life['execution_timeout_ms']:g} ms, stop within {life['stop_timeout_ms']:g} ms"
             + (f", progress at least every {life['progress_timeout_ms']:g} ms"
                if life["progress_timeout_ms"] else "")
             + (f", needs an observation at most {life['needs_fresh_observation_ms']:g} ms "
                "old" if life["needs_fresh_observation_ms"] else "")
             + f"; retry {'safe' if life['retry_safe'] else 'NOT safe'}; cancel: "
             f"{life['cancel']}")



def _one_or_all(entries: Sequence[Any], name: str | None, as_json: bool,
                detail: Callable[[_Out, Any], None]) -> _Out | None:
    """Print the JSON of every entry (or of the one ``name``d), or the named one's detail, and
    return None; with neither, the output the caller prints its table of all to."""
    if name is not None:
        entries = [e for e in entries if e.name == name]
    if as_json:
        _echo_json([e.to_dict() for e in entries] if name is None else entries[0].to_dict())
        return None
    out = _Out()
    if name is not None:
        detail(out, entries[0])
        return None
    return out

def skills(
    name: str = typer.Argument(None, help="A skill to describe (default: list them all)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List the installed skills, or describe one: params (types, ranges, defaults, units),
    resources, postconditions and the evaluators that judge them, the installing package."""
    skills_, evaluators_, executors = _installed()
    if name is not None and name not in skills_:
        _unknown("skill", name, skills_.names(), skills_.names(),
                 "name an installed skill (harness skills lists them), or install the package "
                 "that provides it")
    entries = skill_entries(skills_, evaluators=evaluators_, executors=executors)
    out = _one_or_all(entries, name, as_json, _skill_detail)
    if out is None:
        return
    out.table(["skill", "resources", "judged by", "package", "description"],
              [[e.name, ", ".join(e.resources), _evaluated_by(e), str(e.source),
                e.description] for e in entries],
              title=f"{len(entries)} skills (harness skills NAME describes one)")


# ---------------------------------------------------------------------------------- nodes


def _node_detail(out: _Out, entry: NodeEntry) -> None:
    manifest = entry.manifest
    out.heading(f"node type {entry.name} ({manifest.kind}"
                f"{', internal' if entry.internal else ''}): {manifest.description}")
    out.line(f"from: {entry.source}")
    if entry.internal:
        out.line("internal: a part that an idiom builds; task files do not name it")
    out.line()
    out.heading("ports")
    if manifest.ports:
        out.table(["port", "type", "required", "default", "blackboard", "meaning"],
                  [[p.name, p.type, "yes" if p.required else "no",
                    "" if p.default is None else json.dumps(p.default), p.blackboard,
                    p.description] for p in manifest.ports], indent="  ")
    else:
        out.line("  (none)")
    if manifest.writes:
        out.line(f"  also writes: {', '.join(manifest.writes)}")
    out.line()
    out.heading("statuses")
    for status in ("SUCCESS", "FAILURE", "RUNNING"):
        out.line(f"  {status}: {manifest.status.get(status, 'never')}")


def nodes(
    type_name: str = typer.Argument(None, metavar="[TYPE]",
                                    help="A node type to describe (default: list them)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    show_all: bool = typer.Option(False, "--all", help="Also list the internal node types "
                                  "(the parts idioms build: " +
                                  ", ".join(sorted(INTERNAL_NODE_TYPES)) + ")."),
) -> None:
    """List the node types a task file can use, or describe one: its ports and what its
    SUCCESS, FAILURE and RUNNING mean."""
    from harness_bt.nodes.registry import NodeRegistry

    registry = NodeRegistry()
    registry.load(Group.NODES, on_error=_warn)
    every = node_entries(registry, internal=True)
    if type_name is not None:
        found = [e for e in every if e.name == type_name]
        if not found:
            _unknown("node type", type_name, [e.name for e in every if not e.internal],
                     [e.name for e in every],
                     "name a node type (harness nodes lists them)")
        if as_json:
            _echo_json(found[0].to_dict())
        else:
            _node_detail(_Out(), found[0])
        return
    entries = [e for e in every if show_all or not e.internal]
    if as_json:
        _echo_json([e.to_dict() for e in entries])
        return
    order = {"action": 0, "condition": 1, "idiom": 2, "decorator": 3, "composite": 4}
    entries.sort(key=lambda e: (order.get(e.kind, 9), e.name))
    _Out().table(
        ["node type", "kind", "ports", "SUCCESS", "description"],
        [[e.name, e.kind + (" (internal)" if e.internal else ""),
          ", ".join(p.name + ("" if p.required else "?") for p in e.manifest.ports) or "-",
          e.manifest.status.get("SUCCESS", "never"), e.manifest.description]
         for e in entries],
        title=f"{len(entries)} node types (harness nodes TYPE describes one; port? = optional)")


# ---------------------------------------------------------------------------------- evaluators


def evaluators(
    name: str = typer.Argument(None, help="An evaluator to describe (default: list them)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List the installed evaluators (what judges a skill's postconditions from observations)
    and the skills whose postconditions name each."""
    skills_, evaluators_, _ = _installed()
    entries: list[EvaluatorEntry] = evaluator_entries(
        evaluators_, skill_entries(skills_, evaluators=evaluators_))
    if name is not None:
        entries = [e for e in entries if e.name == name]
        if not entries:
            _unknown("evaluator", name, evaluators_.names(), evaluators_.names(),
                     "name an installed evaluator (harness evaluators lists them)")
    if as_json:
        _echo_json([e.to_dict() for e in entries] if name is None else entries[0].to_dict())
        return
    out = _Out()
    if name is not None:
        entry = entries[0]
        out.heading(f"evaluator {entry.name}: {entry.function}")
        out.line(f"from: {entry.source} ({entry.source.origin})")
        out.line(f"used by skills: {', '.join(entry.used_by) or '(none installed)'}")
        out.line()
        out.line(entry.summary)
        return
    out.table(["evaluator", "used by", "package", "judges"],
              [[e.name, ", ".join(e.used_by) or "-", str(e.source), e.summary]
               for e in entries],
              title=f"{len(entries)} evaluators (harness evaluators NAME describes one)")


# ---------------------------------------------------------------------------------- scenes


def _scene_detail(out: _Out, entry: SceneEntry) -> None:
    out.heading(f"scene {entry.name}" + (f": {entry.spec.description}" if entry.spec and
                                          entry.spec.description else ""))
    out.line(f"from: {entry.source} ({entry.file})")
    spec = entry.spec
    if spec is None:
        out.line("does not load:")
        for problem in entry.problems:
            out.line(f"  {problem}")
        return
    if spec.instruction:
        out.line(f"instruction: {spec.instruction}")
    out.line()
    out.heading("objects")
    out.table(["object", "shape", "colour", "size", "mass", "label", "group"],
              [[o["id"], o["shape"], o["colour"], o["size_text"],
                "fixed" if o["mass_kg"] == 0 else "" if o["mass_kg"] is None else
                f"{o['mass_kg']:g} kg", o["label"] or "", o["group"] or ""]
               for o in entry.objects()], indent="  ")
    if spec.params:
        out.line()
        out.heading("params (harness run --set NAME=VALUE, or the task's parameter)")
        out.table(["param", "type", "default", "meaning"],
                  [[k, p.type, json.dumps(p.default), p.description]
                   for k, p in spec.params.items()], indent="  ")
    out.line()
    out.heading("layout (from the episode's seed)")
    for line in entry.layout():
        out.line(f"  {line}")
    if spec.cameras:
        out.line(f"cameras: {', '.join(spec.cameras)}")
    if spec.max_steps:
        out.line(f"max steps: {spec.max_steps}")
    out.line()
    out.heading("success")
    out.line(f"  {entry.success_text()}")
    if spec.success is not None and spec.success.description:
        out.line(f"  {spec.success.description}")


def scenes(
    name: str = typer.Argument(None, help="A scene to describe (default: list them)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List the built-in simulator's scenes, or describe one: objects (shape, colour, size),
    parameters, layout, success condition."""
    from harness_bt.scene import scene_registry

    registry = scene_registry(entry_points=False)
    registry.load(Group.SCENES, on_error=_warn)
    if name is not None and name not in registry and _is_file(name):
        _scene_file(name, as_json)
        return
    if name is not None and name not in registry:
        _unknown("scene", name, registry.names(), registry.names(),
                 "name an installed scene (harness scenes lists them), or give a task the "
                 "path of a scene file")
    entries = scene_entries(registry)
    out = _one_or_all(entries, name, as_json, _scene_detail)
    if out is None:
        return
    out.table(["scene", "objects", "success condition", "package"],
              [[e.name, ", ".join(o["id"] for o in e.objects()) or "(does not load)",
                e.success_text(), str(e.source)] for e in entries],
              title=f"{len(entries)} scenes (harness scenes NAME describes one)")


def _is_file(name: str) -> bool:
    return "/" in name or name.lower().endswith((".yaml", ".yml", ".json"))


def _scene_file(name: str, as_json: bool) -> None:
    """``harness scenes FILE``: a scene document described like an installed scene, or every
    problem it has (exit 1)."""
    from pathlib import Path

    from harness_bt.authoring.scenes import check_scene
    from harness_bt.catalogue.entries import Source
    from harness_bt.catalogue.scenes import SceneEntry
    from harness_bt.scene import find_scene

    path = find_scene(name)  # a missing file: SCENE_NOT_FOUND
    scene, report = check_scene(path)
    if scene is None:
        for problem in report:
            typer.echo(str(problem), err=True)
        typer.echo(f"{name}: {len(report.errors)} error(s): not a valid scene", err=True)
        raise typer.Exit(1)
    entry = SceneEntry(scene.name, Source(f"file {Path(name)}"), str(path), scene.spec)
    if as_json:
        _echo_json(entry.to_dict())
        return
    _scene_detail(_Out(), entry)
