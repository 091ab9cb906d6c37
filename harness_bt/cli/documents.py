"""``harness validate``, ``harness schema``, ``harness import-xml``, ``harness export-xml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from harness_bt.errors import DefinitionError
from harness_bt.plugins import load_reference

__all__ = ["SET_HELP", "export_xml", "import_xml", "parse_set", "resolve_skills", "schema",
           "validate"]

SKILLS_HELP = ("Skill registry to check against, as module:attribute (a SkillRegistry or a "
               "function returning one), e.g. harness_bt.testing.example:example_skills. "
               "Default: the installed skills (entry points).")
SET_HELP = ("A task parameter's value, NAME=VALUE, repeatable (read by the declared type: "
            "0.1, 3, true, red_cube, [0,0.1,0] or 0,0.1,0).")


def parse_set(items: list[str] | None) -> dict[str, str]:
    """``["target=green_cube", "height=0.1"]`` -> ``{"target": "green_cube", "height":
    "0.1"}`` (the text; the task's declarations read it by type)."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise DefinitionError("INVALID_OPTION", f"--set {item!r} is not NAME=VALUE",
                                  fix="write e.g. --set target=green_cube --set height=0.1")
        if name in out:
            raise DefinitionError("INVALID_OPTION", f"--set {name} is given twice "
                                  f"({out[name]!r} and {value!r})", fix="give it once")
        out[name] = value
    return out


def resolve_skills(ref: str | None) -> Any:
    """A :class:`~harness_bt.SkillRegistry` from ``module:attribute`` (None: entry points)."""
    if ref is None:
        return None
    from harness_bt.skill import SkillRegistry

    target = load_reference(ref, "--skills",
                            example="harness_bt.testing.example:example_skills")
    registry = target() if callable(target) and not isinstance(target, SkillRegistry) \
        else target
    if not isinstance(registry, SkillRegistry):
        raise DefinitionError("INVALID_OPTION", f"--skills {ref!r} gave "
                              f"{type(registry).__name__}, not a SkillRegistry",
                              fix="name a SkillRegistry or a function returning one")
    return registry


def validate(
    files: list[Path] = typer.Argument(..., help="Files to check: tasks (YAML, JSON, "
                                       "BehaviorTree.CPP XML or Python), scenes and subtree "
                                       "libraries (YAML, read as what they are).", exists=False),
    skills: str = typer.Option(None, "--skills", help=SKILLS_HELP),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
    set_: list[str] = typer.Option(None, "--set", help=SET_HELP),
) -> None:
    """Check task, scene and subtree-library files: every problem at once, each with
    file:line:column and a fix (exit 1); a task's object names against its scene."""
    from harness_bt.authoring.loader import check_file

    registry = resolve_skills(skills)
    values = parse_set(set_)
    out = Console(highlight=False, soft_wrap=True)
    failed = 0
    for path in files:
        other = _other_kind(path, registry, values, out, strict)
        if other is not None:  # a scene or a subtree library, checked as such
            failed += other
            continue
        checked = check_file(path, skills=registry, params=values)
        report = checked.report
        if report.ok and checked.spec is not None and checked.spec.scene:
            report.extend(_scene_problems(checked, path, values))
        for problem in report:
            colour = "red" if problem.severity.value == "error" else "yellow"
            out.print(str(problem), style=colour, markup=False)
        bad = report.errors or (strict and report.warnings)
        if bad:
            failed += 1
            out.print(f"{path}: {len(report.errors)} error(s), {len(report.warnings)} "
                      "warning(s)", style="bold red", markup=False)
        else:
            spec, task = checked.spec, checked.task
            name, phases = (spec.name, len(spec.phase_ids())) if spec is not None else \
                (task.name, len(task.specs))
            out.print(f"{path}: OK ({name}: {phases} phases"
                      + (f", {len(report.warnings)} warning(s)" if report.warnings else "")
                      + ")", style="green", markup=False)
    raise typer.Exit(1 if failed else 0)


def _other_kind(path: Path, registry: Any, values: dict[str, str], out: Console,
                strict: bool) -> bool | None:
    """A scene document or a subtree library, checked as what it is (None: a task); True
    when it failed."""
    from harness_bt.authoring.kinds import (
        DocumentKind,
        check_library_file,
        check_scene_file,
        document_kind,
    )
    from harness_bt.authoring.registries import Registries

    kind = document_kind(path) if path.is_file() else DocumentKind.TASK
    if kind is DocumentKind.TASK:
        return None
    if kind is DocumentKind.SCENE:
        summary, report = check_scene_file(path, params=values)
    else:
        summary, report = check_library_file(path, Registries.installed(skills=registry))
    for problem in report:
        colour = "red" if problem.severity.value == "error" else "yellow"
        out.print(str(problem), style=colour, markup=False)
    if report.errors or (strict and report.warnings):
        out.print(f"{path}: {len(report.errors)} error(s), {len(report.warnings)} warning(s) "
                  f"(read as a {kind.value})", style="bold red", markup=False)
        return True
    out.print(f"{path}: OK ({summary}"
              + (f", {len(report.warnings)} warning(s)" if report.warnings else "") + ")",
              style="green", markup=False)
    return False


