"""Every code block in README.md and docs/*.md runs as written, or says why it cannot.

The blocks of a page run in order, in a temporary working directory of the page's own in which
the repository's folders are linked (so a block reads ``trees/pick_cube.yaml`` while what it
writes stays out of the repository). By the language of its fence:

- ``python``: executed in a fresh namespace;
- ``yaml``: a scene (it has ``objects:``, written to a file) loads without a problem; a task
  (it has ``name:`` and ``phases:``) passes validation
  (:func:`harness_bt.authoring.check_file`) against the installed skills, or against the registry a
  ``<!-- skills: module:attribute -->`` marker names (as ``harness validate --skills`` does);
  one marked ``<!-- fails validation: why -->`` (an example of an error report) must fail it;
- ``ini``: every entry point under ``[options.entry_points]`` names a known group and an object
  that imports;
- ``sh`` / ``console``: every line is a ``harness`` command, run in-process through
  :func:`harness_bt.cli.main`; it must exit 0, or with the status its trailing comment gives
  (``# exit status 1``). In a ``console`` block the lines after a ``$`` command are its expected
  output, matched in order (``...`` matches anything).

A block marked ``<!-- file: NAME -->`` is first written to NAME (a module, a library, an XML
tree that later blocks of the page use). A block that cannot run in a unit test (make, a server,
a simulator run, benchmark output, a diagram) carries ``<!-- not run: why -->`` right before
it. A block that is neither run nor marked fails, so nothing in the docs rots silently.

Beside the blocks: the README links every docs page and stays a front door (under 10,000
characters), and every dotted name, repository path, link and section the docs or the code's
comments cite exists.
"""

from __future__ import annotations

import configparser
import importlib
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_LIMIT = 10_000

#: What a page's working directory links from the repository.
LINKED = ("harness_bt", "skills", "runtime_bridge", "trees", "tests", "notebooks", "docs",
          "examples", "README.md", "setup.cfg", "pyproject.toml", "Makefile")
#: ``harness`` subcommands that start a simulator, a server or a run: never in a unit test.
NOT_IN_TESTS = {"run", "runtime", "sim"}
MARKER_KEYS = {"not run", "file", "skills", "fails validation"}

FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*([a-z ]+?)\s*:\s*(.*?)\s*-->")
EXIT = re.compile(r"\bexit status (\d+)\b")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    lang: str
    text: str
    markers: dict[str, str]

    @property
    def where(self) -> str:
        name = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{name}:{self.line}"


