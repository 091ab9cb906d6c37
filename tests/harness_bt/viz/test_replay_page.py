"""The replay page in a real browser (Selenium driving Debian's chromium through
chromium-driver): zoom and pan, node labels and taken transitions per frame, camera frames
with the perceived objects; the page served over HTTP; a corrupt trace, a missing frames
file and a port in use refused or reported clearly."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness_bt.cli import main
from harness_bt.errors import HarnessError
from harness_bt.recording import FrameStore, frames_path
from harness_bt.trace import TraceReader
from harness_bt.viz.html import replay_html
from harness_bt.viz.serve import ReplayServer
from harness_bt.viz.view import Images, view_frames
from tests.harness_bt.helpers import chromium


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    with chromium(tmp_path, "1400,900") as driver:
        yield driver


def data(driver: object) -> dict[str, str]:
    return dict(driver.execute_script(  # type: ignore[attr-defined]
        "return Object.assign({}, document.body.dataset);"))


def test_the_page_zooms_pans_and_shows_labels_transitions_and_camera_frames(
        framed: Path, tmp_path: Path, browser: object) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver = browser
    page = tmp_path / "framed.html"
    page.write_text(replay_html(framed))
    driver.get(page.as_uri() + "#frame=0")  # type: ignore[attr-defined]
    assert data(driver)["follow"] == "1" and data(driver)["frame"] == "0"
    ActionChains(driver).send_keys("0").perform()  # the whole graph
    assert data(driver)["zoom"] == "1.00" and data(driver)["follow"] == ""
    full = [float(v) for v in data(driver)["view"].split()]
    driver.find_element(By.ID, "zoom_in").click()  # type: ignore[attr-defined]
    driver.find_element(By.ID, "zoom_in").click()  # type: ignore[attr-defined]
    assert data(driver)["zoom"] == "1.56"
    before = [float(v) for v in data(driver)["view"].split()]
    graph = driver.find_element(By.ID, "graph")  # type: ignore[attr-defined]
    ActionChains(driver).move_to_element(graph).click_and_hold().move_by_offset(
        120, 60).release().perform()
    after = [float(v) for v in data(driver)["view"].split()]
    assert after[0] < before[0] and after[1] < before[1] and after[2:] == before[2:]  # panned
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin

    ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(graph), 0, -200).perform()
    assert float(data(driver)["zoom"]) > 1.56  # the wheel zooms in
    driver.save_screenshot(str(tmp_path / "zoomed.png"))  # type: ignore[attr-defined]
    ActionChains(driver).send_keys("0").perform()  # back to the whole graph
    assert data(driver)["zoom"] == "1.00" and [float(v) for v in data(driver)[
        "view"].split()] == full

    reader = TraceReader.open(framed)
    views = view_frames(reader, images=Images.of(reader, FrameStore(frames_path(framed))))
    failed = next(i for i, v in enumerate(views)
                  if any("FAILED" in note for _, note in v["nodes"].values()))
    driver.get(page.as_uri() + f"#frame={failed}")  # type: ignore[attr-defined]
    driver.refresh()  # type: ignore[attr-defined]
    notes = driver.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('#graph g.node')).map(g => "
        "[g.id, g.dataset.note || '', (g.querySelector('text:last-of-type') || {}).textContent]);")
    labelled = {nid: (note, text) for nid, note, text in notes if note}
    assert any("FAILED" in note and note == text for note, text in labelled.values()), labelled
    assert data(driver)["images"] == "front"
    figure = driver.find_element(By.CSS_SELECTOR, '#cameras figure[data-camera="front"]')  # type: ignore[attr-defined]
    href = figure.find_element(By.TAG_NAME, "image").get_attribute("href")
    assert href.startswith("data:image/jpeg;base64,")
    assert {r.text for r in figure.find_elements(By.TAG_NAME, "text")} >= {"cup"}
    natural = driver.execute_script(  # type: ignore[attr-defined]
        "return new Promise(ok => {const i = new Image(); i.onload = () => ok([i.width, "
        "i.height]); i.src = arguments[0];});", href)
    assert natural == [128, 96]  # the JPEG decodes in the browser

    ActionChains(driver).send_keys(Keys.END).perform()
    end = data(driver)
    assert end["frame"] == str(len(views) - 1)
    taken = driver.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('#graph g[data-taken=\"1\"]'))"
        ".map(g => g.id);")
    assert set(taken) == set(views[-1]["taken"]) | set(views[-1]["exits"])
    assert "t_navigate_pick" in taken and any(t.startswith("x_deliver_") for t in taken)
    legend = driver.find_element(By.CSS_SELECTOR, ".legend .chip")  # type: ignore[attr-defined]
    assert legend.value_of_css_property("color") in ("rgba(33, 33, 33, 1)", "rgb(33, 33, 33)")
    shot = tmp_path / "end.png"
    driver.save_screenshot(str(shot))  # type: ignore[attr-defined]
    assert shot.stat().st_size > 10_000


def test_the_page_is_served_over_http(framed: Path) -> None:
    server = ReplayServer(framed, port=0)
    server.start()
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/"
        with httpx.Client(base_url=server.url, timeout=30) as client:
            page = client.get("/")
            assert page.status_code == 200 and page.text.startswith("<!DOCTYPE html>")
            assert '"frames/front/000001.jpg"' in page.text  # images fetched, not embedded
            image = client.get("/frames/front/000001.jpg")
            assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
            assert image.content.startswith(b"\xff\xd8")
            assert client.get("/frames/front/999999.jpg").status_code == 404
            view = client.get("/view.json").json()
            assert view["task"] == "fetch_cup" and len(view["frames"]) == len(
                view_frames(TraceReader.open(framed)))
    finally:
        server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()


def test_the_serve_command_prints_its_address_and_stops_on_ctrl_c(framed: Path) -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "harness_bt.cli", "replay", str(framed),
                             "--serve", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"serving the replay of {framed} at http://127.0.0.1:")
        url = line.split(" at ", 1)[1].split()[0]
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and "fetch_cup — replay" in page.text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130  # stopped by Ctrl-C, as a shell reports it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_a_port_in_use_is_refused_clearly(framed: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(HarnessError) as err:
            ReplayServer(framed, port=port)
        assert err.value.code == "PORT_IN_USE"
        assert main(["replay", str(framed), "--serve", str(port)]) == 1
        out = capsys.readouterr()
        err = " ".join(out.err.split())
        assert f"PORT_IN_USE: --serve {port}: port {port} on 127.0.0.1 is in use" in err
        assert "pick another port with --serve, or 0 for any free one" in err \
            and "serving" not in out.out
    finally:
        taken.close()


def test_a_corrupt_trace_is_refused_with_its_line(framed: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lines = framed.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], lines[3][:40], *lines[4:]]) + "\n")
    for args in (["replay", str(bad), "--html", str(tmp_path / "x.html")],
                 ["replay", str(bad), "--serve", "0"], ["viz", str(bad), "-o", "x.dot"]):
        assert main(args) == 1
        err = " ".join(capsys.readouterr().err.split())
        assert f"INVALID_TRACE: {bad}:4: not a trace event" in err, err
    assert not (tmp_path / "x.html").exists()


def test_a_missing_frames_file_leaves_the_page_without_images(
        framed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alone = tmp_path / "alone.jsonl"
    shutil.copy(framed, alone)  # the trace names run.frames.tar, which is not beside it
    page = tmp_path / "alone.html"
    assert main(["replay", str(alone), "--html", str(page)]) == 0
    err = "".join(capsys.readouterr().err.split())  # rich wraps long lines, even in a path
    assert "".join(f"the frames file {tmp_path / 'run.frames.tar'} is missing".split()) in err
    html = page.read_text()
    config = json.loads(html.split('id="pageconfig">')[1].split("</script>")[0])
    assert "is missing" in config["problem"] and "data:image/jpeg" not in html
    damaged = tmp_path / "run.frames.tar"
    damaged.write_bytes(frames_path(framed).read_bytes()[:3000])  # cut inside an image
    store = FrameStore(damaged)
    assert store.problem is not None and "damaged" in store.problem
    assert main(["replay", str(alone), "--html", str(page)]) == 0
    assert "is damaged" in " ".join(capsys.readouterr().err.split())
