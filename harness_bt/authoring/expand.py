"""Turn a document's trees into the core's neutral node dicts: shorthands become their node
types and subtree references are replaced by their (remapped) trees. The same walk records
every blackboard key each node reads and writes, with where it is named, for validation.

Blackboard remapping in a subtree use: a key in ``remap`` becomes the outer key it names; a
key in ``values`` becomes a private key (``<use name>.<key>``) set to that value before the
first tick; any other key is shared with the including tree (``autoremap``, the default) or
private to the use. Keys a node type writes under its own name (``<name>.cmd`` of
``act_and_evaluate``) are never renamed: the node writes them literally.

Subtree inputs: ``{key}`` in a subtree's values (:mod:`harness_bt.authoring.placeholders`) is the
use's ``values`` entry for ``key`` (itself substituted where the use is), or, when ``remap``
sends ``key`` to a name that is a parameter or an input where the use is, that one's value;
else the task's parameter ``key``. Each use gets its own copy of the subtree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness_bt.authoring.domains import SceneFacts
from harness_bt.authoring.library import Library, SubtreeDef
from harness_bt.authoring.nodes import SKILL_TAG, SUBTREE_TAG, NodeModels, node_tag
from harness_bt.authoring.placeholders import (
    PLACEHOLDER,
    Substitution,
    in_key_text,
    substitute_tree,
)
from harness_bt.expr import ExprError, compile_expr
from harness_bt.nodes.base import NodeManifest, Port
from harness_bt.plugins import closest, did_you_mean
from harness_bt.problems import Problem, Report, Severity
from harness_bt.source import DocPath, Document, format_path

__all__ = ["Expander", "KeyUse"]

KeyMap = Callable[[str], str]
Scope = dict[str, Any]


@dataclass(frozen=True)
class KeyUse:
    """One blackboard key named by a node (after remapping): read or written, where."""

    key: str
    mode: str  # "read" | "write"
    doc: Document
    path: DocPath
    by: str  # "skill_action 'close' (output)"
    via: tuple[str, ...] = ()

    def where(self) -> str:
        return self.doc.where(self.path)


def _identity(key: str) -> str:
    return key


@dataclass
class Expander:
    """Expands trees against a library. With a ``report``, problems found on the way (unknown
    subtrees, cycles, siblings with one name) are added to it."""

    library: Library
    models: NodeModels
    report: Report | None = None
    uses: list[KeyUse] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)  # private keys from `values`
    used_subtrees: set[str] = field(default_factory=set)
    #: the task's parameter values (the scope of its phases' trees)
    params: Scope = field(default_factory=dict)
    #: every ``{name}`` met in a subtree use or copy
    used_names: set[str] = field(default_factory=set)
    _nested: list[set[str]] = field(default_factory=list)  # inputs passed on, per use
    _reported_sites: set[tuple[str, str]] = field(default_factory=set)
    #: called with each subtree copy whose values were substituted (to check it)
    on_copy: Callable[[SubtreeDef, Any, list[tuple[str, DocPath]]], None] | None = None
    #: the facts of the task's scene (read the first time a for_each needs them), or None
    scene: Callable[[], SceneFacts | None] | None = None

    def expand(self, tree: Any, doc: Document, path: DocPath, *,
               mapping: KeyMap = _identity, via: tuple[str, ...] = (),
               stack: tuple[str, ...] = (), scope: Scope | None = None
               ) -> dict[str, Any] | None:
        tag = node_tag(tree)
        scope = self.params if scope is None else scope
        if tag == SUBTREE_TAG:
            return self._use(tree, doc, path, mapping, via, stack, scope)
        if tag is None or not isinstance(tree, dict):
            return None
        node = {"type": "skill_action", **tree} if tag == SKILL_TAG else dict(tree)
        manifest = self.models.manifest(node["type"]) if isinstance(node["type"], str) else None
        if manifest is None:
            return None
        name = node.get("name")
        label = f"{node['type']} {name!r}"
        out: dict[str, Any] = {}
        for key, value in node.items():
            port = manifest.port(key)
            if port is None:
                out[key] = value
            elif port.type == "tree":
                out[key] = self.expand(value, doc, (*path, key), mapping=mapping, via=via,
                                       stack=stack, scope=scope)
            elif port.type == "trees" and isinstance(value, list):
                kids = [self.expand(v, doc, (*path, key, i), mapping=mapping, via=via,
                                    stack=stack, scope=scope) for i, v in enumerate(value)]
                self._siblings(kids, doc, (*path, key), label)
                out[key] = kids
            elif port.blackboard:
                out[key] = self._keys(port, value, doc, (*path, key), mapping, label, via)
            else:
                out[key] = value
        if isinstance(name, str):
            self._implicit_writes(manifest, node, out, doc, path, mapping, label, via)
        if node["type"] == "for_each":
            out["each"] = self._each(node, doc, path, mapping, via, stack, scope)
            if isinstance(node.get("over"), str) and self.scene is not None:
                facts = self.scene()
                if facts is not None:
                    out["declared"] = {i: dict(facts.objects[i]) for i in
                                       (k["name"] for k in out["each"] if k is not None)
                                       if i in facts.objects}
        return out

    def _domain(self, node: dict[str, Any], doc: Document, path: DocPath
                ) -> tuple[list[str], bool] | None:
        """A ``for_each``'s candidates, and whether a candidate lacking a ``per_item`` value
        is left out (an expression's) rather than an error; None when ``over`` is reported."""
        over, at, name = node.get("over"), (*path, "over"), node.get("name")
        if isinstance(over, list):
            if not over:
                self._problem("EMPTY_DOMAIN", f"for_each {name!r} loops over no item", doc,
                              at, "name the items (over: [a, b]), a scene group or an "
                              "expression")
            return (over, False) if all(isinstance(i, str) for i in over) else None
        group = over.get("group") if isinstance(over, dict) else None
        if not isinstance(group, str) and not isinstance(over, str):
            return None  # reported by the node checks
        facts = self.scene() if self.scene is not None else None
        what = f"group {group!r}" if isinstance(group, str) else "an expression"
        if facts is None or facts.error:
            self._problem("NO_SCENE", f"for_each {name!r} loops over {what}, which the task's "
                          "scene gives: " + (f"scene {facts.name!r} does not load: "
                                             f"{facts.error}" if facts else "it names none"),
                          doc, at, "name the task's scene (scene: NAME), or list the items")
            return None
        if isinstance(over, str):
            return list(facts.objects), True
        if not isinstance(group, str) or group not in facts.groups:
            known = sorted(facts.groups)
            self._problem("UNKNOWN_GROUP", f"for_each {name!r}: scene {facts.name!r} has no "
                          f"group {group!r}; its groups: {', '.join(known) or '(none)'}"
                          f"{did_you_mean(str(group), known)}", doc, (*at, "group"),
                          "name one of its groups, or give objects 'group: "
                          f"{group}' in the scene")
            return None
        return list(facts.groups[group]), False

    def _each(self, node: dict[str, Any], doc: Document, path: DocPath, mapping: KeyMap,
              via: tuple[str, ...], stack: tuple[str, ...], scope: Scope
              ) -> list[dict[str, Any] | None]:
        """A ``for_each``'s body, one use of its subtree per item (named after the item, given
        it as the input ``item`` names): what the loop runs for that item."""
        body, item = node.get("body"), node.get("item")
        values: dict[str, Any] = node["values"] if isinstance(node.get("values"), dict) else {}
        domain = self._domain(node, doc, path)
        if not isinstance(body, str) or not isinstance(item, str) or domain is None:
            return []  # reported by the node checks
        per_item: dict[str, Any] = node["per_item"] if isinstance(node.get("per_item"), dict) \
            else {}
        if body not in self.library.subtrees:
            known = sorted(self.library.subtrees)
            self._problem("UNKNOWN_SUBTREE", f"unknown subtree {body!r}; known: "
                          f"{', '.join(known) or '(none)'}{did_you_mean(body, known)}",
                          doc, (*path, "body"),
                          "define it under 'subtrees:' or include the file that does")
            return []
        over, optional = domain
        if optional:  # an expression's candidates: the objects every per_item input covers
            for key, by_item in per_item.items():
                for each in by_item if isinstance(by_item, dict) else ():
                    if each not in over:
                        self._problem("UNKNOWN_OBJECT", f"per_item {key!r} of for_each "
                                      f"{node.get('name')!r} names {each!r}, no object of the "
                                      f"scene; its objects: {', '.join(over)}"
                                      f"{did_you_mean(str(each), over)}", doc,
                                      (*path, "per_item", key, each), "name one of them",
                                      key=True)
            over = [i for i in over if all(isinstance(v, dict) and i in v
                                           for v in per_item.values())]
            if not over:
                self._problem("EMPTY_DOMAIN", f"for_each {node.get('name')!r}: per_item gives "
                              "values for no object of the scene", doc, (*path, "per_item"),
                              "key per_item's values by the scene's objects")
        out = []
        for each in over:
            given = {**values, item: each}
            for key, by_item in per_item.items():
                if isinstance(by_item, dict) and each in by_item:
                    given[key] = by_item[each]
                else:
                    self._problem("MISSING_ITEM_VALUE", f"per_item {key!r} of for_each "
                                  f"{node.get('name')!r} gives no value for item {each!r}",
                                  doc, (*path, "per_item", key),
                                  f"add {each}: <value> under per_item.{key}")
            out.append(self._use({"subtree": body, "name": each, "values": given},
                                 doc, (*path, "body"), mapping, via, stack, scope))
        return out

    # ------------------------------------------------------------------ blackboard keys

    def _record(self, key: str, mode: str, doc: Document, path: DocPath, by: str,
                via: tuple[str, ...]) -> None:
        if PLACEHOLDER.fullmatch(key.rpartition(".")[2]):
            return  # '{name}' where a key belongs: reported as PARAM_IN_KEY_PORT
        self.uses.append(KeyUse(key, mode, doc, path, by, via))

    def _keys(self, port: Port, value: Any, doc: Document, path: DocPath, mapping: KeyMap,
              label: str, via: tuple[str, ...]) -> Any:
        by = f"{label} ({port.name})"
        mode = "write" if port.blackboard == "write" else "read"
        if port.blackboard in ("read", "write") and isinstance(value, str):
            self._record(mapping(value), mode, doc, path, by, via)
            return mapping(value)
        if port.blackboard == "read_values" and isinstance(value, dict):
            out = {}
            for param, key in value.items():
                if isinstance(key, str):
                    self._record(mapping(key), "read", doc, (*path, param), by, via)
                    out[param] = mapping(key)
                else:
                    out[param] = key
            return out
        if port.blackboard == "read_list" and isinstance(value, list):
            for i, key in enumerate(value):
                if isinstance(key, str):
                    self._record(mapping(key), "read", doc, (*path, i), by, via)
            return [mapping(k) if isinstance(k, str) else k for k in value]
        if port.blackboard == "expr" and isinstance(value, str):
            try:
                expression = compile_expr(value, roots=("bb", "world"))
            except ExprError:
                return value  # reported by the node checks
            keys = expression.reads("bb")
            for key in keys:
                self._record(mapping(key), "read", doc, path, by, via)
            renames = {k: mapping(k) for k in keys if mapping(k) != k}
            return expression.renamed(renames) if renames else value
        return value

    def _implicit_writes(self, manifest: NodeManifest, node: dict[str, Any],
                         out: dict[str, Any], doc: Document, path: DocPath, mapping: KeyMap,
                         label: str, via: tuple[str, ...]) -> None:
        name = str(node["name"])
        for port in manifest.ports:
            if port.blackboard == "write" and port.name not in node \
                    and isinstance(port.default, str) and "{name}" in port.default:
                key = port.default.format(name=name)
                final = mapping(key)
                self._record(final, "write", doc, path, f"{label} ({port.name}, default)", via)
                if final != key:
                    out[port.name] = final
        for template in manifest.writes:
            self._record(template.format(name=name), "write", doc, path, label, via)

    # ------------------------------------------------------------------ subtrees

    def _problem(self, code: str, message: str, doc: Document, path: DocPath, fix: str,
                 severity: Severity = Severity.ERROR, *, key: bool = False) -> None:
        if self.report is not None:
            self.report.add(Problem(code, message, doc.where(path, key=key), fix=fix,
                                    severity=severity, path=format_path(path)))

    def _siblings(self, kids: list[dict[str, Any] | None], doc: Document, path: DocPath,
                  label: str) -> None:
        seen: dict[str, int] = {}
        for i, kid in enumerate(kids):
            if kid is None or not isinstance(kid.get("name"), str):
                continue
            name = kid["name"]
            if name in seen:
                self._problem("DUPLICATE_NAME", f"children {seen[name]} and {i} of {label} are "
                              f"both named {name!r}", doc, (*path, i),
                              "give siblings distinct names (node paths name commands)")
            else:
                seen[name] = i

    def _use(self, ref: dict[str, Any], doc: Document, path: DocPath, mapping: KeyMap,
             via: tuple[str, ...], stack: tuple[str, ...], scope: Scope
             ) -> dict[str, Any] | None:
        name = ref.get("subtree")
        if not isinstance(name, str):
            return None
        sub = self.library.subtrees.get(name)
        if sub is None:
            known = sorted(self.library.subtrees)
            self._problem("UNKNOWN_SUBTREE", f"unknown subtree {name!r}; known: "
                          f"{', '.join(known) or '(none)'}{did_you_mean(name, known)}",
                          doc, (*path, "subtree"),
                          "define it under 'subtrees:' or include the file that does")
            meant = closest(name, known)
            if meant is None:
                return None
            # one misspelling, one error: the rest is checked with the subtree it meant (not
            # reported unused, its blackboard writes seen); an erroneous document is never built
            name, sub = meant, self.library.subtrees[meant]
        if name in stack:
            chain = " -> ".join([*stack, name])
            self._problem("SUBTREE_CYCLE", f"subtree {name!r} uses itself: {chain}", doc,
                          (*path, "subtree"), "a tree is finite: break the cycle")
            return None
        self.used_subtrees.add(name)
        root = sub.tree if isinstance(sub.tree, dict) else {}
        use_name = ref.get("name") or root.get("name") or name
        remap: dict[str, Any] = dict(ref["remap"]) if isinstance(ref.get("remap"), dict) else {}
        given = ref["values"] if isinstance(ref.get("values"), dict) else {}
        outer = Substitution(scope)
        values = {k: outer.value(v, (*path, "values", k)) for k, v in given.items()}
        self._missing(outer, doc, f"subtree use {use_name!r}")
        for key, target in list(remap.items()):  # a parameter or input passed by name
            if isinstance(target, str) and target in scope and key not in values:
                outer.used.add(target)
                values[key] = scope[target]
                del remap[key]
        self.used_names |= outer.used
        if self._nested:  # names of the enclosing use's scope read by this use's values
            self._nested[-1] |= outer.used
        private = not ref.get("autoremap", True)
        fixed = self._template_keys(sub.tree, (*stack, name))

        def inner(key: str) -> str:
            if key in remap and isinstance(remap[key], str):
                return mapping(remap[key])
            if key in values:
                return f"{use_name}.{key}"
            if private and key not in fixed:
                return f"{use_name}.{key}"
            return mapping(key)

        copy = Substitution({**self.params, **values})
        tree = substitute_tree(sub.tree, sub.path, self.models, copy)
        self.used_names |= copy.used
        if copy.used or copy.in_keys:
            self._inputs(copy, sub, name, doc, path)
            if self.on_copy is not None:
                self.on_copy(sub, tree, copy.missing)
        for key, value in values.items():
            self.defaults[f"{use_name}.{key}"] = value
            self._record(f"{use_name}.{key}", "write", doc, (*path, "values", key),
                         f"subtree use {use_name!r} (values)", via)
        note = f"subtree {name!r} used at {doc.where(path)}"
        before = len(self.uses)
        self._nested.append(set())
        try:
            out = self.expand(tree, sub.doc, sub.path, mapping=inner, via=(*via, note),
                              stack=(*stack, name), scope=copy.scope)
        finally:
            passed_on = self._nested.pop()
        named = {u.key for u in self.uses[before:]}
        for key in [*remap, *values]:
            if inner(key) in named:
                continue
            if key in copy.used or key in passed_on:  # an input only: no blackboard key
                self.defaults.pop(f"{use_name}.{key}", None)
                continue
            self._problem("UNUSED_REMAP", f"subtree {name!r} names no blackboard key "
                          f"{key!r}", doc, (*path, "values" if key in given else "remap", key),
                          "remove it, or check the spelling against the subtree's ports and "
                          "its inputs ('{key}' in its values)",
                          Severity.WARNING, key=True)
        if out is not None and ref.get("name"):
            out["name"] = ref["name"]
        return out

    def _missing(self, sub: Substitution, doc: Document, where: str) -> None:
        """``{name}`` with no value where a use is (its ``values``)."""
        for name, at in sub.missing:
            known = sorted(sub.scope)
            self._problem("UNDECLARED_PARAM", f"'{{{name}}}' in {where} names no parameter "
                          f"or input here; known: {', '.join(known) or '(none)'}"
                          f"{did_you_mean(name, known)}", doc, at,
                          "declare it under the task's 'params:', or fix the name")

    def _inputs(self, copy: Substitution, sub: SubtreeDef, name: str, doc: Document,
                path: DocPath) -> None:
        """Inputs of a subtree that its use leaves without a value, at both places."""
        use_at = doc.where(path)
        sites: dict[str, list[str]] = {}
        for missing, at in copy.missing:
            sites.setdefault(missing, []).append(sub.doc.where(at))
            if (missing, sub.doc.where(at)) in self._reported_sites:
                continue  # one report per place, however many uses leave it without a value
            self._reported_sites.add((missing, sub.doc.where(at)))
            self._problem("UNDECLARED_PARAM", f"'{{{missing}}}' in subtree {name!r} is not given "
                          f"by its use at {use_at} nor a task parameter", sub.doc, at,
                          f"give it where the subtree is used (values: {{{missing}: ...}}), or "
                          f"declare {missing!r} under the task's 'params:'")
        for missing, where in sites.items():
            self._problem("MISSING_SUBTREE_INPUT", f"subtree {name!r} needs input {missing!r} "
                          f"('{{{missing}}}' at {', '.join(where)}) and this use does not give "
                          "it", doc, (*path, "subtree"), f"add values: {{{missing}: ...}} to "
                          "this use (a value, or '{param}' for a task parameter)")
        for missing, at, what in copy.in_keys:
            message, fix = in_key_text(missing, what)
            self._problem("PARAM_IN_KEY_PORT", message, sub.doc, at, fix)

    def _template_keys(self, tree: Any, stack: tuple[str, ...]) -> set[str]:
        """Keys nodes in ``tree`` write under their own names (never renamed)."""
        out: set[str] = set()
        todo = [tree]
        while todo:
            node = todo.pop()
            tag = node_tag(node)
            if tag == SUBTREE_TAG:
                sub = self.library.subtrees.get(node.get("subtree", ""))
                if sub is not None and sub.name not in stack:
                    todo.append(sub.tree)
                    stack = (*stack, sub.name)
                continue
            if not isinstance(node, dict) or tag is None:
                continue
            manifest = self.models.manifest("skill_action" if tag == SKILL_TAG else tag)
            if manifest is None:
                continue
            name = node.get("name")
            if isinstance(name, str):
                out.update(t.format(name=name) for t in manifest.writes)
            for port in manifest.ports:
                value = node.get(port.name)
                if port.type == "tree" and value is not None:
                    todo.append(value)
                elif port.type == "trees" and isinstance(value, list):
                    todo.extend(value)
        return out
