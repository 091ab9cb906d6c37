"""Execution graphs: the task library drawn to SVG with every node, coloured by runs; DOT,
Mermaid and PNG; a missing Graphviz explained."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from harness_bt.authoring import load_task
from harness_bt.errors import HarnessError
from harness_bt.trace import TraceReader
from harness_bt.viz import COLOURS, drawing, frame_at, render
from tests.harness_bt.authoring.test_library_parity import LIBRARY, Entry

SVG = "{http://www.w3.org/2000/svg}"


def svg_nodes(svg: str) -> dict[str, tuple[str, str, str]]:
    """SVG node id -> (text of its label, fill, stroke) for every tree node."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if not re.fullmatch(r"n\d+", g.get("id", "")):
            continue
        shape = next(s for s in g.iter() if s.tag in (f"{SVG}polygon", f"{SVG}path",
                                                       f"{SVG}ellipse"))
        text = " ".join(t.text or "" for t in g.iter(f"{SVG}text"))
        out[g.get("id", "")] = (text, shape.get("fill", ""), shape.get("stroke", ""))
    return out


def title_name(text: str) -> str:
    return text.split()[1 if text.startswith(("→", "?", "⇉", "⟲")) else 0]


@pytest.mark.parametrize("entry", LIBRARY, ids=[e.name for e in LIBRARY])
def test_every_library_task_draws_with_all_its_phases_and_nodes(entry: Entry) -> None:
    task = load_task(entry.yaml, skills=entry.skills())
    structure = task.structure()
    svg = render(task, fold=False)
    assert isinstance(svg, str)
    nodes = svg_nodes(svg)
    names = [n["name"] for tree in structure["trees"].values() for n in tree]
    assert sorted(title_name(text) for text, _, _ in nodes.values()) == sorted(names)
    assert {fill for _, fill, _ in nodes.values()} == {COLOURS[None][0]}  # no run: plain
    for phase in task.specs:
        assert f'id="phase_{phase}"' in svg


PLUMBING = (".try", ".recovery", ".gate", ".guard", ".again", ".act", ".check")


@pytest.mark.parametrize("entry", LIBRARY, ids=[e.name for e in LIBRARY])
def test_idioms_are_folded_into_one_node_each_by_default(entry: Entry) -> None:
    task = load_task(entry.yaml, skills=entry.skills())
    structure = task.structure()
    drawn = [title_name(text) for text, _, _ in svg_nodes(str(render(task))).values()]
    names = [n["name"] for tree in structure["trees"].values() for n in tree]
    assert not [n for n in drawn if n.endswith(PLUMBING)]
    assert set(drawn) == {n for n in names if not n.endswith(PLUMBING)}
    assert len(drawn) < len(names)


def svg_size(svg: str) -> tuple[float, float]:
    found = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    assert found is not None
    return float(found[1]), float(found[2])


def test_every_task_of_the_library_draws_no_wider_than_twice_its_height() -> None:
    """Every task file in trees/ (the shared steps aside), drawn as `harness viz` draws it."""
    trees = Path(__file__).resolve().parents[3] / "trees"
    library = sorted(p for p in trees.glob("*.yaml") if p.stem != "steps")
    assert len(library) >= 6
    for path in library:
        width, height = svg_size(str(render(load_task(path))))
        assert width <= 2.0 * height, (path.name, width, height)
        assert width * height < 4000 * 2200, (path.name, width, height)  # and not huge


def test_finals_are_grouped_and_exits_drawn_inside_their_phase() -> None:
    task = load_task("trees/pick_and_place.yaml")
    dot = str(render(task, fmt="dot"))
    ends = dot[dot.index("subgraph cluster___ends {"):]
    ends = ends[:ends.index("  }")]
    finals = [p for p in task.specs if p == "done" or p.startswith("aborted_")]
    assert all(f'id="phase_{f}"' in ends for f in finals)
    approach = dot[dot.index("subgraph cluster_approach {"):]
    approach = approach[:approach.index("\n  }")]
    assert re.search(r'x_approach_\d+ \[id="x_approach_\d+", class="exit", shape=cds.*'
                     r'>failed</font> ⇒ <b>aborted_approach</b>', approach)
    # edges join phases only; none ends in a final
    assert not re.search(r"-> a_(done|aborted_\w+) \[(?!style=invis)", dot)
    transitions = [line for line in dot.splitlines() if 'class="transition' in line]
    assert len(transitions) == 5  # observe -> approach -> ... -> place: one edge each
    assert all(re.search(r', label="succeeded", ', line) for line in transitions)