def read_blocks(page: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of a page, each with the markers on the lines right before it."""
    text = page.read_text(encoding="utf-8") if text is None else text
    blocks = []
    for fence in FENCE.finditer(text):
        markers: dict[str, str] = {}
        for line in reversed(text[:fence.start()].splitlines()):
            if not line.strip():
                continue
            found = MARKER.fullmatch(line.strip())
            if found is None:
                break
            markers[found.group(1)] = found.group(2)
        line_no = text.count("\n", 0, fence.start()) + 1
        blocks.append(Block(page, line_no, fence.group(1), fence.group(2), markers))
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in read_blocks(page)]


def link_repository(workdir: Path) -> Path:
    for name in LINKED:
        if (ROOT / name).exists():
            (workdir / name).symlink_to(ROOT / name)
    return workdir


@dataclass
class Command:
    argv: list[str]
    exit_status: int
    expected: list[str]
    line: str


def commands(block: Block) -> list[Command]:
    """The command lines of a ``sh`` or ``console`` block, with their expected exit status and
    (``console``) expected output."""
    out: list[Command] = []
    pending = ""
    for raw in block.text.splitlines():
        if block.lang == "console" and not raw.startswith("$ "):
            if not out:
                if raw.strip():
                    raise AssertionError(f"{block.where}: output before any '$ ' command: {raw!r}")
                continue
            if raw.strip():
                out[-1].expected.append(raw)
            continue
        line = raw[2:] if block.lang == "console" else raw
        if pending:
            line, pending = pending + " " + line.strip(), ""
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]
            continue
        comment = line.partition(" #")[2]
        found = EXIT.search(comment)
        argv = shlex.split(line, comments=True)
        out.append(Command(argv, int(found.group(1)) if found else 0, [], line.strip()))
    return out


def first_unmatched(expected: list[str], actual: str) -> str | None:
    """The first expected line not found (in order) in ``actual``; ``...`` matches anything."""
    lines = [line.strip() for line in actual.splitlines()]
    at = 0
    for want in expected:
        parts = [re.escape(part.strip()) for part in want.strip().split("...")]
        pattern = re.compile(".*".join(parts))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


class PageRunner:
    """Runs the blocks of one page, in order, in ``workdir`` (see the module docstring)."""

    def __init__(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.workdir = workdir
        self.capsys = capsys
        monkeypatch.chdir(workdir)
        monkeypatch.syspath_prepend(str(workdir))
        monkeypatch.setenv("COLUMNS", "200")  # rich wraps nothing the docs quote

    def run(self, block: Block) -> None:
        unknown = set(block.markers) - MARKER_KEYS
        assert not unknown, f"{block.where}: unknown marker(s) {sorted(unknown)}; " \
                            f"known: {sorted(MARKER_KEYS)}"
        if "not run" in block.markers:
            assert block.markers["not run"], f"{block.where}: say why the block is not run"
            return
        name = block.markers.get("file")
        if name is not None:
            (self.workdir / name).parent.mkdir(parents=True, exist_ok=True)
            (self.workdir / name).write_text(block.text, encoding="utf-8")
        if block.lang == "python":
            code = compile("\n" * block.line + block.text, str(block.page), "exec")
            if name is None:  # a file-marked module runs when a later block imports it
                try:
                    exec(code, {"__name__": "__doc_block__"})
                except Exception as exc:
                    raise AssertionError(f"{block.where}: the python block raised "
                                         f"{type(exc).__name__}: {exc}") from exc
        elif block.lang == "yaml":
            self.check_yaml(block, name)
        elif block.lang == "ini":
            self.check_entry_points(block)
        elif block.lang in ("sh", "console"):
            for command in commands(block):
                self.run_command(block, command)
        elif name is None:
            raise AssertionError(
                f"{block.where}: a ```{block.lang or '(no language)'} block is neither run nor "
                "marked; mark it <!-- not run: why --> or <!-- file: NAME --> for a later block")

    def check_yaml(self, block: Block, name: str | None) -> None:
        from harness_bt.authoring import check_file
        from harness_bt.cli.documents import resolve_skills

        is_task = re.search(r"^name:", block.text, re.M) and re.search(r"^phases:", block.text,
                                                                        re.M)
        is_scene = re.search(r"^objects:", block.text, re.M) and not is_task
        if is_scene and name is not None:
            from harness_bt.authoring.scenes import check_scene

            scene, report = check_scene(self.workdir / name)
            assert scene is not None, f"{block.where}: the scene does not load:\n" \
                                      f"{report.render()}"
            return
        if not is_task:
            assert name is not None, (
                f"{block.where}: a YAML block that is not a task must be written for a later "
                "block (<!-- file: NAME -->) or marked <!-- not run: why -->")
            return
        path = self.workdir / (name or f"block_{block.line}.yaml")
        if name is None:
            path.write_text(block.text, encoding="utf-8")
        report = check_file(path, skills=resolve_skills(block.markers.get("skills"))).report
        if "fails validation" in block.markers:  # an example of what validation reports
            assert report.errors, f"{block.where}: the task is marked as failing validation, " \
                                  "but it passes"
            return
        assert report.problems == [], f"{block.where}: the task does not validate:\n" \
                                      f"{report.render()}"

    def check_entry_points(self, block: Block) -> None:
        from harness_bt.plugins import Group, load_reference

        parser = configparser.ConfigParser(delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read_string(block.text)
        assert parser.has_section("options.entry_points"), \
            f"{block.where}: an ini block must declare [options.entry_points], or be marked"
        groups = {str(g) for g in Group} | {"console_scripts"}
        for group, value in parser.items("options.entry_points"):
            assert group in groups, f"{block.where}: unknown entry-point group {group!r}; " \
                                    f"known: {sorted(groups)}"
            for entry in filter(None, (v.strip() for v in value.splitlines())):
                entry_name, _, reference = entry.partition("=")
                load_reference(reference.strip(), f"{group} {entry_name.strip()}")

    def run_command(self, block: Block, command: Command) -> None:
        from harness_bt.cli import main

        argv = command.argv
        assert argv[0] == "harness", (
            f"{block.where}: {command.line!r} is not a harness command, so it cannot run "
            "here; mark the block <!-- not run: why -->")
        assert len(argv) < 2 or argv[1] not in NOT_IN_TESTS, (
            f"{block.where}: 'harness {argv[1]}' starts a simulator, a server or a run; mark "
            "the block <!-- not run: why -->")
        self.capsys.readouterr()
        status = main(argv[1:])
        captured = self.capsys.readouterr()
        output = captured.out + captured.err
        assert status == command.exit_status, (
            f"{block.where}: {command.line!r} exited {status}, the docs say "
            f"{command.exit_status}; its output:\n{output}")
        missing = first_unmatched(command.expected, output)
        assert missing is None, (
            f"{block.where}: {command.line!r} did not print, in order:\n  {missing}\n"
            f"its output:\n{output}")


@pytest.fixture
def page_runner(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                monkeypatch: pytest.MonkeyPatch, push_package: Path) -> Iterator[PageRunner]:
    """A page's runner; the example packages the pages walk through are installed."""
    modules = set(sys.modules)
    yield PageRunner(link_repository(tmp_path), capsys, monkeypatch)
    for name in set(sys.modules) - modules:  # the page's own modules (waving, ...)
        if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(tmp_path)):
            del sys.modules[name]
    importlib.invalidate_caches()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_code_block_on_the_page_runs_or_says_why_not(page: Path,
                                                            page_runner: PageRunner) -> None:
    indented = re.findall(r"^[ \t]+(?:```|~~~).*$", page.read_text(encoding="utf-8"), re.M)
    assert indented == [], f"{page}: indented fences are not checked; start them at column 0"
    blocks = read_blocks(page)
    assert blocks, f"{page}: no code blocks"
    for block in blocks:
        page_runner.run(block)