def _scene_problems(checked: Any, path: Path, given: dict[str, Any]) -> list[Any]:
    """The task against the scene it names: the scene loads with the task's values, and each
    object parameter names an object of it."""
    from harness_bt.authoring.objects import scene_object_problems
    from harness_bt.authoring.scenes import task_scene_problems

    spec = checked.spec
    where = {"scene": checked.doc.where(("scene",))}
    for name in spec.params:
        where[name] = f"--set {name}" if name in given else \
            checked.doc.where(("params", name, "default"))
    found = task_scene_problems(spec.scene, path.parent, checked.params,
                                {n: p.type for n, p in spec.params.items()}, where)
    if any(p.code == "UNKNOWN_OBJECT" for p in found):
        return found  # a parameter names no object: its uses would say it again
    return [*found, *scene_object_problems(checked, path.parent)]


def schema(
    output: Path = typer.Option(None, "-o", "--output", help="Write here (default: stdout)."),
    library: bool = typer.Option(False, "--library",
                                 help="The schema of an included file instead of a task."),
    skills: str = typer.Option(None, "--skills", help=SKILLS_HELP),
    builtin: bool = typer.Option(False, "--builtin", help="Only the built-in node types and "
                                 "no skills (the schema committed with harness-bt)."),
) -> None:
    """Write the JSON Schema of the task format (node types and skills as installed)."""
    from harness_bt.authoring.schema import render_schema, task_schema
    from harness_bt.nodes.registry import NodeRegistry
    from harness_bt.skill import SkillRegistry

    if builtin:
        text = render_schema(task_schema(NodeRegistry(), SkillRegistry(), library=library))
    else:
        text = render_schema(task_schema(skills=resolve_skills(skills), library=library))
    _write(text, output)


def import_xml(
    file: Path = typer.Argument(..., help="A BehaviorTree.CPP v4 XML file."),
    output: Path = typer.Option(None, "-o", "--output",
                                help="Write the task YAML here (default: stdout)."),
    tree: str = typer.Option(None, "--tree", help="The BehaviorTree ID to run (default: "
                             "main_tree_to_execute, or the only tree)."),
    name: str = typer.Option(None, "--name", help="Task name (default: the file's stem)."),
    skills: str = typer.Option(None, "--skills", help=SKILLS_HELP),
    max_retries: int = typer.Option(None, "--max-retries", min=0, help="The task budget's "
                                    "retries when the file gives none (default 5)."),
    max_time_s: float = typer.Option(None, "--max-time-s", min=0.001, help="The task "
                                     "budget's seconds when the file gives none "
                                     "(default 120)."),
    palette: Path = typer.Option(None, "--palette", help="A TreeNodesModel of your own "
                                 "nodes binding each to a skill (docs/groot.md)."),
) -> None:
    """Import a BehaviorTree.CPP v4 XML file as a task file (checked before it is written):
    the task harness export-xml wrote, or one that runs one of its trees."""
    from harness_bt.authoring.loader import import_btcpp
    from harness_bt.authoring.readers.btcpp import DEFAULT_BUDGET, read_btcpp
    from harness_bt.authoring.readers.btcpp.bindings import read_palette
    from harness_bt.authoring.registries import Registries
    from harness_bt.authoring.writers.yaml import dump_yaml

    registry = resolve_skills(skills)
    budget = {k: v for k, v in (("max_retries", max_retries), ("max_time_s", max_time_s))
              if v is not None}
    spec = import_btcpp(file, tree=tree, name=name, skills=registry,
                        budget={**DEFAULT_BUDGET, **budget}, palette=palette)
    text = dump_yaml(spec, header=f"imported from {file.name} (BehaviorTree.CPP v4)")
    _write(text, output)
    xml, _ = read_btcpp(file, Registries.installed(skills=registry),
                        palette=read_palette(palette, Registries.installed(skills=registry))
                        if palette is not None else None)
    if not (xml.data or {}).get("task", {}).get("budget") and spec.budget is not None:
        typer.echo(f"note: {file.name} gives no task budget (BehaviorTree.CPP has none); the "
                   f"task gets max_retries={spec.budget.max_retries}, max_time_s="
                   f"{spec.budget.max_time_s:g} (--max-retries, --max-time-s to change, or "
                   "edit budget: in the task file)", err=True)


def export_xml(
    file: Path = typer.Argument(..., help="A task file (YAML, JSON or XML)."),
    output: Path = typer.Option(None, "-o", "--output",
                                help="Write the XML here (default: stdout)."),
    skills: str = typer.Option(None, "--skills", help=SKILLS_HELP),
) -> None:
    """Write a task as BehaviorTree.CPP v4 XML for Groot2: its phase chart, one BehaviorTree
    per tree and subtree, and a TreeNodesModel of every installed skill and node type
    (harness import-xml reads it back to the same task)."""
    from harness_bt.authoring.loader import export_btcpp

    text = export_btcpp(file, out_dir=output.parent if output is not None else Path.cwd(),
                        skills=resolve_skills(skills))
    _write(text, output)


def _write(text: str, output: Path | None) -> None:
    """``text`` to ``output`` (its folder made), or to stdout."""
    if output is None:
        typer.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {output}")
