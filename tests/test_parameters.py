"""No constructor or function of the product relays a long keyword list: one settings object
per run (``RunOptions``, ``RunnerSettings`` / ``RunParts``, ``RunRequest``, ``ClientOptions``)
is built once and passed down. A few signatures are long by nature and are named here with
why: a typer command's parameters are its command-line options; a document builder's are the
document's keys; a node type's are its ports. The test prints the largest signatures."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness_bt", "skills", "runtime_bridge", "policies")
LIMIT = 8

#: Long by nature, not relays (see the module docstring).
ALLOWED = {
    "harness_bt/authoring/builder.py:task": "the task document's top-level keys",
    "harness_bt/authoring/tree.py:skill": "a skill leaf's keys in a document",
    "harness_bt/task/task.py:__init__": "the task document's top-level keys",
    "harness_bt/nodes/skill_action.py:__init__": "the SkillAction node type's ports",
    "skills/library.py:move_task": "the library task's parameters",
    "skills/executors/segments.py:__init__": "a motion segment's tuning, one field each",
}


def signatures() -> list[tuple[int, str, bool]]:
    """(parameters, file:function, whether it is a typer command) for every function."""
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                a = node.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                         if x.arg not in ("self", "cls")]
                defaults = [d for d in (*a.defaults, *a.kw_defaults) if d is not None]
                typer = any("typer." in ast.unparse(d) for d in defaults)
                out.append((len(names), f"{path.relative_to(ROOT)}:{node.name}", typer))
    return sorted(out, reverse=True)


def test_no_function_relays_more_than_eight_parameters() -> None:
    rows = signatures()
    print("largest signatures:", *(f"{n} {where}{' (typer)' if t else ''}"
                                   for n, where, t in rows[:15]), sep="\n  ")
    long = {where for n, where, typer in rows if n > LIMIT and not typer}
    assert sorted(long - set(ALLOWED)) == []
    assert sorted(set(ALLOWED) - long) == []  # an entry no longer needed goes


def test_the_check_counts_keyword_only_parameters(tmp_path: Path) -> None:
    code = "def f(a, *, b, c, d, e, f, g, h, i):\n    pass\n"
    node = ast.parse(code).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert len([*node.args.args, *node.args.kwonlyargs]) == 9
