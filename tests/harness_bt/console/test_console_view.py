"""The console's page in headless Chromium at 1280x800 and 1920x1080: it opens on the active
phase with its text readable, the cameras beside the graph and both in view without
scrolling, and it follows the active phase when the run moves on (the replay page's view,
fed live). Pictures are kept under tests/artefacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness_bt.console.conftest import LiveRun
from tests.harness_bt.helpers import chromium
from tests.harness_bt.viz.test_page_view import _READ

ARTEFACTS = Path(__file__).resolve().parents[2] / "artefacts"

_RECTS = """
const r = e => {const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom];};
return [r(document.getElementById('graph')), r(document.querySelector('#cameras figure')),
        document.documentElement.clientWidth, document.documentElement.clientHeight];
"""


def data(driver: Any) -> dict[str, str]:
    return dict(driver.execute_script("return Object.assign({}, document.body.dataset);"))


@pytest.mark.parametrize("size", ["1280,800", "1920,1080"])
def test_the_console_opens_readable_on_the_active_phase_with_the_cameras_beside_the_graph(
        live: LiveRun, tmp_path: Path, size: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    with chromium(tmp_path, size) as driver:
        wait = WebDriverWait(driver, 60)
        driver.get(live.console.url)
        wait.until(lambda d: data(d).get("tick") == "1" and data(d).get("images") == "front"
                   and data(d).get("config") == "navigate")
        smallest, corners, view = driver.execute_script(_READ)
        assert data(driver)["follow"] == "1" and smallest >= 11 and corners[0]
        graph, camera, width, height = driver.execute_script(_RECTS)
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTEFACTS / f"console_{size.replace(',', 'x')}.png"))
        for left, top, right, bottom in (graph, camera):
            assert 0 <= left < right <= width and 0 <= top < bottom <= height
        assert camera[0] >= graph[2] and camera[3] - camera[1] >= 90

        driver.execute_script("window.consoleSend({op: 'break', node: 'close', when: 'before'});")
        wait.until(lambda d: data(d).get("breakpoints") == "grasp:pick/steps/close")
        driver.execute_script("window.consoleSend({op: 'resume'});")  # on to the pick phase
        wait.until(lambda d: data(d).get("held") == "grasp:pick/steps/close")
        try:
            wait.until(lambda d: "pick" in data(d).get("config", "").split(","))
        except Exception:
            raise AssertionError(f"{data(driver)} {driver.get_log('browser')}") from None
        smallest, corners, moved = driver.execute_script(_READ)
        assert moved != view and smallest >= 11 and corners[0]  # it followed
