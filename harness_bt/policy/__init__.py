"""Learned policies in the loop: the openpi WebSocket policy protocol (wire format, client,
server) and the policy skills built on it."""

from harness_bt.policy.client import PolicyClient
from harness_bt.policy.wire import pack, unpack, unpack_map

__all__ = ["PolicyClient", "pack", "unpack", "unpack_map"]
