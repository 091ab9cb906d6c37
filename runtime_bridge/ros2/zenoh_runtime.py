"""``open_runtime``: the ``harness_bt.bridges`` entry point ``zenoh`` (``harness run --runtime
zenoh://[HOST:PORT][?domain=N]``): the ROS 2 runtime (:class:`~runtime_bridge.ros2.runtime.
Ros2Runtime`, the same bridge, action protocol and observations) over a Zenoh session that
follows rmw_zenoh's conventions (:mod:`runtime_bridge.ros2.zenoh_transport`).

``HOST:PORT`` is the Zenoh endpoint to connect to, ``tcp/HOST:PORT``: a robot's Zenoh router
(rmw_zenoh's ``rmw_zenohd``), a ``harness sim serve --ros2 --zenoh ENDPOINT``, or any peer
that routes to the robot; without it ``tcp/127.0.0.1:7447`` (rmw_zenoh's default router
address). The session listens on a free loopback port only and does no multicast scouting.
``domain`` is the ROS 2 domain id (the first chunk of every key expression), else
``ROS_DOMAIN_ID``, else 0. The URL takes the ``ros2://`` URL's settings too (``mapping``,
``cameras``, ``connect_timeout_s``, ``max_age_s``, ``tick_s``).
"""

from __future__ import annotations

import os

from harness_bt.errors import DefinitionError
from harness_bt.runtime.episodes import RunOptions
from runtime_bridge.ros2.runtime import URL_SETTINGS, Ros2Runtime, runtime_settings
from runtime_bridge.ros2.zenoh_transport import DEFAULT_ENDPOINT, ZenohEndpoints, ZenohSession

__all__ = ["open_runtime", "parse_zenoh_url"]

_FIX = "write zenoh://127.0.0.1:7447 or zenoh://robot.local:7447?domain=7"


def parse_zenoh_url(url: str) -> tuple[str, int, dict[str, str]]:
    """The endpoint, the domain id and the settings of ``zenoh://[HOST:PORT][?domain=N&...]``."""
    if not url.startswith("zenoh://"):
        raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r} is not "
                              "zenoh://[HOST:PORT][?domain=N]", where=url, fix=_FIX)
    rest, _, query = url[len("zenoh://"):].partition("?")
    rest = rest.strip("/")
    endpoint = DEFAULT_ENDPOINT
    if rest:
        host, sep, port = rest.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r}: {rest!r} is not "
                                  "HOST:PORT (a port from 1 to 65535)", where=url, fix=_FIX)
        endpoint = f"tcp/{host}:{int(port)}"
    domain_text = os.environ.get("ROS_DOMAIN_ID", "0") or "0"
    settings: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        name, sep, value = item.partition("=")
        if sep and name == "domain":
            domain_text = value
            continue
        if not sep or name not in URL_SETTINGS:
            raise DefinitionError("INVALID_RUNTIME_URL", f"--runtime {url!r}: {item!r} is not "
                                  f"NAME=VALUE with NAME one of domain, "
                                  f"{', '.join(URL_SETTINGS)}", where=url, fix=_FIX)
        settings[name] = value
    if not domain_text.isdigit() or not 0 <= int(domain_text) <= 232:
        raise DefinitionError("INVALID_DOMAIN", f"--runtime {url!r}: domain {domain_text!r} is "
                              "not a ROS_DOMAIN_ID (0..232)", where=url,
                              fix="write ?domain=0 .. ?domain=232")
    return endpoint, int(domain_text), settings


def open_runtime(options: RunOptions) -> Ros2Runtime:
    """The ROS 2 robot reached over Zenoh at ``options.runtime_url`` (the module docstring)."""
    url = options.runtime_url or "zenoh://"
    endpoint, domain, given = parse_zenoh_url(url)
    canonical = f"zenoh://{endpoint.removeprefix('tcp/')}?domain={domain}"
    settings = runtime_settings(canonical, given, options, unreachable_fix=(
        f"start one (harness sim serve --ros2 --zenoh {endpoint}), check the endpoint and the "
        "domain, or fix the mapping's names"))
    endpoints = ZenohEndpoints(connect=(endpoint,), node="harness_bridge")
    return Ros2Runtime(lambda types: ZenohSession(domain, types, endpoints), settings)
