"""The graph keeps its order at any size: phases stacked in flow order (initial first, then
by transitions, whatever order the file writes them in), one edge per transition with its
event, tree children left to right in order, the finals grouped in one row; checked on the
coordinates Graphviz drew, and on a picture of an eleven-phase task taken in Chromium."""

from __future__ import annotations

import base64
import itertools
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness_bt.authoring import load_task
from harness_bt.testing.example import example_skills
from harness_bt.viz import drawing, render
from harness_bt.viz.frames import Frame
from harness_bt.viz.graph import Cluster
from harness_bt.viz.layout import flow_order
from tests.harness_bt.helpers import chromium

SVG = "{http://www.w3.org/2000/svg}"
HERE = Path(__file__).parent
ROOT = HERE.parents[2]
RELAY = HERE / "tasks" / "relay.yaml"
RELAY_FLOW = ["observe", "approach_first", "grasp_first", "check_first", "carry_first",
              "place_first", "approach_second", "grasp_second", "check_second",
              "carry_second", "place_second"]
#: where the screenshot test keeps its picture (a test artefact, not committed)
ARTEFACTS = ROOT / "tests" / "artefacts"


def boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """SVG element id -> (left, top, right, bottom) of its outline, for phases and nodes."""
    out = {}
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        gid = g.get("id", "")
        if not {"node", "cluster"} & set(g.get("class", "").split()):
            continue
        shape = next((s for s in g.iter() if s.tag in (f"{SVG}polygon", f"{SVG}path",
                                                        f"{SVG}ellipse")), None)
        if shape is None:
            continue
        if shape.tag == f"{SVG}ellipse":
            cx, cy = float(shape.get("cx", 0)), float(shape.get("cy", 0))
            rx, ry = float(shape.get("rx", 0)), float(shape.get("ry", 0))
            out[gid] = (cx - rx, cy - ry, cx + rx, cy + ry)
            continue
        raw = shape.get("points") or shape.get("d") or ""
        nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", raw)]
        xs, ys = nums[0::2], nums[1::2]
        out[gid] = (min(xs), min(ys), max(xs), max(ys))
    return out


def edge_labels(svg: str) -> list[tuple[str, str]]:
    """(id, text) of every transition edge between phases."""
    return [(g.get("id", ""), " ".join(t.text or "" for t in g.iter(f"{SVG}text")))
            for g in ET.fromstring(svg).iter(f"{SVG}g")
            if "edge" in g.get("class", "").split() and g.get("id", "").startswith("t_")]


def test_the_relay_task_is_written_out_of_order_and_read_in_flow_order() -> None:
    task = load_task(RELAY)
    top = [p["id"] for p in task.structure()["phases"] if p["kind"] != "final"]
    assert len(top) == 11 and top != RELAY_FLOW  # the file's own order is not the flow
    d = drawing(task.structure())
    order = flow_order([c for c in d.clusters if c.kind != "final"],
                       [(t.source, t.target) for t in d.transitions], d.initial)
    assert [c.id for c in order] == RELAY_FLOW


def test_eleven_phases_are_drawn_top_to_bottom_in_flow_order() -> None:
    svg = str(render(load_task(RELAY)))
    box = boxes(svg)
    tops = [box[f"phase_{p}"] for p in RELAY_FLOW]
    for (pid, upper), (qid, lower) in itertools.pairwise(zip(RELAY_FLOW, tops, strict=True)):
        assert lower[1] > upper[3], f"{qid} should start below the end of {pid}"
    ends = box["ends"]
    assert ends[1] > tops[-1][3]  # the ends after the last phase


def test_each_transition_between_phases_is_its_own_edge_with_its_event() -> None:
    task = load_task(RELAY)
    d = drawing(task.structure())
    svg = str(render(task))
    drawn = edge_labels(svg)
    assert sorted(drawn) == sorted((f"t_{t.source}_{t.target}", t.label)
                                   for t in d.transitions)  # one between each two phases
    assert len(drawn) == 12  # 10 forward steps and the 2 loops back after a slip
    box = boxes(svg)
    # the loops go back up: their target phase is above their source phase
    assert box["phase_approach_first"][1] < box["phase_check_first"][1]


def cases() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [(p.stem, load_task(p)) for p in
                                     sorted((ROOT / "trees").glob("*.yaml"))
                                     if p.stem != "steps"]
    out.append(("relay", load_task(RELAY)))
    out.append(("fetch_cup", load_task(ROOT / "harness_bt" / "testing" / "fetch_cup.yaml",
                                       skills=example_skills())))
    return out


