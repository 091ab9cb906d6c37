"""Dependencies point inward (DESIGN.md): harness_bt imports neither skills nor runtime_bridge,
runtime_bridge never imports skills, skills never imports runtime_bridge; and nothing on the
harness or executor side reads the simulator's ground truth."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports(package: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        out[str(path.relative_to(ROOT))] = names
    return out


@pytest.mark.parametrize(("package", "forbidden"), [
    ("harness_bt", ("skills", "runtime_bridge")),
    ("runtime_bridge", ("skills",)),
    ("skills", ("runtime_bridge",)),
])
def test_dependencies_point_inward(package: str, forbidden: tuple[str, ...]) -> None:
    bad = {f: sorted(n for n in names if n.split(".")[0] in forbidden)
           for f, names in imports(package).items()}
    assert {f: n for f, n in bad.items() if n} == {}


def test_no_harness_or_executor_code_reads_ground_truth() -> None:
    paths = [*(ROOT / "skills").rglob("*.py"), *(ROOT / "harness_bt").rglob("*.py"),
             *(ROOT / "runtime_bridge" / "inproc").rglob("*.py"), *(ROOT / "trees").glob("*")]
    readers = [str(p.relative_to(ROOT)) for p in paths
               if "ground_truth" in p.read_text() or ".results()" in p.read_text()]
    assert readers == []
