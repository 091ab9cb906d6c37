"""The observation spec a policy server sends in its metadata: what a request must hold,
machine-readable, so an openpi client that was not written against our docs can build one.

``observation_spec()`` lists every key :func:`~policies.request.parse_request` reads (the
same constants), each with its dtype, its shape (``"H"`` and ``"W"`` are any image size;
``dims`` gives the size the built-in simulator renders), whether it is required, per camera
or not (``{camera}`` in the key stands for any camera name), a layout for vectors, and an
example value for the small ones; and the prompt: its template and the objects the policy
knows. A test builds a request from the spec alone and checks that the parser accepts it,
so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from policies.request import CAMERA_POSE, DEPTH, IMAGE, INTRINSICS, JOINTS, PROMPT, SESSION, STATE

__all__ = ["CAMERA", "SPEC_FORMAT", "observation_spec"]

#: What ``{camera}`` in a key stands for.
CAMERA = "{camera}"
#: The name and version of the spec's own layout.
SPEC_FORMAT = "harness-bt.observation_spec/1"

_POSE = ["x", "y", "z", "qw", "qx", "qy", "qz"]
#: The built-in simulator's default camera: 256 x 192, 50 degrees of vertical field of view.
_K = [[205.9, 0.0, 128.0], [0.0, 205.9, 96.0], [0.0, 0.0, 1.0]]


def observation_spec(*, depth_required: bool = False, objects: Iterable[str] = (),
                     prompt_template: str = "pick up the {object}",
                     cameras: Iterable[str] = ("front", "left")) -> dict[str, Any]:
    """The spec of the observation map (docs/policies.md). ``depth_required``: the policy
    needs depth to act (it is optional for the parser); ``objects``: the names the prompt may
    use for ``{object}``; ``cameras``: example camera names (any name works)."""
    names = sorted(objects)
    return {
        "format": SPEC_FORMAT,
        "cameras": {"placeholder": CAMERA, "min": 1, "examples": list(cameras),
                    "note": "any number of cameras, each with its own keys"},
        "dims": {"H": 192, "W": 256},
        "keys": [
            {"key": IMAGE + CAMERA, "per_camera": True, "required": True, "dtype": "uint8",
             "shape": ["H", "W", 3], "description": "RGB image"},
            {"key": DEPTH + CAMERA, "per_camera": True, "required": depth_required,
             "dtype": "float32", "shape": ["H", "W"],
             "description": "depth in metres along the optical axis, the image's size"},
            {"key": INTRINSICS + CAMERA, "per_camera": True, "required": True,
             "dtype": "float64", "shape": [3, 3], "description": "pinhole matrix",
             "example": _K},
            {"key": CAMERA_POSE + CAMERA, "per_camera": True, "required": True,
             "dtype": "float64", "shape": [7], "layout": _POSE,
             "description": "camera pose in the world frame, OpenCV axes (x right, y down, "
                            "z forward), unit quaternion w, x, y, z",
             "example": [0.5, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]},
            {"key": STATE, "per_camera": False, "required": True, "dtype": "float32",
             "shape": [8], "layout": [*_POSE, "gripper_width"],
             "description": "end-effector pose in the world frame and the gripper width in "
                            "metres (Panda: 0.08 open, about 0 closed)",
             "example": [0.4, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0, 0.08]},
            {"key": JOINTS, "per_camera": False, "required": False, "dtype": "float32",
             "shape": ["N"], "description": "joint positions (Panda: 7 arm and 2 fingers)"},
            {"key": PROMPT, "per_camera": False, "required": True, "dtype": "str",
             "shape": [], "description": "the instruction",
             "example": prompt_template.replace("{object}", names[0] if names else
                                                "green cube")},
            {"key": SESSION, "per_camera": False, "required": False, "dtype": "str",
             "shape": [], "description": "the same for every request of one episode; a new "
                                         "value starts the policy afresh"},
        ],
        "prompt": {"key": PROMPT, "template": prompt_template, "objects": names},
        "other_keys": "ignored",
    }
