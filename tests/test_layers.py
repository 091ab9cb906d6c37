"""The architecture, pinned (docs/architecture.md): dependencies point inward (harness_bt
imports neither skills nor runtime_bridge, runtime_bridge never imports skills, skills never imports
runtime_bridge); no import cycle anywhere, counting imports inside functions; no module past
500 lines; the test rigs under runtime_bridge.testing are never imported by the product; and
nothing on the harness or executor side reads the simulator's ground truth."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness_bt", "skills", "runtime_bridge", "policies")


def modules() -> dict[str, Path]:
    """Every module of the product, by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


@functools.cache
def _nodes(path: Path, mtime_ns: int) -> tuple[ast.AST, ...]:
    """Every node of the file's syntax tree, parsed once per version of the file (the checks
    below walk the same graph several times)."""
    return tuple(ast.walk(ast.parse(path.read_text())))


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The product modules ``name`` imports, anywhere in the file (relative imports
    resolved, ``from package import module`` counted as that module)."""
    is_package = path.name == "__init__.py"
    for node in _nodes(path, path.stat().st_mtime_ns):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                stem = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                stem = node.module or ""
            targets = [stem, *(f"{stem}.{a.name}" for a in node.names)]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    known = modules()
    out = {name: set(imported(name, path, known)) for name, path in known.items()}
    # a package naming its own modules (its exports) is not a dependency of design
    return {name: {t for t in targets if not t.startswith(name + ".")}
            for name, targets in out.items()}


@pytest.mark.parametrize(("package", "forbidden"), [
    ("harness_bt", ("skills", "runtime_bridge", "policies")),
    ("runtime_bridge", ("skills", "policies")),
    ("skills", ("runtime_bridge", "policies")),
])
def test_dependencies_point_inward(package: str, forbidden: tuple[str, ...]) -> None:
    bad = {name: sorted(t for t in targets if t.split(".")[0] in forbidden)
           for name, targets in graph().items() if name.split(".")[0] == package}
    assert {name: targets for name, targets in bad.items() if targets} == {}


def test_the_product_never_imports_the_test_rigs() -> None:
    rigs = "runtime_bridge.testing"
    bad = {name: sorted(t for t in targets if t == rigs or t.startswith(rigs + "."))
           for name, targets in graph().items()
           if name != rigs and not name.startswith(rigs + ".")}
    assert {name: targets for name, targets in bad.items() if targets} == {}


def cycles_of(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node: the cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_anywhere() -> None:
    """Every import of every module, as one graph."""
    assert cycles_of(graph()) == []


#: harness_bt's sub-packages and top-level modules in layers, lowest first (docs/architecture.md).
#: A unit imports from its own layer or below, never above: the document pipeline
#: (``authoring``) sits above the core it compiles into, and the applications above both.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("foundation", frozenset({"_version", "errors", "problems", "source", "clock", "plugins",
                              "events", "trace", "budget", "expr", "ledger", "skill_params",
                              "geometry", "request_budget", "listen", "param_spec"})),
    ("model", frozenset({"world", "runtime", "scene", "skill", "evaluation", "context",
                         "policy", "recording"})),
    ("behaviour", frozenset({"nodes", "task", "seams"})),
    ("run", frozenset({"run"})),
    ("authoring", frozenset({"authoring"})),
    ("applications", frozenset({"catalogue", "planner", "eval", "viz", "export", "console",
                                "testing", "cli"})),
)


def unit_graph() -> dict[str, set[str]]:
    """Imports between harness_bt's units (a sub-package, or a top-level module), function-level
    imports counted."""
    def unit(name: str) -> str | None:
        parts = name.split(".")
        return parts[1] if parts[0] == "harness_bt" and len(parts) > 1 else None

    out: dict[str, set[str]] = {}
    for name, targets in graph().items():
        here = unit(name)
        if here is None:
            continue
        out.setdefault(here, set())
        out[here] |= {u for t in targets if (u := unit(t)) is not None and u != here}
    return out


def test_every_unit_of_harness_bt_has_a_layer() -> None:
    placed = set().union(*(units for _, units in LAYERS))
    assert sorted(set(unit_graph()) - placed) == []
    assert sorted(placed - set(unit_graph())) == []


def test_units_import_only_from_their_own_layer_or_below() -> None:
    level = {u: i for i, (_, units) in enumerate(LAYERS) for u in units}
    upward = {f"{a} ({LAYERS[level[a]][0]})": sorted(f"{b} ({LAYERS[level[b]][0]})"
                                                      for b in targets if level[b] > level[a])
              for a, targets in unit_graph().items()}
    assert {a: bs for a, bs in upward.items() if bs} == {}


def test_no_import_cycle_between_the_units_of_harness_bt() -> None:
    assert cycles_of(unit_graph()) == []


def test_no_module_is_past_500_lines() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > 500} == {}


def test_the_layer_checks_see_a_cycle_when_there_is_one(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph counts function-level and relative imports (else the checks above prove
    nothing)."""
    package = tmp_path / "harness_bt"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from harness_bt.b import g\n")
    (package / "b.py").write_text("from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert graph() == {"harness_bt": set(), "harness_bt.a": {"harness_bt.b"},
                       "harness_bt.b": {"harness_bt", "harness_bt.a"}}


def test_no_harness_or_executor_code_reads_ground_truth() -> None:
    paths = [*(ROOT / "skills").rglob("*.py"), *(ROOT / "harness_bt").rglob("*.py"),
             *(ROOT / "runtime_bridge" / "inproc").rglob("*.py"), *(ROOT / "trees").glob("*")]
    readers = [str(p.relative_to(ROOT)) for p in paths
               if "ground_truth" in p.read_text() or ".results()" in p.read_text()]
    assert readers == []


def test_the_unit_checks_see_an_upward_import_and_a_cycle(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The layer and unit-cycle checks fail on a core unit that imports the document pipeline
    (else the checks above prove nothing)."""
    real = graph()
    fake = {**real, "harness_bt.task.task": real["harness_bt.task.task"] | {
        "harness_bt.authoring.build"}}
    monkeypatch.setattr(sys.modules[__name__], "graph", lambda: fake)
    with pytest.raises(AssertionError, match=r"task \(behaviour\).*authoring \(authoring\)"):
        test_units_import_only_from_their_own_layer_or_below()
    with pytest.raises(AssertionError):
        test_no_import_cycle_between_the_units_of_harness_bt()


def test_the_documents_and_the_nodes_import_first_in_any_order() -> None:
    """The node types evaluate expressions of ``harness_bt.authoring`` and a Python-built task is
    held to its chart rules, while ``harness_bt.authoring`` compiles documents into node trees and
    tasks: each module of either side (and the task itself) imports first, on its own."""
    names = [*sorted(n for n in modules() if n.startswith(("harness_bt.authoring",
                                                           "harness_bt.nodes"))),
             "harness_bt.task.task"]
    code = (
        "import importlib, sys\n"
        "bad = []\n"
        f"for name in {names!r}:\n"
        "    for key in [k for k in sys.modules if k.split('.')[0] in "
        f"{PACKAGES!r}]:\n"
        "        del sys.modules[key]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        bad.append(f'{name}: {exc!r}')\n"
        "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]"