def statuses(trace: Path, at: int | None = None, *, fold: bool = False) -> dict[str, str]:
    reader = TraceReader.open(trace)
    frame = frame_at(reader, at)
    d = drawing(reader.structure, frame, fold=fold)
    fills = {fill: status for status, (fill, _) in COLOURS.items()}
    svg = render(trace=trace, at=at, fold=fold)
    return {f"{d.nodes[nid].phase}:{d.nodes[nid].path}": str(fills[fill])
            for nid, (_, fill, _) in svg_nodes(str(svg)).items()}


def test_a_run_colours_each_node_by_how_it_ended(traces: dict[str, Path]) -> None:
    end = statuses(traces["slip"])
    recovery = "evaluate:hold_cup/hold_cup.try/hold_cup.recovery"
    assert end["navigate:go"] == "SUCCESS"
    assert end["grasp:pick/steps/close"] == "SUCCESS"  # control done: the verdict came later
    assert end["evaluate:hold_cup"] == "SUCCESS"  # the second look, after the regrasp
    assert end[recovery] == "FAILURE"  # a recovery hands back to the attempt: never success
    assert end[f"{recovery}/hold_cup.guard/regrasp/close_again"] == "SUCCESS"
    assert end[f"{recovery}/hold_cup.again"] == "FAILURE"  # back to the attempt, by design
    assert end["watch:cup_still_there/cup_lost"] == "HALTED"  # the monitor, stopped
    assert end["place:put/put.check"] == "SUCCESS"
    unknown = statuses(traces["unknown"])
    assert unknown["evaluate:hold_cup/hold_cup.try/grasp_ok"] == "UNKNOWN"
    assert unknown["place:put"] == "NOT_TICKED"
    folded = statuses(traces["slip"], fold=True)  # an idiom takes its root's colour
    assert folded["evaluate:hold_cup"] == "SUCCESS" and folded["place:put"] == "SUCCESS"
    assert recovery not in folded and f"{recovery}/hold_cup.guard/regrasp" in folded


def test_mid_run_shows_running_nodes_attempts_and_the_active_configuration(
        traces: dict[str, Path]) -> None:
    reader = TraceReader.open(traces["budget"])
    submitted = next(e["seq"] for e in reader.of_kind("command")
                     if e["command_id"].endswith("close#2") and e["data"]["op"] == "submit")
    second = next(e["seq"] for e in reader.of_kind("status") if e["seq"] > submitted)
    now = statuses(traces["budget"], second)
    assert now["grasp:pick"] == "RUNNING" and now["grasp:pick/steps/close"] == "RUNNING"
    assert now["evaluate:hold_cup"] == "NOT_TICKED"
    svg = str(render(trace=traces["budget"], at=second))
    assert "run 2/2" in svg and "#2 ACCEPTED" in svg and "failed: IK_FAILED" not in svg
    assert re.search(r'<g id="phase_grasp" class="cluster">.*?stroke="#1565c0"', svg, re.S)
    assert "retries 1/6" in svg  # the task budget, as used
    end = str(render(trace=traces["budget"]))
    assert "aborted (aborted_budget_exhausted)" in end
    assert re.search(r'<g id="phase_aborted_budget_exhausted".*?fill="#ffcdd2"', end, re.S)


