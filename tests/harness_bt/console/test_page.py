"""The console in a real browser (Selenium driving Debian's chromium through chromium-driver):
the page loads and follows the run, the graph's colours change as it ticks, pause stops the
tick counter, single tick advances it by one, a breakpoint on a named node holds the run
there, and the stop shows its stages in order and ends with the runtime's confirmation.
Screenshots of each state are saved (``CONSOLE_SHOTS`` names a folder to keep them)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness_bt.console.conftest import LiveRun
from tests.harness_bt.helpers import chromium


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path, "1500,950") as driver:
        yield driver


def data(driver: Any) -> dict[str, str]:
    return dict(driver.execute_script("return Object.assign({}, document.body.dataset);"))


def colours(driver: Any) -> dict[str, str]:
    return dict(driver.execute_script(
        "const o = {}; document.querySelectorAll('#graph g.node').forEach(g => {"
        "if(g.dataset.status) o[g.id] = g.dataset.status + ' ' + "
        "(g.querySelector('polygon,ellipse,path') || {getAttribute: () => ''})"
        ".getAttribute('fill');}); return o;"))


def test_the_console_follows_and_steers_a_run(live: LiveRun, browser: Any,
                                              tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    shots = Path(os.environ.get("CONSOLE_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    driver = browser
    wait = WebDriverWait(driver, 60)

    def until(test: Callable[[dict[str, str]], bool]) -> dict[str, str]:
        seen: list[dict[str, str]] = []

        def check(d: Any) -> dict[str, str] | bool:
            seen[:] = [data(d)]
            return seen[0] if test(seen[0]) else False

        try:
            return dict(wait.until(check))
        except Exception:
            logs = driver.get_log("browser") if hasattr(driver, "get_log") else []
            raise AssertionError(f"the page did not get there: {seen} {logs}") from None

    def click(button: str) -> None:
        driver.find_element(By.ID, button).click()

    driver.get(live.console.url)
    first = until(lambda b: b.get("link") == "on" and b.get("tick") == "1"
                  and b.get("paused") == "1" and b.get("images") == "front")
    assert first["config"] == "navigate"
    before = colours(driver)
    assert before["n0"].startswith("RUNNING") and before["n3"].startswith("NOT_TICKED")
    driver.save_screenshot(str(shots / "console-1-loaded.png"))

    click("c_step")  # one tick, then paused again
    until(lambda b: b.get("tick") == "2" and b.get("paused") == "1")
    assert live.runner.ticks == 2

    driver.find_element(By.ID, "bp_node").send_keys("close")  # a named node
    Select(driver.find_element(By.ID, "bp_when")).select_by_value("before")
    click("bp_add")
    until(lambda b: b.get("breakpoints") == "grasp:pick/steps/close")
    click("c_resume")
    held = until(lambda b: b.get("held") == "grasp:pick/steps/close")
    assert live.console.control.held_at == {"node": "grasp:pick/steps/close", "when": "before",
                                            "status": "INVALID"}
    assert int(held["tick"]) == live.runner.ticks > 2
    after = colours(driver)
    assert after["n0"].startswith("SUCCESS") and after != before  # the colours followed
    assert "#c8e6c9" in after["n0"]  # drawn green
    assert driver.find_element(By.ID, "c_held").text.startswith(
        "held before grasp:pick/steps/close")
    driver.save_screenshot(str(shots / "console-2-breakpoint.png"))

    driver.find_element(By.CSS_SELECTOR, "#breakpoints li button").click()  # clear it
    until(lambda b: b.get("breakpoints") == "")
    live.gate.clear()  # the run will wait for the test before its next tick
    click("c_resume")  # the tick finishes (the grasp starts and runs until stopped)
    until(lambda b: b.get("held") == "" and b.get("paused") == "")
    click("c_pause")
    until(lambda b: b.get("received", "").startswith("pause "))  # queued for the run
    live.gate.set()
    paused = until(lambda b: b.get("paused") == "1")
    ticks = live.runner.ticks
    paused = until(lambda b: b.get("tick") == str(ticks))
    driver.find_element(By.ID, "bp_node").clear()
    driver.find_element(By.ID, "bp_node").send_keys("navigate:go")
    click("bp_add")  # something happens on the page while the run is paused
    still = until(lambda b: b.get("breakpoints") == "navigate:go")
    assert still["tick"] == paused["tick"] == str(ticks) == str(live.runner.ticks)
    driver.save_screenshot(str(shots / "console-3-paused.png"))

    click("c_step")
    until(lambda b: b.get("tick") == str(ticks + 1) and b.get("paused") == "1")
    assert live.runner.ticks == ticks + 1
    assert any(r[1] == "RUNNING" and r[0].endswith("close#1") for r in driver.execute_script(
        "return Array.from(document.querySelectorAll('#ledger tr')).map(tr => "
        "Array.from(tr.children).map(td => td.dataset.id || td.textContent)"
        ".filter((_, i) => i === 0 || i === 2));"))

    click("c_stop")
    end = until(lambda b: "run_end" in b.get("stages", ""))
    stages = end["stages"].split(",")
    assert stages[:3] == ["sent", "requested", "halted"] and stages[-1] == "run_end", stages
    assert stages.index("cancel_accepted") < stages.index("confirmed") < stages.index("run_end")
    assert "unknown" not in stages
    texts = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#stages li")]
    assert any(t.startswith("the runtime confirmed live/grasp.1/pick/steps/close#1 stopped "
                            "(CANCELED") for t in texts), texts
    until(lambda b: b.get("result") == "aborted (aborted_stopped)")
    live.thread.join(30)
    assert (live.runner.result.outcome, live.runner.result.reason) == ("aborted",
                                                                       "aborted_stopped")
    assert driver.find_element(By.ID, "outcome").text == "aborted (aborted_stopped)"
    log = [div.text for div in driver.find_elements(By.CSS_SELECTOR, "#c_log div")]
    assert any(t.startswith("stopped from the console (stop by c1") for t in log), log

    # the timeline scrubs back through the run so far (the replay's view)
    last = int(data(driver)["updates"]) - 1
    driver.execute_script("window.replay.show(0);")
    assert data(driver)["frame"] == "0" and data(driver)["tick"] in ("1", "2")
    driver.execute_script(f"window.replay.show({last});")
    driver.save_screenshot(str(shots / "console-4-stopped.png"))
    for name in ("loaded", "breakpoint", "paused", "stopped"):
        shot = next(shots.glob(f"console-*-{name}.png"))
        assert shot.stat().st_size > 20_000
