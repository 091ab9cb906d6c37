"""Every notebook runs top to bottom (nbclient, the venv's ipykernel), and shows what it says."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow  # real episodes, processes or a notebook kernel

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: what a notebook's printed output must contain
EXPECTED = {
    "01_author_a_task": ["no problems", "name: pick_cup", "error UNKNOWN_SKILL: unknown skill "
                         "'navigat'", "error INVALID_BUDGET: timeout 'in_time'",
                         "error BLACKBOARD_NEVER_WRITTEN", "error UNKNOWN_TARGET",
                         "succeeded done in 17 ticks", '"type": "retry"'],
    "02_visualise_execution": ["succeeded done · 36 ticks · 1 recovery",
                               "configuration: ['deliver', 'evaluate']",
                               "tick  23  FAILURE    verdict=FAILED",
                               "tick  30  SUCCESS    verdict=SUCCEEDED", "flowchart TD"],
    "03_tick_against_the_simulator": [
        "pick_and_place: 15 top-level phases",
        "harness: succeeded (done)   simulator: success   false success: False",
        "recoveries 1", "held             FAILED", "held             SUCCEEDED",
        "put_down.check   SUCCEEDED"],
    "04_policy_in_the_loop": [
        "policy_pick_alone: 1/4 succeeded, false successes 0",
        "policy_pick: 3/4 succeeded, false successes 0",
        "the policy signalled done after 99 steps", "until lifted: red_cube is 0.052 m above",
        "-> FAILED: red_cube is not between the fingertips"],
}


def outputs(nb: nbformat.NotebookNode, kind: str) -> list[str]:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", ()):
            if kind == "stream" and o.output_type == "stream":
                out.append(o.text)
            elif kind in o.get("data", {}):
                out.append(o["data"][kind])
    return out


def test_the_kernel_is_this_python(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys, harness_bt; print(sys.executable)")])
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert outputs(nb, "stream") == [f"{sys.executable}\n"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_runs(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on error
    text = "".join(outputs(nb, "stream"))
    for expected in EXPECTED.get(path.stem, []):
        assert expected in text, expected
    if path.stem in EXPECTED:  # every notebook shows its graphs inline
        svgs = outputs(nb, "image/svg+xml")
        assert len(svgs) >= 2 and all("<svg" in s for s in svgs)
