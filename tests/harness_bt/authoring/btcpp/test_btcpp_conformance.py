"""BehaviorTree.CPP 4.8 itself reads what we write and writes what we read.

The loader (:mod:`tests.harness_bt.authoring.btcpp.peer`, built once against the library in the
``behaviortreepy`` wheel) registers every node model a file declares, with its kind and its
typed ports, then creates the main tree and ticks it: a port value BT.CPP cannot convert, a
blackboard key used with two types, a key nobody wrote, an ID clash or a reserved port name
ends the run with BT.CPP's own error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness_bt.authoring import import_btcpp, load_spec
from harness_bt.authoring.loader import export_btcpp
from harness_bt.authoring.model import TaskSpec
from harness_bt.authoring.writers.yaml import dump_yaml

from .peer import CORPUS, HERE, Run, build_loader, run

TREES = Path(__file__).resolve().parents[4] / "trees"
LIBRARY = sorted(p for p in TREES.glob("*.yaml") if p.name != "steps.yaml")
WRITTEN = sorted(CORPUS.glob("*.xml"))
#: the palette of a corpus file's own nodes (BT.CPP reads its models, the import its bindings)
PALETTES = {"custom_nodes": HERE / "palettes" / "my_nodes.xml"}


@pytest.fixture(scope="module")
def loader() -> Path:
    return build_loader()


def ticked(result: Run) -> bool:
    return result.code == 0 and result.status == "SUCCESS"


def models(xml: Path) -> list[str]:
    palette = PALETTES.get(xml.stem.removesuffix(".written"))
    return ["--models", str(palette)] if palette else []


def imported(xml: Path, stem: str) -> TaskSpec:
    """The task of a BT.CPP file, checked (SpecError on any error)."""
    return import_btcpp(xml, palette=PALETTES.get(stem))


def export_again(spec: TaskSpec, tmp_path: Path) -> Path:
    task = tmp_path / f"{spec.name}.yaml"
    task.write_text(dump_yaml(spec))
    again = tmp_path / f"{spec.name}.again.xml"
    again.write_text(export_btcpp(task, out_dir=tmp_path))
    return again


def test_the_library_holds_the_nine_tasks() -> None:
    assert [p.stem for p in LIBRARY] == ["clear_table", "pick", "pick_and_place", "pick_cube",
                                         "place_at",
                                         "policy_pick", "policy_pick_alone", "sort", "stack"]


@pytest.mark.parametrize("task", LIBRARY, ids=lambda p: p.stem)
def test_every_exported_library_task_parses_creates_and_ticks_in_btcpp(
        task: Path, loader: Path, tmp_path: Path) -> None:
    xml = tmp_path / f"{task.stem}.xml"
    xml.write_text(export_btcpp(task, out_dir=tmp_path))
    result = run(loader, xml)
    assert ticked(result), result.output
    assert result.output.startswith("created ")


def test_the_loader_reports_what_btcpp_refuses(loader: Path, tmp_path: Path) -> None:
    """The check can fail: BT.CPP's own errors come back (here a list of two keys read as
    the one key 'a};{b', which nothing wrote)."""
    xml = tmp_path / "bad.xml"
    xml.write_text(
        '<root BTCPP_format="4">\n  <BehaviorTree ID="Main">\n'
        '    <Observe objects="{a};{b}"/>\n  </BehaviorTree>\n  <TreeNodesModel>\n'
        '    <Action ID="Observe"><input_port name="objects" '
        'type="std::vector&lt;std::string&gt;"/></Action>\n  </TreeNodesModel>\n</root>\n')
    result = run(loader, xml)
    assert result.code == 1
    assert "input port [objects]" in result.output and "a};{b" in result.output


@pytest.mark.parametrize("xml", WRITTEN, ids=lambda p: p.stem)
def test_a_representative_file_runs_in_btcpp_imports_validates_and_runs_again(
        xml: Path, loader: Path, tmp_path: Path) -> None:
    assert ticked(run(loader, xml, *models(xml)))  # the file is BT.CPP's as written
    spec = imported(xml, xml.stem)
    again = export_again(spec, tmp_path)
    result = run(loader, again)
    assert ticked(result), result.output
    assert load_spec(again) == spec


@pytest.mark.parametrize("xml", WRITTEN, ids=lambda p: p.stem)
def test_a_file_btcpp_wrote_imports_validates_and_runs_again(
        xml: Path, loader: Path, tmp_path: Path) -> None:
    written = tmp_path / f"{xml.stem}.written.xml"
    assert ticked(run(loader, xml, *models(xml), "--write", str(written)))
    assert "_fullpath" in written.read_text()  # as BT.CPP's WriteTreeToXML writes it
    spec = imported(written, xml.stem)
    assert spec.subtrees  # its trees, read back
    result = run(loader, export_again(spec, tmp_path))
    assert ticked(result), result.output


def test_without_a_compiler_the_test_fails_saying_so_and_never_skips(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(pytest.fail.Exception, match=re.escape(
            "finds no C++ compiler (g++, or $CXX): apt-get install g++")):
        build_loader()
