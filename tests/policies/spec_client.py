"""A client that knows nothing of this project but the observation spec in a server's
metadata (:mod:`policies.spec`): :data:`BUILD` defines ``build(spec)``, the observation map it
makes from the spec alone. It is plain text so that the same code runs here and in openpi's
own virtualenv (numpy only)."""

from __future__ import annotations

from typing import Any

BUILD = r'''
import numpy as np

def build(spec):
    """An observation from the spec alone: every required key, per camera for the first
    example camera, at the dtype and shape it gives (free dims from spec["dims"]), holding
    the example value when there is one, else zeros; the prompt's example."""
    camera = spec["cameras"]["examples"][0]
    out = {}
    for entry in spec["keys"]:
        if not entry["required"]:
            continue
        key = entry["key"].replace(spec["cameras"]["placeholder"], camera) \
            if entry["per_camera"] else entry["key"]
        if entry["dtype"] == "str":
            out[key] = str(entry["example"])
            continue
        shape = [spec["dims"].get(d, 1) if isinstance(d, str) else int(d)
                 for d in entry["shape"]]
        if "example" in entry:
            out[key] = np.asarray(entry["example"], dtype=entry["dtype"]).reshape(shape)
        else:
            out[key] = np.zeros(shape, dtype=entry["dtype"])
    return out
'''


def build(spec: dict[str, Any]) -> dict[str, Any]:
    """:data:`BUILD`'s ``build``, in this process."""
    namespace: dict[str, Any] = {}
    exec(BUILD, namespace)  # the test's own code, shared with the openpi client
    return dict(namespace["build"](spec))
