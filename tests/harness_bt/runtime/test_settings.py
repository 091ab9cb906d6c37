"""A run's runtime settings are typed: an unknown name or a bad value is refused at once, with
what is known and what to write."""

from __future__ import annotations

import math

import pytest

from harness_bt.errors import DefinitionError
from harness_bt.runtime.episodes import RunOptions
from harness_bt.runtime.settings import RuntimeSettings


def test_settings_from_a_mapping_are_typed_and_given_back_by_name() -> None:
    settings = RuntimeSettings.from_mapping({"num_steps": 300, "cameras": "front,left",
                                             "telemetry": "tcp://127.0.0.1:5556"})
    assert settings.num_steps == 300 and settings.cameras == ("front", "left")
    assert settings.given() == {"num_steps": 300, "cameras": ("front", "left"),
                                "telemetry": "tcp://127.0.0.1:5556"}
    assert RunOptions(task="t").runtime_settings.given() == {}


def test_an_unknown_setting_is_refused_with_the_known_ones() -> None:
    with pytest.raises(DefinitionError, match=r"UNKNOWN_RUNTIME_SETTING: runtime settings: no "
                       r"runtime setting 'num_step'; known: .*num_steps.*did you mean "
                       r"'num_steps'"):
        RuntimeSettings.from_mapping({"num_step": 300})


@pytest.mark.parametrize(("name", "value", "message"), [
    ("num_steps", -1, r"num_steps=-1 must be a whole number >= 0"),
    ("num_steps", 2.5, r"num_steps=2.5 must be a whole number >= 0"),
    ("num_steps", True, r"num_steps=True must be a whole number >= 0"),
    ("frame_hz", math.inf, r"frame_hz=inf must be a finite number >= 0"),
    ("tick_s", "fast", r"tick_s='fast' must be a finite number >= 0"),
    ("service", 3, r"service=3 must be text"),
    ("keep_world", "yes", r"keep_world='yes' must be true or false"),
])
def test_a_bad_value_is_refused_naming_the_setting(name: str, value: object, message: str
                                                   ) -> None:
    with pytest.raises(DefinitionError, match=r"INVALID_RUNTIME_SETTING: runtime setting "
                       + message):
        RuntimeSettings.from_mapping({name: value})


def test_every_setting_has_its_kind_checked() -> None:
    from harness_bt.runtime import settings

    kinds = [settings._WHOLE, settings._NUMBERS, settings._TEXT, settings._FLAGS,
             frozenset({"cameras"})]
    assert sorted(n for k in kinds for n in k) == sorted(RuntimeSettings.names())
