"""What BehaviorTree.CPP 4 itself requires of a file, so an exported file loads in it as
written: the IDs it registers, the port names it reserves, the port types it can convert from
text, and the literals of its scripting language.

- Every ``<TreeNodesModel>`` ID and every ``<BehaviorTree>`` ID must differ from one another and
  from BT.CPP's own nodes ("The attribute [ID] of tag <SubTree> must not use the name of a
  registered Node"). Skills and node types are modelled under their CamelCase name
  (``grasp`` -> ``Grasp``, ``act_and_evaluate`` -> ``ActAndEvaluate``), which the importer
  reads back (``GraspObject`` names the skill ``grasp_object``); trees keep their names.
- A port may not be called ``name`` or ``ID`` nor start with anything but a letter.
- A port's type is one BT.CPP converts from text: ``std::string``, ``int``, ``double``,
  ``bool`` and ``std::vector`` of those (items separated by ``;``). A mapping has no converter
  there, so mapping ports are ``std::string`` holding ``key:value;key:value``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic_core import PydanticUndefined

from harness_bt.authoring.readers.btcpp.elements import snake
from harness_bt.errors import DefinitionError

__all__ = ["BUILTIN", "CPP_TYPES", "check_tree_ids", "model_id", "port_allowed", "real_default",
           "script_literal"]

#: The nodes a ``BT::BehaviorTreeFactory`` registers itself (BehaviorTree.CPP 4.8).
BUILTIN = frozenset((
    "Fallback", "AsyncFallback", "Sequence", "AsyncSequence", "SequenceWithMemory",
    "SequenceStar", "Parallel", "ParallelAll", "ReactiveSequence", "ReactiveFallback",
    "IfThenElse", "WhileDoElse", "Inverter", "RetryUntilSuccessful", "KeepRunningUntilFailure",
    "Repeat", "Timeout", "Delay", "RunOnce", "ForceSuccess", "ForceFailure", "AlwaysSuccess",
    "AlwaysFailure", "Script", "ScriptCondition", "SetBlackboard", "Sleep", "UnsetBlackboard",
    "SubTree", "Precondition", "WasEntryUpdated", "SkipUnlessUpdated", "WaitValueUpdate",
    "Switch2", "Switch3", "Switch4", "Switch5", "Switch6", "LoopInt", "LoopDouble",
    "LoopString", "LoopBool", "LoopDequeInt", "LoopDequeDouble", "LoopDequeString",
    "LoopDequeBool",
))
#: Our port kinds as the BT.CPP types that read them.
CPP_TYPES = {"str": "std::string", "int": "int", "float": "double", "bool": "bool",
             "list": "std::vector<std::string>", "dict": "std::string", "expr": "std::string",
             "any": "std::string", "json": "std::string"}
_RESERVED_PORTS = ("name", "ID")


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def model_id(name: str) -> str:
    """The ``<TreeNodesModel>`` ID (and element tag) of a skill or node type: its CamelCase
    name when that reads back to it (and is not one of BT.CPP's own nodes), else the name."""
    camel = _camel(name)
    return camel if camel and snake(camel) == name and camel not in BUILTIN else name


def port_allowed(name: str) -> bool:
    """A port name BT.CPP accepts (``CreatePort`` refuses the others)."""
    return bool(name) and name[:1].isalpha() and name not in _RESERVED_PORTS


def real_default(value: Any) -> bool:
    """A declared default worth writing: not pydantic's "no default", not None."""
    return value is not None and value is not PydanticUndefined and value is not Ellipsis


def script_literal(value: Any) -> str | None:
    """``value`` as a BT.CPP script string literal (the text its ports convert from), or None
    when it has none (a quote in it, a nested value)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        text = repr(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(isinstance(v, str | int | float) and
                                         not isinstance(v, bool) for v in value):
        text = ";".join(str(v) for v in value)
    else:
        return None
    if "'" in text or (";" in text and isinstance(value, str)):
        return None
    return f"'{text}'"


_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def check_tree_ids(tree_ids: list[str], model_ids: set[str], file: str) -> None:
    """Refuse tree IDs that BT.CPP would refuse: one of its own nodes, a node model's ID."""
    clashes = [t for t in tree_ids if t in BUILTIN or t in model_ids]
    if clashes:
        raise DefinitionError(
            "XML_ID_CLASH", f"{file}: the tree ID(s) {', '.join(map(repr, clashes))} are also "
            "node IDs in BehaviorTree.CPP (its own nodes or this file's node models), which "
            "it refuses", fix="rename the subtree(s)")
