"""BehaviorTree.CPP's scripting language, both ways.

Export: a task's parameters are the main tree's blackboard entries, set by the first child of
``<Task>``: ``<Script name="parameters" code="target:='red_cube'; offset:='0.0;0.1'"/>``
(each value as the text its ports convert from). The importer skips it: the ``params`` port
holds the declarations.

Import: a BT.CPP *condition* (``<ScriptCondition code>``, the pre-conditions ``_skipIf``,
``_successIf``, ``_failureIf``, ``_while``) becomes an expression of our one language
(:mod:`harness_bt.expr`): a name is a blackboard key (``bb.name``), ``&&`` / ``||`` /
``!`` are ``and`` / ``or`` / ``not``; comparisons, arithmetic, numbers, ``'text'``,
``true`` and ``false`` are the same. What has no counterpart there is refused naming the exact
construct: an assignment (``:=``, ``=``, ``+=``...; our trees never write the blackboard from
a script), ``..`` (string concatenation), the bitwise operators, ``? :`` and several
statements. :func:`wrap_conditions` builds the nodes around the element.
"""

from __future__ import annotations

import re
from typing import Any

from harness_bt.authoring.readers.btcpp.elements import Element
from harness_bt.authoring.readers.btcpp.peer import script_literal
from harness_bt.errors import DefinitionError
from harness_bt.expr import ExprError, compile_expr
from harness_bt.source import DocPath

__all__ = ["CONDITION_ATTRS", "POST_ATTRS", "SCRIPT_TAGS", "parameters_script", "read_conditions",
           "read_script", "translate", "wrap_conditions"]

#: The elements of BT.CPP's scripting: a condition is read, an assignment refused.
SCRIPT_TAGS = ("ScriptCondition", "Script", "SetBlackboard")
_CONDITION_FIX = "write a condition over blackboard keys (a > 1 && b == 'x')"
_ASSIGN_FIX = ("set the value in the task's 'blackboard:' defaults or a subtree's values; a "
               "condition goes in <ScriptCondition>")

#: BT.CPP's pre-conditions (a condition each) and post-conditions (assignments).
CONDITION_ATTRS = ("_failureIf", "_successIf", "_skipIf", "_while")
POST_ATTRS = ("_onSuccess", "_onFailure", "_onHalted", "_post")

_TOKEN = re.compile(r"""\s*(?:(?P<num>\d+\.\d*|\.\d+|\d+(?:[eE][+-]?\d+)?)
                    |(?P<str>'[^']*'|"[^"]*")
                    |(?P<name>[A-Za-z_@][A-Za-z0-9_.@]*)
                    |(?P<op>:=|\+=|-=|\*=|/=|==|!=|<=|>=|&&|\|\||\.\.|[-+*/<>!()=&|^~?:;,]))""",
                    re.VERBOSE)
