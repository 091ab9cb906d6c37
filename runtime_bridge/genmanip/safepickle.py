"""Reading pickles from the network without letting them run code.

A pickle can name any importable callable (``os.system``, ``subprocess.Popen``) and have the
reader call it. The GenManip wire carries only builtin containers and scalars (numpy arrays are
encoded as plain dicts), so :func:`safe_loads` refuses every global and every persistent id:
the only objects it can build are dict, list, tuple, set, frozenset, str, bytes, int, float,
bool and None.
"""

from __future__ import annotations

import io
import pickle

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
        raise _GlobalRefused("<persistent id>", repr(pid)[:80])


def safe_loads(data: bytes | memoryview, *, where: str = "body",
               max_bytes: int | None = None) -> object:
    """Unpickle ``data`` allowing builtins only; raise :class:`HttpError` (HTTP 400) otherwise.

    ``max_bytes`` refuses larger inputs before reading them (HTTP 413).
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
        return _NoGlobalsUnpickler(io.BytesIO(data)).load()
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
            f"{where} is not a readable pickle ({type(exc).__name__}: {exc})",
            where=where,
            fix="send pickle protocol 5 bytes of the request dict (pickle.dumps(obj, protocol=5))",
            details={"size": size, "head": bytes(data[:16]).hex()},
        ) from None
