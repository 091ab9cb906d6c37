"""BehaviorTree.CPP elements -> the neutral node dicts: the tags the importer supports, and
the leaves that name a registered skill or node type. See
:mod:`harness_bt.authoring.readers.btcpp`."""

from __future__ import annotations

import json
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_bt.authoring.readers.btcpp.chart import inline_phase_trees, read_task
from harness_bt.authoring.readers.btcpp.elements import Element, snake
from harness_bt.authoring.readers.btcpp.names import name_subtree_uses
from harness_bt.authoring.readers.btcpp.script import (
    SCRIPT_TAGS,
    read_conditions,
    read_script,
    wrap_conditions,
)
from harness_bt.authoring.registries import Registries
from harness_bt.plugins import did_you_mean
from harness_bt.problems import Problem
from harness_bt.skill import SkillRegistry
from harness_bt.source import DocPath, Document, Mark, format_path

__all__ = ["SUPPORTED", "TreeReader"]

_CONTROLS = {"Sequence": ("sequence", True), "SequenceWithMemory": ("sequence", True),
             "ReactiveSequence": ("sequence", False), "Fallback": ("selector", True),
             "ReactiveFallback": ("selector", False)}
_DECORATORS = ("Inverter", "RetryUntilSuccessful", "Repeat", "Timeout", "Delay",
               "ForceSuccess", "ForceFailure", "KeepRunningUntilFailure")
_LEAVES = ("AlwaysSuccess", "AlwaysFailure", "Sleep", "SubTree")
#: Every BehaviorTree.CPP tag the importer maps (other tags must name a skill or node type).
SUPPORTED = (*_CONTROLS, "Parallel", "ParallelAll", *_DECORATORS, *_LEAVES)
_UNSUPPORTED = {
    "SetBlackboard": "set the value in the task's 'blackboard:' defaults or a subtree's "
                     "'values'",
    "UnsetBlackboard": "blackboard keys are not removed by trees here",
    "IfThenElse": "write it as a selector of [sequence [condition, then], else]",
    "WhileDoElse": "write it as a reactive selector",
    "Switch2": "write it as a selector of guarded sequences", "Switch3": "idem",
    "Switch4": "idem", "Switch5": "idem", "Switch6": "idem",
    "RunOnce": "phases run once; put the node in its own phase",
    "Precondition": "use a check node in a sequence", "SkipUnlessUpdated": "not supported",
    "WaitValueUpdate": "use wait_for with 'key'", "LoopInt": "not supported",
    "LoopDouble": "not supported", "LoopString": "not supported", "LoopBool": "not supported",
    "ManualSelector": "not supported", "EntryUpdated": "not supported",
    "SubTreePlus": "use SubTree with _autoremap (BehaviorTree.CPP v4)",
}
_REF = re.compile(r"^\{(?P<key>[^{}]*)\}$")


