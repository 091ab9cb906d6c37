"""The exported names of the GenManip and simulator packages are pinned."""

from __future__ import annotations

import runtime_bridge.genmanip as genmanip
import runtime_bridge.genmanip.shm as shm
import runtime_bridge.sim as sim


def test_genmanip_exports() -> None:
    assert sorted(genmanip.__all__) == [
        "ActionError", "AppSettings", "ControlType", "GenManipBackend", "GenManipClient",
        "GenManipEmbodiment", "HttpError", "ServerThread", "ShmConfig", "StepOutcomeUnknown",
        "Timeouts",
        "ValidatedAction", "WorkerEnv", "WorkerResult", "create_app", "make_backend",
        "observation_from_wire", "observation_to_wire", "validate_action",
    ]
    assert all(hasattr(genmanip, name) for name in genmanip.__all__)


def test_shm_exports() -> None:
    assert sorted(shm.__all__) == ["ShmConfig", "ShmLink", "ShmReader", "ShmSessions",
                                   "clean_stale"]
    assert all(hasattr(shm, name) for name in shm.__all__)


def test_sim_exports() -> None:
    assert sorted(sim.__all__) == [
        "CameraSpec", "EpisodeBook", "FaultRates", "ScriptedPicker", "SimBackend", "SimConfig",
        "SimEnv", "SimScene", "create_sim_app", "load_sim_scenes", "make_backend",
        "parse_camera_spec",
    ]
    assert all(hasattr(sim, name) for name in sim.__all__)