def test_a_block_neither_run_nor_marked_fails_naming_its_place(page_runner: PageRunner) -> None:
    page = page_runner.workdir / "page.md"
    text = "Intro.\n\n```text\nsome output\n```\n"
    (block,) = read_blocks(page, text)
    with pytest.raises(AssertionError, match=r"page.md:3: a ```text block is neither run nor "
                                             r"marked"):
        page_runner.run(block)
    (marked,) = read_blocks(page, "<!-- not run: output -->\n```text\nsome output\n```\n")
    page_runner.run(marked)


def test_a_command_that_cannot_run_here_or_exits_otherwise_fails(page_runner: PageRunner) -> None:
    page = page_runner.workdir / "page.md"
    make, run, wrong = read_blocks(page, "```sh\nmake demo\n```\n\n"
                                         "```sh\nharness run trees/pick_cube.yaml\n```\n\n"
                                         "```sh\nharness validate missing.yaml\n```\n")
    with pytest.raises(AssertionError, match="'make demo' is not a harness command"):
        page_runner.run(make)
    with pytest.raises(AssertionError, match="'harness run' starts a simulator"):
        page_runner.run(run)
    with pytest.raises(AssertionError, match="exited 1, the docs say 0"):
        page_runner.run(wrong)


def test_the_orchestration_example_prints_a_successful_run(
        page_runner: PageRunner, capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = [b for b in all_blocks() if b.lang == "python" and 'Parallel("grasping"' in b.text]
    page_runner.run(block)
    assert capsys.readouterr().out.startswith("succeeded done {")
    assert (page_runner.workdir / "out" / "fetch.jsonl").stat().st_size > 0


def test_the_pick_cup_task_file_passes_validation(tmp_path: Path) -> None:
    from harness_bt.authoring import check_file
    from harness_bt.testing.example import example_skills

    (block,) = [b for b in all_blocks() if b.lang == "yaml" and "name: pick_cup" in b.text]
    path = tmp_path / "pick_cup.yaml"
    path.write_text(block.text)
    report = check_file(path, skills=example_skills()).report
    assert report.problems == [], report.render()


def test_the_authoring_example_builds_the_task_and_loads_its_yaml_twin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = [b for b in all_blocks() if b.lang == "python" and "build_task(" in b.text]
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {"__name__": "__doc_block__"}
    exec(compile(block.text, str(block.page), "exec"), scope)
    assert str(scope["text"]).startswith("name: hello\n")
    assert scope["task"].name == "hello" and scope["same"].name == "fetch_cup"  # type: ignore[attr-defined]


def test_the_readme_links_every_docs_page_and_stays_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", text))
    pages = {str(p.relative_to(ROOT)) for p in DOCS.glob("*.md")}
    assert pages - linked == set(), f"README.md does not link {sorted(pages - linked)}"
    assert len(text) < README_LIMIT, (
        f"README.md has {len(text)} characters; it is the front door (under {README_LIMIT}): "
        "move the manual's part to a page under docs/")


#: A dotted name of the project (``harness_bt.authoring.load_task``, ``module:attribute``), not a
#: file name (``skills.py``) and not part of a path.
DOTTED = re.compile(r"(?<![\w./-])((?:harness_bt|runtime_bridge|skills)(?:\.[A-Za-z_]\w*)+"
                    r"(?::[A-Za-z_]\w*)?)")
FILE_SUFFIXES = {"py", "md", "yaml", "yml", "json", "jsonl", "db", "cfg", "toml", "svg", "png",
                 "xml", "txt", "ipynb", "html"}


def resolve(name: str) -> object:
    """The object a dotted name (or ``module:attribute``) names; raises when there is none."""
    module_part, _, attribute = name.partition(":")
    parts = module_part.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            target: object = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # a shorter prefix may be the module
            if not exc.name or not (module_name + ".").startswith(exc.name + "."):
                raise
            continue
        for attr in [*parts[cut:], *([attribute] if attribute else [])]:
            target = getattr(target, attr)
        return target
    raise ModuleNotFoundError(name)


def test_every_dotted_name_in_the_docs_exists() -> None:
    from harness_bt.plugins import Group

    groups = {str(g) for g in Group}
    missing = []
    for page in PAGES:
        for found in DOTTED.finditer(page.read_text(encoding="utf-8")):
            name = found.group(1)
            if name in groups or name.rpartition(".")[2] in FILE_SUFFIXES:
                continue
            try:
                resolve(name)
            except (ImportError, AttributeError) as exc:
                missing.append(f"{page.relative_to(ROOT)}: {name} ({exc})")
    assert missing == [], "names the docs cite that do not exist:\n" + "\n".join(missing)


PATH = re.compile(r"(?<![\w./-])((?:harness_bt|skills|runtime_bridge|trees|tests|notebooks|docs|"
                  r"examples)/[\w./*-]*[\w*])")
LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]*))?\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a page."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        out.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return out


