"""PyBullet's native chatter (``pybullet build time``, ``argv[0]=``) never reaches the
terminal: it is discarded at the file-descriptor level around the import and each connect,
and the descriptors are always put back."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runtime_bridge.sim.native import quiet_native
from tests.conftest import ENV


def test_importing_and_connecting_pybullet_prints_nothing() -> None:
    code = ("import runtime_bridge.sim.native as n\n"
            "c = n.connect_direct(); c.disconnect()\n"
            "print('after')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=120, check=True)
    assert (done.stdout, done.stderr) == ("after\n", "")


def test_a_built_world_prints_nothing_on_either_stream() -> None:
    code = ("from runtime_bridge.sim import SimConfig, SimEnv\n"
            "with SimEnv(SimConfig(cameras=())) as env:\n"
            "    env.reset()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=120, check=True)
    assert (done.stdout, done.stderr) == ("", "")


def test_the_descriptors_are_restored_after_the_block_and_after_an_error(
        capfd: pytest.CaptureFixture[str]) -> None:
    with quiet_native():
        os.write(1, b"lost 1\n")
        os.write(2, b"lost 2\n")
    os.write(1, b"kept 1\n")
    with pytest.raises(RuntimeError), quiet_native():
        raise RuntimeError("inside")
    os.write(2, b"kept 2\n")
    assert capfd.readouterr() == ("kept 1\n", "kept 2\n")
