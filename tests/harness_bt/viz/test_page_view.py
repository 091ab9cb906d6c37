"""The replay page in headless Chromium: it opens fitted to the active phase with its text
readable and follows the active phase until the user zooms; the cameras sit beside the graph
at 1280x800 and 1920x1080; the ledger shows short command ids, the full one on hover and
copied by a click. Pictures are kept under tests/artefacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_bt.recording import FrameStore, frames_path
from harness_bt.trace import TraceReader
from harness_bt.viz.html import replay_html
from harness_bt.viz.view import Images, view_frames
from tests.harness_bt.helpers import chromium

ARTEFACTS = Path(__file__).resolve().parents[2] / "artefacts"

#: the smallest text of the active phases on screen, in CSS px, and whether each one's top
#: left corner is inside the graph's box
_READ = """
const svg = document.querySelector('#graph svg'), m = svg.getScreenCTM();
const box = document.getElementById('graph').getBoundingClientRect();
const ids = document.body.dataset.config.split(',').filter(x => x);
const groups = ids.map(id => document.getElementById('phase_' + id)).filter(g => g);
const inner = groups.filter(g => !groups.some(o => o !== g && g.contains(o)));
const sizes = [], corners = [];
inner.forEach(g => {
  g.querySelectorAll('text').forEach(t =>
    sizes.push(parseFloat(t.getAttribute('font-size')) * m.a));
  const r = g.getBoundingClientRect();
  corners.push(r.left >= box.left - 1 && r.top >= box.top - 1 &&
               r.left < box.right && r.top < box.bottom);
});
return [Math.min(...sizes), corners, document.body.dataset.view];
"""


def data(driver: Any) -> dict[str, str]:
    return dict(driver.execute_script("return Object.assign({}, document.body.dataset);"))


@pytest.fixture
def page(framed: Path, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path / "framed.html"
    out.write_text(replay_html(framed))
    reader = TraceReader.open(framed)
    return out, view_frames(reader, images=Images.of(reader, FrameStore(frames_path(framed))))


def test_the_page_opens_on_the_active_phase_readable_and_follows_it_until_the_user_zooms(
        page: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.by import By

    html, views = page
    first = next(i for i, v in enumerate(views) if v["config"])
    later = next(i for i, v in enumerate(views) if v["config"] and
                 v["config"] != views[first]["config"])
    with chromium(tmp_path, "1280,800") as driver:
        driver.get(html.as_uri() + f"#frame={first}")
        smallest, corners, view = driver.execute_script(_READ)
        assert data(driver)["follow"] == "1"
        assert smallest >= 11 and corners[0], (smallest, corners)
        assert float(data(driver)["zoom"]) > 1  # closer than the whole graph
        driver.execute_script(f"replay.show({later});")  # the active phase changes
        smallest, corners, moved = driver.execute_script(_READ)
        assert data(driver)["config"] == ",".join(views[later]["config"])
        # a phase (here a parallel one's regions) larger than the box at a readable size
        # shows its top left
        assert moved != view and smallest >= 11 and corners[0], (smallest, corners)
        graph = driver.find_element(By.ID, "graph")
        ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(graph), 0, 200).perform()
        mine = data(driver)["view"]
        assert data(driver)["follow"] == "" and mine != moved  # the user zoomed out
        driver.execute_script(f"replay.show({first});")
        assert data(driver)["view"] == mine  # their view stays
        ActionChains(driver).send_keys("f").perform()  # follow again
        assert data(driver)["follow"] == "1" and data(driver)["view"] == view


@pytest.mark.parametrize("size", ["1280,800", "1920,1080"])
def test_the_cameras_sit_beside_the_graph_both_in_view(
        page: tuple[Path, list[dict[str, Any]]], tmp_path: Path, size: str) -> None:
    html, views = page
    shown = next(i for i, v in enumerate(views) if v.get("images"))
    with chromium(tmp_path, size) as driver:
        driver.get(html.as_uri() + f"#frame={shown}")
        graph, camera, width, height = driver.execute_script(
            "const r = e => {const b = e.getBoundingClientRect(); "
            "return [b.left, b.top, b.right, b.bottom];};"
            "return [r(document.getElementById('graph')), "
            "r(document.querySelector('#cameras figure')), "
            "document.documentElement.clientWidth, document.documentElement.clientHeight];")
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTEFACTS / f"replay_{size.replace(',', 'x')}.png"))
    for left, top, right, bottom in (graph, camera):
        assert 0 <= left < right <= width and 0 <= top < bottom <= height  # no scrolling
    assert camera[0] >= graph[2]  # beside the graph, to its right
    assert camera[3] - camera[1] >= 90 and graph[3] - graph[1] >= 400


def test_the_ledger_shows_short_ids_with_the_full_one_on_hover_and_a_copy_button(
        page: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    html, views = page
    full = views[-1]["commands"][0][0]
    run, phase, *_, leaf = full.split("/")
    with chromium(tmp_path, "1280,800") as driver:
        driver.get(html.as_uri() + f"#frame={len(views) - 1}")
        cell = driver.find_element(By.CSS_SELECTOR, "#ledger td.cid")
        code = cell.find_element(By.TAG_NAME, "code")
        assert code.get_attribute("title") == full
        assert code.text in (f"{phase}/…/{leaf}", f"{phase}/{leaf}") and len(code.text) < len(full)
        assert run not in code.text
        cell.find_element(By.CSS_SELECTOR, "button.copy").click()
        assert data(driver)["copied"] == full
        rows = driver.execute_script(
            "return Array.from(document.querySelectorAll('#ledger tr'))"
            ".map(r => r.getBoundingClientRect().height);")
    assert max(rows) < 40  # one line a command, not a tall column