def test_dot_shows_kinds_budgets_and_bounds(traces: dict[str, Path]) -> None:
    dot = str(render(trace=traces["clean"], fmt="dot", fold=False))
    assert "subgraph cluster_pick {" in dot and 'style="rounded,dashed"' in dot  # parallel
    assert "subgraph cluster_deliver {" in dot
    assert re.search(r"n\d+ \[[^]]*shape=hexagon[^]]*label=<<b>pick</b><br/><font "
                     r"point-size=\"8\">retry ≤2 runs, backoff ≤0.2 s", dot)
    assert re.search(r"shape=box, style=\"filled,rounded\"[^]]*<b>go.act</b>", dot)
    assert "shape=ellipse" in dot  # a condition (recovery_gate)
    assert "task budget: retries 0/6, time ≤60 s" in dot
    assert 'label="succeeded"' in dot  # a transition between phases
    assert ">budget_exhausted</font> ⇒ <b>aborted_budget_exhausted</b>" in dot  # an exit
    assert ">done</font> ⇒ <b>done</b>" in dot
    folded = str(render(trace=traces["clean"], fmt="dot"))
    assert re.search(r'shape=box3d[^]]*label=<<b>⟲ hold_cup</b><br/><font point-size="8">'
                     r"recover ≤2 runs", folded)
    assert re.search(r"<b>put</b><br/><font point-size=\"8\">skill place, judged \(≤3 looks\)"
                     r'</font><br/><font point-size="8" color="#1b5e20">#1 SUCCEEDED</font>'
                     r'<br/><font point-size="8" color="#1b5e20">verdict SUCCEEDED', folded)


def test_png_renders_with_the_status_colours(traces: dict[str, Path]) -> None:
    png = render(trace=traces["slip"], fmt="png")
    assert isinstance(png, bytes) and png.startswith(b"\x89PNG")
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = {c for _, c in image.getcolors(maxcolors=1 << 20) or []}
    assert (0xc8, 0xe6, 0xc9) in colours and (0xff, 0xcd, 0xd2) in colours


def test_mermaid_is_a_well_formed_flowchart(traces: dict[str, Path]) -> None:
    text = str(render(trace=traces["slip"], fmt="mmd"))
    lines = text.splitlines()
    assert lines[:4] == ["---", lines[1], "---", "flowchart TD"] and lines[1].startswith(
        'title: "fetch_cup')
    assert sum(line.strip().startswith("subgraph ") for line in lines) == \
        sum(line.strip() == "end" for line in lines) == 8  # every non-final phase, the ends
    declared = set(re.findall(r"^\s*(n\d+|a_\w+|x_\w+)[\[\(\{>]", text, re.M))
    declared |= set(re.findall(r"^\s*subgraph (a_\w+)", text, re.M))
    links = re.findall(r"^\s*(\S+) (?:-->|==>|-\.->)(?:\|\"?[^\"|]*\"?\|)? (\S+)$", text, re.M)
    assert links and all(a in declared | {"__start"} and b in declared for a, b in links)
    styled = [int(i) for i in re.findall(r"linkStyle (\d+) ", text)]
    assert max(styled) == len(links) - 1
    assert "class n0 success" in text and "#35;1 SUCCEEDED" in text  # '#' escaped
    assert re.search(r"a_\w+ ==>\|\"succeeded\"\| a_pick", text)  # a transition taken


def test_a_missing_dot_says_how_to_install_it_and_text_formats_still_work(
        traces: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    with pytest.raises(HarnessError) as err:
        render(trace=traces["clean"])
    assert err.value.code == "GRAPHVIZ_MISSING"
    assert "apt-get install graphviz" in str(err.value) and "-o x.mmd" in str(err.value)
    assert str(render(trace=traces["clean"], fmt="dot")).startswith("digraph task {")
    assert "flowchart TD" in str(render(trace=traces["clean"], fmt="mmd"))
    from harness_bt.cli import main

    assert main(["viz", str(traces["clean"]), "-o", str(tmp_path / "x.png")]) == 1
    assert "GRAPHVIZ_MISSING" in capsys.readouterr().err
    assert main(["viz", str(traces["clean"]), "-o", str(tmp_path / "x.mmd")]) == 0


def test_viz_command_draws_a_task_file_with_a_trace(traces: dict[str, Path], tmp_path: Path
                                                    ) -> None:
    from harness_bt.cli import main
    from harness_bt.testing.example_spec import FETCH_CUP_YAML

    out = tmp_path / "graph.svg"
    assert main(["viz", str(FETCH_CUP_YAML), "-o", str(out), "--trace", str(traces["slip"]),
                 "--at", "100", "--skills", "harness_bt.testing.example:example_skills"]) == 0
    assert out.read_text().startswith("<?xml") and "seq 100" in out.read_text()
    assert main(["viz", str(FETCH_CUP_YAML), "-o", str(tmp_path / "x.gif")]) == 1