def test_every_repository_path_link_and_anchor_in_the_docs_exists() -> None:
    missing = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for path in PATH.findall(text):
            if not list(ROOT.glob(path)):
                missing.append(f"{page.relative_to(ROOT)}: no {path}")
        for target, anchor in LINK.findall(text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file = (page.parent / target).resolve() if target else page
            if not file.exists():
                missing.append(f"{page.relative_to(ROOT)}: link to missing {target}")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                missing.append(f"{page.relative_to(ROOT)}: no section #{anchor} in "
                               f"{target or page.name}")
    assert missing == [], "\n".join(missing)


CITATION = re.compile(r"docs/([\w-]+\.md)(?:,\s*\"([^\"]+)\")?")


def test_every_docs_section_the_code_cites_exists() -> None:
    missing = []
    for package in ("harness_bt", "skills", "runtime_bridge", "trees"):
        for source in (ROOT / package).rglob("*.py"):
            for page, title in CITATION.findall(source.read_text(encoding="utf-8")):
                doc = DOCS / page
                if not doc.exists():
                    missing.append(f"{source.relative_to(ROOT)}: no docs/{page}")
                elif title and not re.search(rf"^#+ {re.escape(title)}$",
                                             doc.read_text(encoding="utf-8"), re.M):
                    missing.append(f"{source.relative_to(ROOT)}: no section {title!r} in "
                                   f"docs/{page}")
    assert missing == [], "\n".join(missing)
