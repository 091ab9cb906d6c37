"""A task's statechart in BehaviorTree.CPP XML: the elements ``harness export-xml`` writes
for it and the reader of them.

BehaviorTree.CPP has no statechart, so the chart is written as a tree of nodes that Groot2
shows and edits like any other (their ports are declared in the file's ``<TreeNodesModel>``):

- ``<Task>`` (a control node, the root of the main tree): the task's own fields as ports
  (``name``, ``version``, ``description``, ``instruction``, ``instructions``, ``scene``,
  ``initial``, ``max_retries``, ``max_time_s``, ``includes``, ``params``, ``blackboard``,
  ``guards``, ``metadata``); its children are the top-level phases.
- ``<Phase id transitions description>`` (a decorator): an atomic phase; its one child is its
  tree, usually ``<SubTree ID="..."/>`` naming the ``<BehaviorTree>`` that holds it.
- ``<CompoundPhase id initial transitions description>`` and
  ``<ParallelPhase id transitions description>`` (controls): their children are the phases
  inside them.
- ``<FinalPhase id reason description/>`` and ``<HistoryPhase id type default description/>``
  (actions).

``transitions`` is a list of ``event -> target`` separated by ``;``, each optionally
qualified in square brackets after the event, in the order they are tried::

    succeeded -> grasp; failed [reason=TIMEOUT] -> aborted_slow; failed [when=bb.n > 2] -> x

(qualifiers: ``reason``, ``guard``, ``when``, ``description``). A value with a ``;``, a
bracket or a quote that does not read back is written as ``json:[...]`` of the transitions.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness_bt.authoring.readers.btcpp.elements import Element

__all__ = ["CHART_TAGS", "PHASE_TAGS", "TASK_PORTS", "format_transitions",
           "parse_transitions", "read_chart"]

#: element -> phase kind
PHASE_TAGS = {"Phase": "atomic", "CompoundPhase": "compound", "ParallelPhase": "parallel",
              "FinalPhase": "final", "HistoryPhase": "history"}
CHART_TAGS = ("Task", *PHASE_TAGS)
#: the ``<Task>`` ports: name -> (kind, description)
TASK_PORTS: dict[str, tuple[str, str]] = {
    "name": ("str", "the task's name (also its task id)"),
    "version": ("str", "the task's version"),
    "description": ("str", "what the task does"),
    "instruction": ("str", "the intent in words"),
    "instructions": ("list", "the phrasings a planner matches (a;b)"),
    "scene": ("str", "the simulator scene the task runs on"),
    "initial": ("str", "the first phase (default: the first child)"),
    "max_retries": ("int", "the task budget: retries + recoveries in all"),
    "max_time_s": ("float", "the task budget: seconds from the first tick"),
    "includes": ("list", "included task libraries (a;b), relative to this file"),
    "params": ("json", "parameter declarations: json:{name: {type, default, ...}}"),
    "blackboard": ("json", "blackboard defaults: json:{key: value}"),
    "guards": ("json", "named guards: json:{name: expression}"),
    "metadata": ("json", "free-form: json:{...}"),
}
_QUALIFIERS = ("reason", "guard", "when", "description")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _scan(text: str, i: int, stop: str) -> int:
    """The index of the first ``stop`` character at bracket depth 0 and outside quotes,
    from ``i`` (``len(text)`` when there is none)."""
    depth, quote = 0, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in stop and depth == 0:
            return i
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        i += 1
    return i


def parse_transitions(text: str) -> list[dict[str, Any]]:
    """``"succeeded -> done; failed [reason=X] -> aborted_x"`` -> transition dicts;
    ValueError naming the item that does not read."""
    if text.startswith("json:"):
        data = json.loads(text[5:])
        if not isinstance(data, list) or not all(isinstance(t, dict) for t in data):
            raise ValueError("json: transitions must be a list of objects")
        return data
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(text):
        end = _scan(text, i, ";")
        item = text[i:end].strip()
        i = end + 1
        if item:
            out.append(_transition(item))
    return out


def _transition(item: str) -> dict[str, Any]:
    form = "write 'event -> target' or 'event [reason=X] -> target'"
    m = _IDENT.match(item)
    if m is None:
        raise ValueError(f"{item!r} does not start with an event; {form}")
    out: dict[str, Any] = {"event": m.group()}
    i = m.end()
    while True:
        while i < len(item) and item[i].isspace():
            i += 1
        if not item.startswith("[", i):
            break
        end = _scan(item, i + 1, "]")
        if end >= len(item):
            raise ValueError(f"{item!r}: '[' without its ']'")
        key, sep, value = item[i + 1:end].partition("=")
        key = key.strip()
        if not sep or key not in _QUALIFIERS:
            raise ValueError(f"{item!r}: [{item[i + 1:end]}] is not one of "
                             f"{', '.join(q + '=...' for q in _QUALIFIERS)}")
        out[key] = value.strip()
        i = end + 1
    if not item.startswith("->", i):
        raise ValueError(f"{item!r} has no '->'; {form}")
    target = item[i + 2:].strip()
    if not _IDENT.fullmatch(target):
        raise ValueError(f"{item!r}: target {target!r} is not a phase id; {form}")
    out["target"] = target
    return out


def format_transitions(transitions: list[dict[str, Any]]) -> str:
    """The ``transitions`` port of a phase: the compact form when it reads back the same,
    else ``json:``."""
    parts = []
    for t in transitions:
        quals = "".join(f" [{k}={t[k]}]" for k in _QUALIFIERS if t.get(k) is not None
                        and t.get(k) != "")
        parts.append(f"{t['event']}{quals} -> {t['target']}")
    text = "; ".join(parts)
    try:
        same = parse_transitions(text) == transitions
    except ValueError:
        same = False
    return text if same else "json:" + json.dumps(transitions, separators=(",", ":"))


def read_chart(el: Element, reader: Any, path: tuple[Any, ...]) -> dict[str, Any] | None:
    """A phase dict from a phase element (``reader``: the file's
    :class:`~harness_bt.authoring.readers.btcpp.mapping.TreeReader`, which reads its tree and
    keeps the marks and problems); None when it is not one."""
    reader.doc.marks[path] = reader.mark(el)

    def problem(code: str, message: str, at: Element, fix: str) -> None:
        reader.problem(code, message, at, fix, path)

    kind = PHASE_TAGS.get(el.tag)
    if kind is None:
        problem("XML_CHART", f"<{el.tag}> is not a phase here: a <Task>'s children are "
                f"{', '.join(PHASE_TAGS)}", el, "move the node into a phase's tree")
        return None
    attrs = el.attrs
    pid = attrs.get("id")
    if not pid:
        problem("XML_MISSING_ATTRIBUTE", f"<{el.tag}> needs id=", el, "give the phase an id")
        return None
    out: dict[str, Any] = {"id": pid}
    if kind != "atomic":
        out["kind"] = kind
    for key in ("description", "initial", "reason", "type", "default"):
        if key in attrs:
            out[key] = attrs[key]
    if "transitions" in attrs:
        try:
            out["transitions"] = parse_transitions(attrs["transitions"])
        except (ValueError, json.JSONDecodeError) as exc:
            problem("XML_ATTRIBUTE", f"<{el.tag} id={pid!r}> transitions: {exc}", el,
                    "write 'succeeded -> next; failed -> aborted_x' (see docs/groot.md)")
    if kind == "atomic":
        if len(el.children) != 1:
            problem("XML_CHILDREN", f"<Phase id={pid!r}> needs exactly one child (its tree), "
                    f"has {len(el.children)}", el, "give the phase one tree")
            return None
        out["tree"] = reader.node(el.children[0], (*path, "tree"))
    elif kind in ("compound", "parallel"):
        key = "phases" if kind == "compound" else "regions"
        kids = [read_chart(c, reader, (*path, key, i))
                for i, c in enumerate(el.children)]
        out[key] = [k for k in kids if k is not None]
    elif el.children:
        problem("XML_CHILDREN", f"<{el.tag} id={pid!r}> takes no children", el,
                "remove its children")
    return out


def read_task(el: Element, reader: Any) -> dict[str, Any]:
    """The task fields and phases of a ``<Task>`` element (phases at ``("phases", i)``)."""
    out: dict[str, Any] = {}
    reader.doc.marks[()] = reader.mark(el)
    for attr, text in el.attrs.items():
        if attr.startswith("_") or text.strip() == "{" + attr + "}":
            continue  # BT.CPP's own attributes; a parameter's main-tree blackboard entry
        spec = TASK_PORTS.get(attr)
        if spec is None:
            reader.problem("XML_ATTRIBUTE", f"<Task> has no port {attr!r}; its ports: "
                           f"{', '.join(TASK_PORTS)}", el, "remove the attribute")
            continue
        kind = {"json": "dict"}.get(spec[0], spec[0])
        try:
            value = reader.value(text, kind)
        except (ValueError, json.JSONDecodeError) as exc:
            reader.problem("XML_ATTRIBUTE", f"<Task> {attr}={text!r}: {exc}", el,
                           f"write a {kind}")
            continue
        if attr in ("max_retries", "max_time_s"):
            out.setdefault("budget", {})[attr] = value
        else:
            out[attr] = value
    kids = el.children[1:] if el.children and el.children[0].tag == "Script" else el.children
    phases = [read_chart(c, reader, ("phases", i)) for i, c in enumerate(kids)]
    out["phases"] = [p for p in phases if p is not None]
    return out


def _subtree_refs(el: Element, counts: dict[str, int]) -> dict[str, int]:
    if el.tag == "SubTree" and "ID" in el.attrs:
        counts[el.attrs["ID"]] = counts.get(el.attrs["ID"], 0) + 1
    for kid in el.children:
        if kid.tag != "TreeNodesModel":  # (its <SubTree> entries are models, not uses)
            _subtree_refs(kid, counts)
    return counts


def inline_phase_trees(task: dict[str, Any], subtrees: dict[str, Any], root: Element,
                       doc: Any) -> None:
    """A phase whose tree is ``<SubTree ID="X" _autoremap="true"/>``, where no other
    element uses X, holds X's tree itself (as ``export-xml`` writes it): X leaves the
    subtrees, its marks move to the phase."""
    counts = _subtree_refs(root, {})

    def visit(phases: list[dict[str, Any]], path: tuple[Any, ...]) -> None:
        for i, phase in enumerate(phases):
            here = (*path, i)
            tree = phase.get("tree")
            ref = tree.get("subtree") if isinstance(tree, dict) and set(tree) == {
                "subtree"} else None
            if ref is not None and counts.get(ref) == 1 and ref in subtrees:
                phase["tree"] = subtrees.pop(ref)
                old = ("subtrees", ref)
                for marks in (doc.marks, doc.key_marks):
                    for key in [k for k in marks if k[:2] == old]:
                        marks[(*here, "tree", *key[2:])] = marks.pop(key)
            for key in ("phases", "regions"):
                if isinstance(phase.get(key), list):
                    visit(phase[key], (*here, key))

    visit(task["phases"], ("phases",))