@dataclass
class TreeReader:
    """Maps the elements of one file to node dicts, recording marks and problems."""

    doc: Document
    registries: Registries
    problems: list[Problem] = field(default_factory=list)
    #: the user's node IDs bound to skills (:mod:`~harness_bt.authoring.readers.btcpp.bindings`)
    palette: dict[str, Any] = field(default_factory=dict)

    def mark(self, el: Element) -> Mark:
        return Mark(self.doc.file, el.line, el.column)

    def problem(self, code: str, message: str, el: Element, fix: str, path: DocPath = ()) -> None:
        self.problems.append(Problem(code, message, str(self.mark(el)), fix=fix,
                                     path=format_path(path)))

    # ------------------------------------------------------------------ values

    def value(self, text: str, kind: str) -> Any:
        """An attribute's text as a value of ``kind`` (str, int, float, bool, list, dict,
        any); ValueError when it does not read as one."""
        if text.startswith("json:"):
            return json.loads(text[5:])
        if kind == "str":
            return text
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"{text!r} is not true or false")
            return text.lower() in ("true", "1")
        if kind == "list":
            if "," in text:
                raise ValueError(f"{text!r}: a list here is separated by ';', not ',' "
                                 f"(write {text.replace(',', ';')!r}, or json:[...] for "
                                 "items that hold a comma)")
            return [self.value(part.strip(), "any") for part in text.split(";")
                    if part.strip()] if text.strip() else []
        if kind == "dict":
            out: dict[str, Any] = {}
            for part in text.split(";"):
                if part.strip():
                    key, sep, val = part.partition(":")
                    if not sep:
                        raise ValueError(f"{part!r} is not key:value")
                    out[key.strip()] = self.value(val.strip(), "any")
            return out
        if ";" in text:
            return self.value(text, "list")
        for guess in ("int", "float", "bool"):
            try:
                return self.value(text, guess)
            except ValueError:
                continue
        return text

    @staticmethod
    def field_kind(annotation: Any) -> str:
        origin = typing.get_origin(annotation)
        if origin in (list, tuple) or annotation in (list, tuple):
            return "list"
        if origin is dict or annotation is dict:
            return "dict"
        if origin is typing.Union or type(annotation).__name__ == "UnionType":
            kinds = [TreeReader.field_kind(a) for a in typing.get_args(annotation)
                     if a is not type(None)]
            return kinds[0] if len(kinds) == 1 else "any"
        return {str: "str", int: "int", float: "float", bool: "bool"}.get(annotation, "any")

    # ------------------------------------------------------------------ elements

    def name(self, el: Element, default: str) -> str:
        raw = el.attrs.get("name") or default
        return re.sub(r"[/#]", "_", raw).strip() or default

    def child(self, el: Element, path: DocPath) -> dict[str, Any] | None:
        if len(el.children) != 1:
            self.problem("XML_CHILDREN", f"<{el.tag}> needs exactly one child, has "
                         f"{len(el.children)}", el, "give the decorator one child node", path)
            return None
        return self.node(el.children[0], (*path, "child"))

    def children(self, el: Element, path: DocPath) -> list[dict[str, Any]]:
        kids = [self.node(c, (*path, "children", i)) for i, c in enumerate(el.children)]
        out = [k for k in kids if k is not None]
        seen: dict[str, int] = {}
        for kid in out:  # siblings need distinct names (they build node paths)
            key = "name"
            base = kid.get(key) or kid.get("subtree") or "node"
            n = seen.get(base, 0) + 1
            seen[base] = n
            if n > 1:
                kid[key] = f"{base}_{n}"
        return out

    def number(self, el: Element, attr: str, default: int | None, path: DocPath) -> int | None:
        text = el.attrs.get(attr)
        if text is None:
            if default is None:
                self.problem("XML_MISSING_ATTRIBUTE", f"<{el.tag}> needs {attr}=", el,
                             f"add {attr}=\"...\"", path)
            return default
        try:
            return int(text)
        except ValueError:
            self.problem("XML_ATTRIBUTE", f"<{el.tag}> {attr}={text!r} is not a whole number",
                         el, f"write {attr}=\"3\"", path)
            return None

    def node(self, el: Element, path: DocPath) -> dict[str, Any] | None:
        self.doc.marks[path] = self.mark(el)
        tag = el.tag
        if tag in ("Action", "Condition", "Control", "Decorator") and "ID" in el.attrs:
            tag = el.attrs["ID"]  # the BehaviorTree.CPP v3 spelling
        conditions = self.conditions(el, tag, path)
        if conditions is None:
            return None
        out = self.element(el, tag, path)
        return wrap_conditions(out, conditions) if out is not None and conditions else out

    def conditions(self, el: Element, tag: str, path: DocPath) -> dict[str, str] | None:
        """The element's pre-conditions as expressions (None, with a problem, when one has
        no counterpart): :func:`~harness_bt.authoring.readers.btcpp.script.read_conditions`."""
        return read_conditions(self, el, tag, path)

    def element(self, el: Element, tag: str, path: DocPath) -> dict[str, Any] | None:
        if tag in SCRIPT_TAGS:
            return read_script(self, el, tag, path)
        if tag in _CONTROLS:
            kind, memory = _CONTROLS[tag]
            return {"type": kind, "name": self.name(el, snake(tag)),  # memory: the default
                    **({} if memory else {"memory": False}), "children": self.children(el, path)}
        if tag in ("Parallel", "ParallelAll"):
            return self.parallel(el, tag, path)
        if tag in _DECORATORS:
            return self.decorator(el, tag, path)
        if tag == "AlwaysSuccess":
            return {"type": "success", "name": self.name(el, "success")}
        if tag == "AlwaysFailure":
            return {"type": "failure", "name": self.name(el, "failure")}
        if tag == "Sleep":
            msec = self.number(el, "msec", None, path)
            return None if msec is None else {"type": "wait_for", "name": self.name(el, "sleep"),
                                              "seconds": msec / 1000.0}
        if tag == "SubTree":
            return self.subtree(el, path)
        if tag in _UNSUPPORTED:
            self.problem("XML_UNSUPPORTED", f"<{tag}> is not supported", el, _UNSUPPORTED[tag],
                         path)
            return None
        return self.leaf(el, tag, path)

    def parallel(self, el: Element, tag: str, path: DocPath) -> dict[str, Any] | None:
        kids = self.children(el, path)
        n = len(kids)
        if tag == "ParallelAll":
            failures = self.number(el, "max_failures", 1, path)
            if failures not in (1,):
                self.problem("XML_UNSUPPORTED", f"<ParallelAll max_failures={failures}>: the "
                             "parallel here fails on the first failure", el,
                             "use max_failures=\"1\"", path)
            return {"type": "parallel", "name": self.name(el, "parallel"), "policy": "all",
                    "children": kids}
        success = self.number(el, "success_count", -1, path)
        failure = self.number(el, "failure_count", 1, path)
        policy = "all" if success in (-1, n) else "one" if success == 1 else None
        if policy is None:
            self.problem("XML_UNSUPPORTED", f"<Parallel success_count={success}> with {n} "
                         "children: the parallel here succeeds when all or one succeed", el,
                         f"use success_count=\"{n}\" (all) or \"1\" (one)", path)
        if failure != 1 and not (failure == -1 and n == 1):
            self.problem("XML_UNSUPPORTED", f"<Parallel failure_count={failure}>: the parallel "
                         "here fails on the first failure", el, "use failure_count=\"1\"", path)
        return {"type": "parallel", "name": self.name(el, "parallel"), "policy": policy or "all",
                "children": kids}

    def decorator(self, el: Element, tag: str, path: DocPath) -> dict[str, Any] | None:
        child = self.child(el, path)
        name = self.name(el, snake(tag))
        out: dict[str, Any]
        if tag == "Inverter":
            out = {"type": "inverter", "name": name}
        elif tag == "RetryUntilSuccessful":
            n = self.number(el, "num_attempts", None, path)
            if n is not None and n < 1:
                self.problem("XML_UNSUPPORTED", f"<RetryUntilSuccessful num_attempts={n}>: "
                             "retries here are bounded (and draw on the task budget)", el,
                             "give num_attempts a bound, e.g. \"3\"", path)
            out = {"type": "retry", "name": name, "attempts": max(n or 1, 1),
                   "backoff": {"base_s": 0.0, "cap_s": 0.0}}
        elif tag == "Repeat":
            out = {"type": "repeat", "name": name,
                   "times": self.number(el, "num_cycles", None, path) or 1}
        elif tag in ("Timeout", "Delay"):
            attr = "msec" if tag == "Timeout" else "delay_msec"
            msec = self.number(el, attr, None, path)
            out = {"type": snake(tag), "name": name, "seconds": (msec or 0) / 1000.0}
        else:
            out = {"type": snake(tag), "name": name}
        if child is None:
            return None
        out["child"] = child
        return out

    def subtree(self, el: Element, path: DocPath) -> dict[str, Any] | None:
        ref = el.attrs.get("ID")
        if not ref:
            self.problem("XML_MISSING_ATTRIBUTE", "<SubTree> needs ID=", el,
                         "name the BehaviorTree it runs: ID=\"...\"", path)
            return None
        out: dict[str, Any] = {"subtree": ref}
        if "name" in el.attrs:
            out["name"] = self.name(el, ref)
        remap: dict[str, str] = {}
        values: dict[str, Any] = {}
        autoremap = False
        passed = set(el.attrs.get("_values", "").split(";"))  # inputs given by name
        for attr, text in el.attrs.items():
            if attr in ("ID", "name"):
                continue
            if attr == "_autoremap":
                autoremap = text.strip().lower() in ("true", "1")
                continue
            if not attr[:1].isalpha():  # BT.CPP's own (_fullpath, _uid, conditions)
                continue
            m = _REF.match(text.strip())
            if m is not None and attr in passed:
                values[attr] = text.strip()
            elif m is not None:
                remap[attr] = attr if m["key"] in ("=", "") else m["key"]
            else:
                values[attr] = self.value(text, "any")
        if remap:
            out["remap"] = remap
        if values:
            out["values"] = values
        if not autoremap:  # BehaviorTree.CPP's default; sharing keys is the harness's
            out["autoremap"] = False
        return out

    def leaf(self, el: Element, tag: str, path: DocPath) -> dict[str, Any] | None:
        binding = self.palette.get(tag)
        if binding is not None:  # a user's own node, bound to a skill
            return self.skill_leaf(binding.apply(el), binding.skill, path)
        skills = self.registries.skills if self.registries.skills is not None \
            else SkillRegistry()
        nodes = self.registries.nodes
        candidates = list(dict.fromkeys([tag, snake(tag)]))
        skill = next((c for c in candidates if c in skills), None)
        node_type = next((c for c in candidates if c in nodes), None)
        if skill is not None:
            return self.skill_leaf(el, skill, path)
        if node_type is not None:
            return self.typed_leaf(el, node_type, path)
        known = [*SUPPORTED, *skills.names(), *nodes.listed()]
        self.problem("XML_UNKNOWN_NODE", f"<{tag}> is neither a supported BehaviorTree.CPP node "
                     "nor a registered skill or node type (looked for "
                     f"{' / '.join(map(repr, candidates))}){did_you_mean(snake(tag), known)}",
                     el, f"register a skill or node type named {snake(tag)!r}, bind it to a "
                     "skill with import-xml --palette, or replace the node; supported tags: "
                     f"{', '.join(SUPPORTED)}", path)
        return None

    def skill_leaf(self, el: Element, skill: str, path: DocPath) -> dict[str, Any]:
        """A skill tag: ``act_and_evaluate`` (SUCCESS when an evaluator confirms the result,
        as a BehaviorTree.CPP action's SUCCESS means done), or, when the element names an
        ``output`` key (or ``handover`` / ``no_progress_s``), a bare ``skill_action`` whose
        command an ``Evaluate`` node judges."""
        assert self.registries.skills is not None  # leaf() found the skill there
        model = self.registries.skills.get(skill).params_model
        bare = any(a in el.attrs for a in ("output", "handover", "no_progress_s"))
        type_name = "skill_action" if bare else "act_and_evaluate"
        ports = {p.name: p for p in self.registries.nodes.get(type_name).manifest.ports}
        special = ("output", "handover", "no_progress_s", "snapshot", "premises") if bare \
            else ("snapshot", "premises", "max_observations")
        out: dict[str, Any] = {"skill": skill, "name": self.name(el, skill)} if bare else \
            {"type": type_name, "name": self.name(el, skill), "skill": skill}
        params: dict[str, Any] = {}
        inputs: dict[str, str] = {}
        for attr, text in el.attrs.items():
            if attr in ("name", "ID") or attr.startswith("_"):
                continue
            m = _REF.match(text.strip())
            if attr in special:
                port = ports[attr]
                try:
                    out[attr] = m["key"] if m is not None else self.value(text, port.type)
                except ValueError as exc:
                    self.problem("XML_ATTRIBUTE", f"<{el.tag}> {attr}: {exc}", el,
                                 f"write a {port.type}", path)
                continue
            if m is not None and attr in el.attrs.get("_params", "").split(";"):
                params[attr] = text.strip()  # a parameter placeholder (export-xml's hint)
                continue
            if m is not None:
                inputs[attr] = attr if m["key"] in ("=", "") else m["key"]
                continue
            info = model.model_fields.get(attr)
            kind = self.field_kind(info.annotation) if info is not None else "any"
            try:
                params[attr] = self.value(text, kind)
            except (ValueError, json.JSONDecodeError) as exc:
                self.problem("XML_ATTRIBUTE", f"<{el.tag}> {attr}={text!r}: {exc}", el,
                             f"write a {kind} (lists separated by ';')", path)
        if params:
            out["params"] = params
        if inputs:
            out["inputs"] = inputs
        return out

    def typed_leaf(self, el: Element, type_name: str, path: DocPath) -> dict[str, Any] | None:
        """A node type by its registered name: attributes are its ports; its children fill
        its tree ports (all of them for a ``trees`` port, else one per ``tree`` port, in the
        manifest's order: ``<recover>`` takes its attempt, then its recovery)."""
        manifest = self.registries.nodes.get(type_name).manifest
        out: dict[str, Any] = {"type": type_name, "name": self.name(el, type_name)}
        branches = [p for p in manifest.ports if p.type in ("tree", "trees")]
        if len(branches) == 1 and branches[0].type == "trees":
            out[branches[0].name] = self.children(el, path)
        elif branches or el.children:
            needed = [p for p in branches if p.required]
            if not len(needed) <= len(el.children) <= len(branches):
                names = ", ".join(p.name for p in branches) or "none"
                self.problem("XML_CHILDREN", f"<{el.tag}> takes {len(needed)} to "
                             f"{len(branches)} children ({names}), has {len(el.children)}",
                             el, f"give it one child for each of: {names}", path)
                return None
            for branch, kid in zip(branches, el.children, strict=False):
                tree = self.node(kid, (*path, branch.name))
                if tree is not None:
                    out[branch.name] = tree
        for attr, text in el.attrs.items():
            if attr in ("name", "ID") or attr.startswith("_"):
                continue
            port = manifest.port(attr)
            m = _REF.match(text.strip())
            if port is not None and port.blackboard and m is not None:
                out[attr] = m["key"]
                continue
            if m is not None and m["key"] in ("=", ""):
                self.problem("XML_ATTRIBUTE", f"<{el.tag}> {attr}={text!r}: this port takes a "
                             "value, not a blackboard reference", el,
                             "write the value itself, or '{name}' for a task parameter or a "
                             "subtree input", path)
                continue
            if m is not None:  # a value port: a parameter or a subtree input, used as is
                kind = port.type if port is not None else "any"
                whole = attr in el.attrs.get("_whole", "").split(";")
                out[attr] = [text.strip()] if kind == "list" and not whole else text.strip()
                continue
            try:
                out[attr] = self.value(text, port.type if port is not None else "any")
            except (ValueError, json.JSONDecodeError) as exc:
                self.problem("XML_ATTRIBUTE", f"<{el.tag}> {attr}={text!r}: {exc}", el,
                             "write a value of the port's type", path)
        return out

    # ------------------------------------------------------------------ the file

    def read(self, root: Element) -> dict[str, Any]:
        data: dict[str, Any] = {"description": f"BehaviorTree.CPP trees from "
                                f"{Path(self.doc.file).name}", "subtrees": {}}
        self.doc.marks[()] = self.mark(root)
        if root.tag != "root":
            self.problem("XML_ROOT", f"the document element is <{root.tag}>, not <root>", root,
                         "wrap the trees in <root BTCPP_format=\"4\">")
            return data
        fmt = root.attrs.get("BTCPP_format", "4")
        if fmt != "4":
            self.problem("XML_FORMAT", f"BTCPP_format={fmt!r}: only format 4 is read", root,
                         "convert the file to BehaviorTree.CPP v4 (Groot2 does)")
        main = root.attrs.get("main_tree_to_execute") or next(  # BT.CPP's WriteTreeToXML
            (el.attrs.get("ID") for el in root.children if el.tag == "BehaviorTree"
             and el.attrs.get("_fullpath") == ""), None)  # marks the main tree so
        for el in root.children:
            if el.tag == "BehaviorTree":
                tree_id = el.attrs.get("ID")
                if not tree_id:
                    self.problem("XML_MISSING_ATTRIBUTE", "<BehaviorTree> needs ID=", el,
                                 "name the tree: ID=\"...\"")
                    continue
                if tree_id in data["subtrees"]:
                    self.problem("DUPLICATE_SUBTREE", f"<BehaviorTree ID={tree_id!r}> is "
                                 "defined twice", el, "rename one of them")
                    continue
                path: DocPath = ("subtrees", tree_id)
                self.doc.key_marks[path] = self.mark(el)
                if len(el.children) != 1:
                    self.problem("XML_CHILDREN", f"<BehaviorTree ID={tree_id!r}> needs "
                                 f"exactly one root node, has {len(el.children)}", el,
                                 "wrap its nodes in a <Sequence>", path)
                    continue
                if el.children[0].tag == "Task":  # a task's chart (harness export-xml)
                    data["task"] = read_task(el.children[0], self)
                    data["task_tree"] = tree_id
                    continue
                tree = self.node(el.children[0], path)
                if tree is not None:
                    data["subtrees"][tree_id] = tree
            elif el.tag == "include":
                data.setdefault("includes", []).append(el.attrs.get("path", ""))
            elif el.tag != "TreeNodesModel":
                self.problem("XML_UNSUPPORTED", f"<{el.tag}> is not supported under <root>", el,
                             "keep <BehaviorTree>, <include> and <TreeNodesModel> there")
        name_subtree_uses(data["subtrees"])
        if "task" in data:
            inline_phase_trees(data["task"], data["subtrees"], root, self.doc)
        if main:
            data["metadata"] = {"main_tree_to_execute": main}
            if main not in data["subtrees"] and main != data.get("task_tree") and not any(
                    p.code.startswith("XML") for p in self.problems):
                known = list(data["subtrees"])
                self.problem("UNKNOWN_SUBTREE", f"main_tree_to_execute={main!r} names no "
                             f"BehaviorTree; trees: {', '.join(known)}"
                             f"{did_you_mean(main, known)}", root, "name one of the trees")
        return data
