"""The YAML reader keeps the line and column of every value and key, and reports what
``yaml.safe_load`` lets through silently."""

from __future__ import annotations

from harness_bt.authoring import read_yaml
from harness_bt.source import format_path

TEXT = """\
name: demo
phases:
  - id: work
    tree:
      type: sequence
      name: s
      children: [{type: success, name: a}, {type: failure, name: b}]
base: &base {type: success, name: shared}
merged: {<<: *base, name: other}
"""


def test_every_value_and_key_has_its_line_and_column() -> None:
    doc, problems = read_yaml("t.yaml", text=TEXT)
    assert problems == []
    assert str(doc.mark(("phases", 0, "tree", "children", 1))) == "t.yaml:7:44"
    assert str(doc.mark(("phases", 0, "tree", "children", 1, "name"))) == "t.yaml:7:66"
    assert str(doc.mark(("phases", 0, "tree", "type"), key=True)) == "t.yaml:5:7"
    assert doc.where(("phases", 0, "tree", "nope")) == "t.yaml:5:7"  # nearest ancestor
    assert doc.data["merged"] == {"type": "success", "name": "other"}  # merge keys work
    assert format_path(("phases", 0, "tree", "children", 1)) == "phases[0].tree.children[1]"


def test_duplicate_keys_boolean_keys_tags_and_recursion_are_reported() -> None:
    text = "a: 1\na: 2\non: x\nb: !!python/object:os.system x\nc: &r [*r]\n"
    doc, problems = read_yaml("t.yaml", text=text)
    assert [str(p) for p in problems] == [
        "t.yaml:2:1: error YAML_DUPLICATE_KEY: key 'a' is given twice in this mapping (first at "
        "line 1) (at a); fix: keep one of them",
        "t.yaml:3:1: error YAML_KEY: key 'on' is read as bool True, not text (at on); fix: quote "
        "it: 'on' (YAML 1.1 reads yes/no/on/off as booleans)",
        "t.yaml:4:4: error YAML_TAG: unsupported YAML tag 'tag:yaml.org,2002:python/object:"
        "os.system' (at b); fix: remove the tag: task files use plain YAML (include files with "
        "'includes:' and reuse trees with '{subtree: name}')",
        "t.yaml:5:4: error YAML_RECURSIVE_ALIAS: an alias refers to a mapping or list that "
        "contains it (at c[0]); fix: unfold the recursion; a task is a tree"]
    assert doc.data == {"a": 1, "on": "x", "b": "x", "c": [None]}


def test_malformed_yaml_gives_the_parser_position_and_a_fix() -> None:
    doc, problems = read_yaml("t.yaml", text="name: demo\nphases:\n  - id: [x\n")
    assert doc.data is None
    assert [str(p) for p in problems] == [
        "t.yaml:4:1: error YAML_SYNTAX: malformed YAML: while parsing a flow sequence expected "
        "',' or ']', but got '<stream end>'; fix: fix the YAML syntax (indentation, a missing ':' "
        "or closing quote or bracket)"]
    _, problems = read_yaml("t.yaml", text="a: 1\n---\nb: 2\n")
    assert "keep one task per file" in str(problems[0])
