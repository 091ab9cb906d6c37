"""The observation spec in the policy server's metadata: a request built from the spec alone
is accepted by the parser the policies use, and without any key the spec calls required it is
refused (the spec and the parser cannot drift apart); pick's spec asks for depth and names
the objects its perception knows; a policy server names its policy by default."""

from __future__ import annotations

import numpy as np
import pytest

from harness_bt.errors import CommandError, DefinitionError
from policies.registry import (
    DEFAULT_POLICY,
    PolicyKind,
    PolicySettings,
    default_policy,
    policy_metadata,
    policy_registry,
)
from policies.request import parse_request
from policies.scripted import PICK
from policies.spec import SPEC_FORMAT, observation_spec
from tests.policies.spec_client import build


def test_a_request_built_from_the_spec_alone_is_accepted() -> None:
    spec = observation_spec()
    request = build(spec)
    assert sorted(request) == ["observation/camera_pose/front", "observation/image/front",
                               "observation/intrinsics/front", "observation/state", "prompt"]
    parsed = parse_request(request)
    assert list(parsed.observation.cameras) == ["front"]
    assert parsed.observation.cameras["front"].rgb.shape == (192, 256, 3)  # type: ignore[union-attr]
    assert parsed.prompt == "pick up the green cube" and parsed.gripper_width == \
        pytest.approx(0.08)


@pytest.mark.parametrize("key", ["observation/image/front", "observation/intrinsics/front",
                                 "observation/camera_pose/front", "observation/state",
                                 "prompt"])
def test_a_request_without_a_key_the_spec_requires_is_refused(key: str) -> None:
    request = build(observation_spec())
    del request[key]
    with pytest.raises(CommandError, match="POLICY_BAD_OBSERVATION"):
        parse_request(request)


def test_every_dtype_and_shape_of_the_spec_is_what_the_parser_checks() -> None:
    spec = observation_spec(depth_required=True)
    request = build(spec)
    assert request["observation/depth/front"].dtype == np.float32
    assert request["observation/depth/front"].shape == (192, 256)
    for entry in spec["keys"]:
        if entry["dtype"] == "str" or not entry["required"]:
            continue
        key = entry["key"].replace("{camera}", "front")
        wrong = dict(request)
        wrong[key] = request[key].astype(np.float32 if request[key].dtype == np.uint8
                                         else np.uint8)[..., :1]  # wrong dtype and shape
        with pytest.raises(CommandError, match=key):
            parse_request(wrong)


def test_pick_s_metadata_carries_its_spec_with_depth_and_the_objects_it_knows() -> None:
    factory = PICK.build(PolicySettings())
    meta = policy_metadata("pick", PICK, PolicySettings(), factory)
    spec = meta["observation_spec"]
    assert spec["format"] == SPEC_FORMAT
    required = {e["key"] for e in spec["keys"] if e["required"]}
    assert required == {"observation/image/{camera}", "observation/depth/{camera}",
                        "observation/intrinsics/{camera}", "observation/camera_pose/{camera}",
                        "observation/state", "prompt"}
    assert spec["prompt"]["objects"] == sorted(factory.objects.values())
    assert "green cube" in spec["prompt"]["objects"]
    example = next(e["example"] for e in spec["keys"] if e["key"] == "prompt")
    assert example == f"pick up the {spec['prompt']['objects'][0]}"
    assert policy_metadata("pick", PICK, PolicySettings())["observation_spec"] == \
        observation_spec()  # no factory: the format every built-in policy reads


def test_without_a_policy_named_the_default_or_the_only_one_is_served() -> None:
    assert default_policy(policy_registry(entry_points=True)) == DEFAULT_POLICY == "pick"
    alone = policy_registry(entry_points=False)
    alone.register("wave", PolicyKind("waves", PICK.build))
    assert default_policy(alone) == "wave"
    alone.register("nod", PolicyKind("nods", PICK.build))
    with pytest.raises(DefinitionError, match=r"NO_DEFAULT_POLICY: no --policy given, and the "
                       r"default 'pick' is not installed; installed: nod, wave"):
        default_policy(alone)