@pytest.mark.parametrize(("name", "task"), cases(), ids=[n for n, _ in cases()])
@pytest.mark.parametrize("fold", [True, False], ids=["folded", "unfolded"])
def test_tree_children_are_drawn_left_to_right_in_order(name: str, task: object,
                                                         fold: bool) -> None:
    d = drawing(task.structure(), fold=fold)  # type: ignore[attr-defined]
    box = boxes(str(render(task, fold=fold)))
    kids: dict[str, list[str]] = {}
    for a, b in d.tree_edges:
        kids.setdefault(a, []).append(b)
    checked = 0
    for parent, children in kids.items():
        if d.nodes[parent].type == "for_each":  # a body per item: each below the one before
            tops = [box[k][1] for k in children]
            assert tops == sorted(tops), (name, [d.nodes[k].name for k in children])
            checked += 1
            continue
        centres = [(box[k][0] + box[k][2]) / 2 for k in children]
        assert centres == sorted(centres), (name, d.nodes[parent].path,
                                            [d.nodes[k].name for k in children])
        assert all(box[k][1] > box[parent][1] for k in children)  # below their parent
        checked += len(children) > 1
    assert checked or name.startswith("policy_pick")  # the policy tasks: one leaf a phase


@pytest.mark.parametrize(("name", "task"), cases(), ids=[n for n, _ in cases()])
def test_every_phase_follows_the_one_before_it_and_the_finals_share_one_row(
        name: str, task: object) -> None:
    structure = task.structure()  # type: ignore[attr-defined]
    d = drawing(structure)
    box = boxes(str(render(task)))
    live = [c for c in d.clusters if c.kind != "final"]
    order = flow_order(live, [(t.source, t.target) for t in d.transitions], d.initial)
    assert order[0].id == d.initial
    for upper, lower in itertools.pairwise(order):
        assert box[f"phase_{lower.id}"][1] > box[f"phase_{upper.id}"][3], (name, lower.id)
    finals: list[Cluster] = [c for c in d.clusters if c.kind == "final"]
    rows = {round(box[f"phase_{f.id}"][1]) for f in finals}
    assert len(rows) == 1, (name, rows)
    lefts = [box[f"phase_{f.id}"][0] for f in finals]
    assert lefts == sorted(lefts)  # as the file lists them


def test_a_picture_of_the_eleven_phase_graph_is_taken_in_chromium_and_kept(
        tmp_path: Path) -> None:
    """The picture is kept at tests/artefacts/relay_graph.png; docs/images/relay_graph.png
    is a copy of one such picture."""
    from PIL import Image

    svg = str(render(load_task(RELAY)))
    page = tmp_path / "relay.html"
    page.write_text('<!DOCTYPE html><html><body style="margin:0"><div style="width:1200px">'
                    f'{svg}</div></body></html>'.replace("<svg width=", '<svg style="width:'
                                                          '1200px;height:auto" width=', 1))
    with chromium(tmp_path, "1220,900") as driver:
        driver.get(page.as_uri())
        tops = driver.execute_script(
            "return arguments[0].map(p => document.getElementById('phase_' + p)"
            ".getBoundingClientRect().top);", RELAY_FLOW)
        width, height = driver.execute_script(
            "const r = document.querySelector('svg').getBoundingClientRect();"
            "return [Math.ceil(r.width), Math.ceil(r.height)];")
        png = driver.execute_cdp_cmd("Page.captureScreenshot", {  # the whole page
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})["data"]
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTEFACTS / "relay_graph.png"
        shot.write_bytes(base64.b64decode(png))
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # in the browser too
    with Image.open(shot) as im:
        assert im.size[1] > im.size[0]  # read top to bottom
        bottom = im.convert("L").crop((0, im.size[1] - 80, im.size[0], im.size[1]))
        darkest = bottom.getextrema()[0]
        assert isinstance(darkest, int) and darkest < 200  # the ends at the bottom are in it
        colours = im.convert("RGB").getcolors(1_000_000) or []
        assert len(colours) > 50  # drawn, not blank
    assert shutil.which("dot") is not None


def test_mermaid_writes_the_phases_in_flow_order_too() -> None:
    mmd = str(render(load_task(RELAY), fmt="mmd"))
    written = re.findall(r"^  subgraph a_(\w+)", mmd, flags=re.MULTILINE)
    assert written == RELAY_FLOW


def test_transitions_between_the_same_two_phases_are_told_apart_and_taken_by_their_event(
        ) -> None:
    task = load_task(HERE / "tasks" / "again.yaml")
    run = Frame(configuration=["survey"], transitions=[("failed", "let_go_1", "survey")])
    d = drawing(task.structure(), run)
    back = [t for t in d.transitions if (t.source, t.target) == ("let_go_1", "survey")]
    assert [(t.id, t.taken) for t in back] == [
        ("t_let_go_1_survey_succeeded", False), ("t_let_go_1_survey_failed", True),
        ("t_let_go_1_survey_unknown", False)]
    ids = [t.id for t in d.transitions]
    assert len(ids) == len(set(ids))
    svg = str(render(task))
    assert all(svg.count(f'id="{i}"') == 1 for i in ids)  # one SVG element each