_SAME = {"==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "(", ")"}
_REFUSED = {":=": "an assignment (:=)", "=": "an assignment (=)", "+=": "an assignment (+=)",
            "-=": "an assignment (-=)", "*=": "an assignment (*=)", "/=": "an assignment (/=)",
            "..": "string concatenation (..)", "&": "the bitwise operator &",
            "|": "the bitwise operator |", "^": "the bitwise operator ^",
            "~": "the bitwise operator ~", "?": "the conditional operator (? :)",
            ":": "the conditional operator (? :)", ";": "more than one statement (;)",
            ",": "a comma"}


def translate(code: str) -> str:
    """A BT.CPP script condition as our expression; ValueError naming the construct that has
    no counterpart (or the text that does not read)."""
    out: list[str] = []
    i = 0
    code = code.strip()
    while i < len(code):
        m = _TOKEN.match(code, i)
        if m is None or m.end() == i:
            raise ValueError(f"cannot read {code[i:]!r}")
        i = m.end()
        if m["num"] is not None:
            out.append(m["num"])
        elif m["str"] is not None:
            out.append("'" + m["str"][1:-1] + "'" if "'" not in m["str"][1:-1] else m["str"])
        elif m["name"] is not None:
            name = m["name"]
            if name in ("true", "false"):
                out.append(name)
            elif "@" in name or "." in name:
                raise ValueError(f"{name!r}: the root blackboard (@) and enums are not "
                                 "blackboard keys here")
            else:
                out.append(f"bb.{name}")
        else:
            op = m["op"]
            if op in _REFUSED:
                raise ValueError(f"{_REFUSED[op]} has no counterpart in the expression "
                                 "language")
            out.append({"&&": "and", "||": "or", "!": "not"}.get(op, op) if op not in _SAME
                       else op)
    text = " ".join(out)
    if not text:
        raise ValueError("the script is empty")
    try:
        compile_expr(text, roots=("bb", "world"))
    except ExprError as exc:
        raise ValueError(f"{text!r}: {exc}") from None
    return text


def _check(when: str, name: str) -> dict[str, Any]:
    """A condition that answers on its first tick (a one-tick wait: FAILURE on the next tick
    when it did not hold)."""
    return {"type": "wait_for", "name": name, "when": when, "timeout_s": 0.001}


def wrap_conditions(node: dict[str, Any], conditions: dict[str, str]) -> dict[str, Any]:
    """``node`` inside the nodes its pre-conditions (translated) stand for:
    ``_failureIf`` -> sequence [not E, node]; ``_successIf`` and ``_skipIf`` -> selector
    [E, node] (SKIPPED has no counterpart: the element counts as succeeded); ``_while`` ->
    reactive sequence [E, node] (re-checked every tick, halting the node when it stops
    holding)."""
    name = str(node.get("name") or node.get("subtree") or "node")
    out = node
    for attr in reversed(CONDITION_ATTRS):  # BT.CPP checks them in CONDITION_ATTRS' order
        if attr not in conditions:
            continue
        when = conditions[attr]
        if attr == "_failureIf":
            out = {"type": "sequence", "name": f"{name}_failure_if",
                   "children": [_check(f"not ({when})", "failure_if"), out]}
        elif attr in ("_successIf", "_skipIf"):
            label = "success_if" if attr == "_successIf" else "skip_if"
            out = {"type": "selector", "name": f"{name}_{label}",
                   "children": [_check(when, label), out]}
        else:
            out = {"type": "sequence", "name": f"{name}_while", "memory": False,
                   "children": [_check(when, "while"), out]}
    return out


def parameters_script(params: dict[str, Any], task: str) -> list[Element]:
    """The ``<Script>`` that sets each parameter with a default on the main tree's
    blackboard (none when no parameter has one). DefinitionError for a default BT.CPP's
    scripts cannot write."""
    parts = []
    for key, decl in params.items():
        default = decl.get("default") if isinstance(decl, dict) else None
        if default is None:
            continue
        literal = script_literal(default)
        if literal is None:
            raise DefinitionError(
                "XML_PARAMETER", f"task {task!r}: the default of parameter {key!r} "
                f"({default!r}) cannot be written as a BehaviorTree.CPP script value",
                fix="give it a default without a quote, a ';' in a text, or nesting")
        parts.append(f"{key}:={literal}")
    if not parts:
        return []
    return [Element("Script", {"name": "parameters", "code": "; ".join(parts)}, 0, 0)]


def read_conditions(reader: Any, el: Element, tag: str, path: DocPath) -> dict[str, str] | None:
    """The element's pre-conditions as expressions (None, with a problem on ``reader``, when
    one has no counterpart or it has a post-condition)."""
    out: dict[str, str] = {}
    for attr in el.attrs:
        if attr in POST_ATTRS:
            reader.problem("XML_UNSUPPORTED", f"<{tag}> {attr}={el.attrs[attr]!r}: a "
                           "post-condition assigns the blackboard, which trees here never do "
                           "from a script", el, "remove it; set values in the task's "
                           "'blackboard:' defaults or a subtree's values", path)
            return None
        if attr in CONDITION_ATTRS:
            try:
                out[attr] = translate(el.attrs[attr])
            except ValueError as exc:
                reader.problem("XML_UNSUPPORTED", f"<{tag}> {attr}={el.attrs[attr]!r}: {exc}",
                               el, _CONDITION_FIX, path)
                return None
    return out


def read_script(reader: Any, el: Element, tag: str, path: DocPath) -> dict[str, Any] | None:
    """A ``<ScriptCondition>`` as a one-tick ``wait_for``; ``<Script>`` and
    ``<SetBlackboard>`` refused, naming what they assign."""
    if tag == "ScriptCondition":
        try:
            when = translate(el.attrs.get("code", ""))
        except ValueError as exc:
            reader.problem("XML_UNSUPPORTED", f"<ScriptCondition code="
                           f"{el.attrs.get('code', '')!r}>: {exc}", el, _CONDITION_FIX, path)
            return None
        return _check(when, reader.name(el, "condition"))
    what = el.attrs.get("code") if tag == "Script" else \
        f"{el.attrs.get('output_key')} = {el.attrs.get('value')}"
    reader.problem("XML_UNSUPPORTED", f"<{tag}> ({what!r}) assigns the blackboard, which trees "
                   "here never do from a script", el, _ASSIGN_FIX, path)
    return None
