"""The shared-memory segment, the server's sessions and the client's checked reading of a
descriptor: round trips, the ring, stale and torn reads, hostile descriptors, cleanup."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from harness_bt.errors import BridgeError
from runtime_bridge.genmanip.errors import HttpError
from runtime_bridge.genmanip.shm import ShmConfig, ShmReader, ShmSessions, clean_stale
from runtime_bridge.genmanip.shm.segment import HEADER_BYTES, MAGIC, WritableSegment
from tests.runtime_bridge.genmanip.conftest import SHM_DIR, segments
from tests.runtime_bridge.genmanip.test_codec import assert_same, trees


def payload(value: int, side: int = 8) -> dict[str, Any]:
    return {"0": {"obs": {"rgb": np.full((side, side, 3), value, np.uint8),
                          "depth": np.full((side, side), value / 10, np.float32),
                          "joints": np.arange(9.0) + value, "timestep": value},
                  "metric": None}}


class Session:
    """One session seen from both ends: the server's sessions and the client's reader."""

    def __init__(self, config: ShmConfig, *, copy: bool = True) -> None:
        self.sessions = ShmSessions(config)
        info = self.sessions.open()
        self.name = info["segment"]
        self.reader = ShmReader(config.directory, self.name, copy=copy)
        self.claim = f"{info['session']}.{self.reader.token().hex()}"

    def send(self, value: Any) -> bytes:
        body, status = self.sessions.encode(self.claim, value)
        assert status == "ok" and body is not None
        return body

    def close(self) -> None:
        self.reader.close()
        self.sessions.close()


@pytest.fixture
def session(shm_config: ShmConfig) -> Iterator[Session]:
    s = Session(shm_config)
    yield s
    s.close()


@pytest.fixture
def view_session(shm_config: ShmConfig) -> Iterator[Session]:
    s = Session(shm_config, copy=False)
    yield s
    s.close()


def test_arrays_round_trip_through_the_segment_as_private_copies(session: Session) -> None:
    out = session.reader.read(session.send(payload(7)))
    assert_same(out, payload(7))
    rgb = out["0"]["obs"]["rgb"]
    assert not rgb.flags.writeable
    assert not np.shares_memory(rgb, np.frombuffer(session.reader.segment.buffer, np.uint8))


# one session for every example on purpose: the ring wraps and the slots grow along the way
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees)
def test_any_tree_round_trips(session: Session, tree: object) -> None:
    assert_same(session.reader.read(session.send(tree)), tree)


def test_views_stay_valid_for_the_ring_then_the_old_descriptor_is_stale(
        view_session: Session) -> None:
    s = view_session
    first = s.send(payload(1))
    view = s.reader.read(first)["0"]["obs"]["rgb"]
    assert not view.flags.writeable
    for value in (2, 3):  # slots=3: two more answers leave slot 0 alone
        s.reader.read(s.send(payload(value)))
    assert (view == 1).all()
    s.reader.read(first)  # still the same generation
    s.send(payload(4))  # slot 0 again
    assert (view == 4).all()  # a view follows its slot: that is what the ring bounds
    with pytest.raises(HttpError, match=r"SHM_STALE: .*slot 0 holds generation 8, the "
                       r"descriptor names 2") as info:
        s.reader.read(first)
    assert info.value.code == "SHM_STALE"


def test_a_slot_rewritten_while_it_is_copied_is_refused_as_torn(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    body = session.send(payload(1))
    real_copy = ShmReader._copy

    def copy_while_the_server_writes(self: ShmReader, start: int, nbytes: int) -> bytes:
        data = real_copy(self, start, nbytes)
        for value in (2, 3, 4):  # the ring wraps onto the slot being read
            session.send(payload(value))
        return data

    monkeypatch.setattr(ShmReader, "_copy", copy_while_the_server_writes)
    with pytest.raises(HttpError, match=r"SHM_TORN: .*slot 0 holds generation 8, the "
                       r"descriptor names 2 while it was copied; the copy is refused"):
        session.reader.read(body)


def test_a_slot_being_written_is_not_read(session: Session) -> None:
    body = session.send(payload(1))
    segment = session.sessions._sessions[session.claim.split(".")[0]].segment
    segment._map[HEADER_BYTES:HEADER_BYTES + 8] = (3).to_bytes(8, "little")  # odd: writing
    with pytest.raises(HttpError, match=r"SHM_STALE: .*generation 3 \(being written\)"):
        session.reader.read(body)


def test_growing_the_slots_makes_older_descriptors_stale_and_newer_ones_readable(
        session: Session) -> None:
    small = session.send(payload(1, side=4))
    size_before = len(session.reader.segment)
    big = session.send(payload(2, side=256))
    assert_same(session.reader.read(big), payload(2, side=256))
    assert len(session.reader.segment) > size_before  # remapped after the server grew it
    with pytest.raises(HttpError, match=r"SHM_STALE: .*layout 2 is not the segment's current "
                       r"layout 4 \(the slots grew\)"):
        session.reader.read(small)


def test_a_payload_over_the_segment_limit_is_sent_another_way(shm_config: ShmConfig) -> None:
    config = ShmConfig(prefix=shm_config.prefix, slots=2, max_segment_bytes=64 * 1024)
    s = Session(config)
    try:
        assert s.sessions.encode(s.claim, payload(1, side=4))[1] == "ok"
        assert s.sessions.encode(s.claim, payload(1, side=256)) == (None, "too-large")
    finally:
        s.close()


@pytest.mark.parametrize("claim", [None, "", "nosuch.00", "x", "a.b.c", "{sid}.zz",
                                   "{sid}.00112233445566778899aabbccddeeff"])
def test_only_a_client_that_read_the_token_is_answered_through_shared_memory(
        session: Session, claim: str | None) -> None:
    sid = session.claim.split(".")[0]
    claim = claim.format(sid=sid) if claim else claim
    assert session.sessions.encode(claim, payload(1)) == (None, "unknown-session")


def descriptor(session: Session) -> dict[str, Any]:
    return pickle.loads(session.send(payload(5)))  # trusted: made by our own server here


def rgb_dict(desc: dict[str, Any]) -> dict[str, Any]:
    return desc["tree"]["0"]["obs"]["rgb"]


HOSTILE = [
    (lambda d: d.update(segment="../../etc/passwd"), "SHM_BAD_DESCRIPTOR",
     r"segment name '../../etc/passwd' is not a plain name"),
    (lambda d: d.update(segment="hbt-1-other"), "SHM_BAD_DESCRIPTOR",
     r"segment 'hbt-1-other' is not this session's"),
    (lambda d: d.update(slot=3), "SHM_BAD_DESCRIPTOR", r"slot 3 is out of range; the segment "
     r"has 3"),
    (lambda d: d.update(slot=-1), "SHM_BAD_DESCRIPTOR", r"'slot' is -1, expected a non-negative"),
    (lambda d: d.update(slot=True), "SHM_BAD_DESCRIPTOR", r"'slot' is True"),
    (lambda d: d.update(used=1 << 40), "SHM_BAD_DESCRIPTOR", r"do not fit a slot of"),
    (lambda d: d.update(buffers=[(1 << 30, 16), *d["buffers"][1:]]), "SHM_BAD_DESCRIPTOR",
     r"buffer 0 at offset 1073741824 of 16 bytes ends past the \d+ bytes used"),
    (lambda d: d.update(buffers=[(0, -5)]), "SHM_BAD_DESCRIPTOR", r"buffer 0 is \(0, -5\)"),
    (lambda d: d.update(buffers="all"), "SHM_BAD_DESCRIPTOR", r"'buffers' is 'all'"),
    (lambda d: d.update(generation=0), "SHM_BAD_DESCRIPTOR", r"generation 0 is not"),
    (lambda d: d.update(generation=3), "SHM_BAD_DESCRIPTOR", r"generation 3 is not"),
    (lambda d: d.update(generation=200), "SHM_STALE", r"the descriptor names 200"),
    (lambda d: d.update(layout=7), "SHM_STALE", r"layout 7 is not the segment's current"),
    (lambda d: d.update(size=1 << 40), "SHM_STALE", r"the descriptor needs 1099511627776"),
    (lambda d: d.pop("tree"), "SHM_BAD_DESCRIPTOR", r"expected a dict with segment"),
    (lambda d: rgb_dict(d).update(dtype="object"), "BAD_ARRAY", r"dtype 'object' is not allowed"),
    (lambda d: rgb_dict(d).update(shape=(9, 9, 3)), "BAD_ARRAY",
     r"buffer 0 has 192 bytes, shape \(9, 9, 3\) of uint8 needs 243"),
    (lambda d: rgb_dict(d).update(shape=(-1, 8, 3)), "BAD_ARRAY", r"non-negative ints"),
    (lambda d: rgb_dict(d).update(index=99), "BAD_ARRAY", r"buffer index 99 does not name"),
]


@pytest.mark.parametrize(("mutate", "code", "match"), HOSTILE)
def test_hostile_descriptors_are_refused_with_a_reason(session: Session, mutate: Any, code: str,
                                                       match: str) -> None:
    desc = descriptor(session)
    mutate(desc)
    with pytest.raises(HttpError, match=match) as info:
        session.reader.read(pickle.dumps(desc, protocol=5))
    assert info.value.code == code


def test_a_descriptor_that_is_not_builtins_is_refused(session: Session) -> None:
    with pytest.raises(HttpError, match=r"refers to the global posix\.system") as info:
        session.reader.read(pickle.dumps(os.system, protocol=5))
    assert info.value.code == "PICKLE_GLOBAL_REFUSED"


def test_a_missing_segment_or_a_symlink_cannot_be_mapped(shm_config: ShmConfig,
                                                         tmp_path: Any) -> None:
    with pytest.raises(HttpError, match=r"SHM_UNAVAILABLE: .*cannot open \(No such file"):
        ShmReader(SHM_DIR, f"{shm_config.prefix}-1-gone")
    (tmp_path / "target").write_bytes(MAGIC + bytes(HEADER_BYTES))
    os.symlink(tmp_path / "target", tmp_path / "link")
    with pytest.raises(HttpError, match=r"SHM_UNAVAILABLE: .*cannot open"):
        ShmReader(str(tmp_path), "link")
    for name, content in (("short", b"HBT"), ("empty", b""), ("other", bytes(HEADER_BYTES))):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(HttpError, match=r"smaller than its header|not a harness-bt segment"):
            ShmReader(str(tmp_path), name)
    os.mkdir(tmp_path / "dir")
    with pytest.raises(HttpError, match=r"SHM_UNAVAILABLE: .*(not a regular file|cannot open)"):
        ShmReader(str(tmp_path), "dir")


def test_closing_unlinks_every_segment_and_the_oldest_session_goes_beyond_the_limit(
        shm_config: ShmConfig) -> None:
    sessions = ShmSessions(shm_config)
    first = sessions.open()["segment"]
    opened = [sessions.open()["segment"] for _ in range(shm_config.max_sessions)]
    assert first not in segments(shm_config.prefix)  # evicted and unlinked
    assert segments(shm_config.prefix) == sorted(opened) == sorted(sessions.names())
    sessions.close()
    assert segments(shm_config.prefix) == []
    sessions.close()  # idempotent


def test_a_released_session_is_unlinked_and_answers_no_more(session: Session) -> None:
    assert session.sessions.release(session.claim)
    assert segments(session.sessions.config.prefix) == []
    assert session.sessions.encode(session.claim, payload(1)) == (None, "unknown-session")
    assert not session.sessions.release(session.claim)


def test_stale_segments_of_a_dead_process_are_removed_when_a_server_starts(
        shm_config: ShmConfig) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    prefix = shm_config.prefix
    crashed = WritableSegment(SHM_DIR, f"{prefix}-{dead_pid}-00aa", 2, bytes(16))
    crashed._fd, fd = -1, crashed._fd  # as after a crash: the file stays
    os.close(fd)
    crashed.close()
    mine = WritableSegment(SHM_DIR, f"{prefix}-{os.getpid()}-00bb", 2, bytes(16))  # live
    alive = f"{prefix}-{os.getppid()}-00cc"  # another live process's: not ours to remove
    foreign = f"{prefix}-{dead_pid}-00dd"  # the prefix, but not a harness-bt segment
    for name, content in ((alive, MAGIC + bytes(64)), (foreign, b"someone else's")):
        with open(os.path.join(SHM_DIR, name), "wb") as f:
            f.write(content)
    try:
        assert ShmSessions(shm_config).start() == [f"{prefix}-{dead_pid}-00aa"]
        assert segments(prefix) == sorted([mine.name, alive, foreign])
        mine._fd, fd = -1, mine._fd  # this process's, no longer live: stale as well
        os.close(fd)
        mine.close()
        assert clean_stale(SHM_DIR, prefix) == [mine.name]
    finally:
        for name in (alive, foreign, mine.name):
            if os.path.exists(os.path.join(SHM_DIR, name)):
                os.unlink(os.path.join(SHM_DIR, name))


def test_a_prefix_with_a_separator_is_refused() -> None:
    with pytest.raises(BridgeError, match=r"shm prefix 'a-b' must match"):
        ShmConfig(prefix="a-b")


def test_arrays_over_the_clients_response_limit_are_refused(session: Session) -> None:
    with pytest.raises(HttpError, match=r"BODY_TOO_LARGE: .*bytes of arrays, over the limit of "
                       r"1000 bytes"):
        session.reader.read(session.send(payload(1, side=32)), max_bytes=1000)
