"""Reading pickles from the network without letting them run code.

A pickle can name any importable callable (``os.system``, ``subprocess.Popen``) and have the
reader call it. The GenManip wire carries only builtin containers and scalars (numpy arrays are
encoded as plain dicts), so :func:`safe_loads` refuses every global and every persistent id:
the only objects it can build are dict, list, tuple, set, frozenset, str, bytes, int, float,
bool and None.

A server reads with a :class:`~harness_bt.request_budget.RequestBudget` (``budget=``): then a
stricter reader also refuses the opcodes that call or build objects, and every dict key and set
element that would be costly to hash (a tuple of shared references hashes 2**depth values),
and the result is measured (:func:`~harness_bt.request_budget.measure`: depth, values and text
as if every shared reference were a copy) before anyone formats or walks it.
"""

from __future__ import annotations

import io
import pickle
from typing import Any, ClassVar

from harness_bt.request_budget import RequestBudget, RequestRefused, bounded, measure
from runtime_bridge.genmanip.errors import HttpError

__all__ = ["ALLOWED_TYPES_TEXT", "safe_loads"]

ALLOWED_TYPES_TEXT = "dict, list, tuple, set, str, bytes, int, float, bool, None"


class _GlobalRefused(pickle.UnpicklingError):
    def __init__(self, module: str, name: str) -> None:
        super().__init__(f"{module}.{name}")
        self.module = module
        self.name = name


class _NoGlobalsUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        raise _GlobalRefused(module, name)

    def persistent_load(self, pid: object) -> object:
        raise _GlobalRefused("<persistent id>", bounded(pid, 80))


#: the most values a dict key or set element may hold (hashing it walks them all)
MAX_KEY_VALUES = 64


class _HashRefused(pickle.UnpicklingError):
    pass


def _hash_safe(key: Any) -> None:
    """Refuse a key whose hash would walk more than ``MAX_KEY_VALUES`` values."""
    if not isinstance(key, tuple | frozenset):
        return
    seen, stack = 0, [key]
    while stack:
        item = stack.pop()
        seen += 1
        if seen > MAX_KEY_VALUES:
            raise _HashRefused(f"a dict key or set element holding more than {MAX_KEY_VALUES} "
                               f"values ({bounded(key, 60)})")
        if isinstance(item, tuple):  # a frozenset caches its hash; a tuple does not
            stack.extend(item)


def _refuse_opcode(self: Any) -> None:
    raise _GlobalRefused("<opcode>", "an object-building opcode")


#: The pure-Python unpickler (its opcode handlers are not in the type stubs).
_PurePython: Any = pickle._Unpickler


class _BoundedUnpickler(_PurePython):
    """The pure-Python unpickler with no globals, no object-building opcodes and hash-safe
    keys (see the module docstring)."""

    dispatch: ClassVar[dict[int, Any]] = dict(_PurePython.dispatch)

    def find_class(self, module: str, name: str) -> object:
        raise _GlobalRefused(str(module)[:80], str(name)[:80])  # both str, from the pickle

    def persistent_load(self, pid: object) -> object:
        raise _GlobalRefused("<persistent id>", bounded(pid, 80))

    def load_dict(self) -> None:
        items = self.pop_mark()
        for key in items[::2]:
            _hash_safe(key)
        self.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def load_setitem(self) -> None:
        _hash_safe(self.stack[-2])
        super().load_setitem()

    def load_setitems(self) -> None:
        items = self.pop_mark()
        for key in items[::2]:
            _hash_safe(key)
        target = self.stack[-1]
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def load_additems(self) -> None:
        items = self.pop_mark()
        for item in items:
            _hash_safe(item)
        self.stack[-1].update(items)

    def load_frozenset(self) -> None:
        items = self.pop_mark()
        for item in items:
            _hash_safe(item)
        self.append(frozenset(items))

    for _op, _name in ((pickle.DICT, "load_dict"), (pickle.SETITEM, "load_setitem"),
                       (pickle.SETITEMS, "load_setitems"), (pickle.ADDITEMS, "load_additems"),
                       (pickle.FROZENSET, "load_frozenset")):
        dispatch[_op[0]] = locals()[_name]
    for _op in (pickle.REDUCE, pickle.BUILD, pickle.INST, pickle.OBJ, pickle.NEWOBJ,
                pickle.NEWOBJ_EX, pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch[_op[0]] = _refuse_opcode
    del _op, _name


def safe_loads(data: bytes | memoryview, *, where: str = "body",
               max_bytes: int | None = None, budget: RequestBudget | None = None) -> object:
    """Unpickle ``data`` allowing builtins only; raise :class:`HttpError` (HTTP 400) otherwise.

    ``max_bytes`` refuses larger inputs before reading them (HTTP 413). ``budget`` (servers):
    read with the stricter reader and measure the result (see the module docstring).
    """
    size = len(data)
    if max_bytes is not None and size > max_bytes:
        raise HttpError(
            "BODY_TOO_LARGE",
            f"{where} is {size} bytes, over the limit of {max_bytes} bytes",
            http_status=413,
            where=where,
            fix="send a smaller message or raise the size limit on the receiving side",
            details={"size": size, "limit": max_bytes},
        )
    if size == 0:
        raise HttpError(
            "EMPTY_BODY",
            f"{where} is empty; a pickle (protocol 5) was expected",
            where=where,
            fix="send the pickled request dict as the body (Content-Type application/octet-stream)",
        )
    try:
        if budget is None:
            return _NoGlobalsUnpickler(io.BytesIO(data)).load()
        value = _BoundedUnpickler(io.BytesIO(data)).load()
        measure(value, budget, where=where)
        return value
    except RequestRefused as exc:
        raise HttpError(exc.code, exc.message, http_status=400, where=where, fix=exc.fix,
                        details=exc.details) from None
    except _HashRefused as exc:
        raise HttpError("PICKLE_KEY_REFUSED", f"{where} has {exc}", where=where,
                        fix="use strings or numbers as dict keys and set elements") from None
    except _GlobalRefused as exc:
        raise HttpError(
            "PICKLE_GLOBAL_REFUSED",
            f"{where} refers to the global {exc.module}.{exc.name}; this endpoint never imports "
            f"or calls anything named by a pickle and accepts only {ALLOWED_TYPES_TEXT}",
            where=where,
            fix="send plain builtins; encode numpy arrays as {'type': 'numpy_array', 'dtype', "
            "'shape', 'data': base64} dicts as GenManip does",
            details={"global": f"{exc.module}.{exc.name}"},
        ) from None
    except RecursionError:
        raise HttpError(
            "PICKLE_TOO_DEEP",
            f"{where} nests containers too deeply to read",
            where=where,
            fix="send a flatter structure",
        ) from None
    except Exception as exc:  # truncated, corrupted or not a pickle at all
        raise HttpError(
            "PICKLE_UNREADABLE",
            f"{where} is not a readable pickle ({type(exc).__name__}: {bounded(str(exc), 160)})",
            where=where,
            fix="send pickle protocol 5 bytes of the request dict (pickle.dumps(obj, protocol=5))",
            details={"size": size, "head": bytes(data[:16]).hex()},
        ) from None
