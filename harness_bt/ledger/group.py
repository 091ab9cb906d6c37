"""The journal side of the :class:`~harness_bt.ledger.Ledger`: group commit, flushing, snapshots
and closing.

Outside a group every ledger call commits its journal entries before it returns. Inside
:meth:`GroupCommit.group` (the runner opens one per tick) the calls take effect in memory and
reach the listeners at once, and their entries are committed together when :meth:`flush` is
called or the outermost group ends. The rule that keeps this crash-safe: flush before anything
outside acts on an entry (a command sent to a runtime, a stop requested of it). Then every
acknowledged effect is on disk, and a crash loses only entries that nothing acted on; a
restarted harness re-derives the same command ids and finds them absent, never half-done.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any, Self

from harness_bt.ledger.lifecycle import Book
from harness_bt.ledger.recovery import save_snapshot
from harness_bt.ledger.sqlite_store import LedgerJournal

__all__ = ["GroupCommit"]


class _Group:
    """:meth:`GroupCommit.group`'s context (a plain class: a generator-based context manager
    costs several times as much, once per tick)."""

    __slots__ = ("_ledger",)

    def __init__(self, ledger: GroupCommit) -> None:
        self._ledger = ledger

    def __enter__(self) -> Any:
        ledger = self._ledger
        journal = ledger._journal
        if journal is not None:
            with ledger._lock:
                journal.hold()
        return ledger

    def __exit__(self, *exc: object) -> None:
        ledger = self._ledger
        journal = ledger._journal
        if journal is not None:
            with ledger._lock:
                journal.release()
                ledger._after_write()


class GroupCommit:
    """Mixed into :class:`~harness_bt.ledger.Ledger`; it owns these attributes."""

    _journal: LedgerJournal | None
    _lock: threading.RLock
    _book: Book
    _seq: int
    _closed: bool
    snapshot_every: int | None

    def close(self) -> None:
        """Flush, write a snapshot (when entries came after the last one) and close the
        journal. Further calls raise ``LEDGER_CLOSED``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            journal = self._journal
            if journal is not None:
                try:
                    if journal.failed is None:
                        journal.flush()
                        if journal.last_seq > journal.snapshot_seq:
                            save_snapshot(self._book, journal, self._seq)
                finally:
                    journal.close()

    def group(self) -> AbstractContextManager[Self]:
        """Commit the journal entries of the calls inside together (one tick's), at the end.

        Calls take effect in memory and reach the listeners at once; they are durable once
        :meth:`flush` or the end of the outermost group returns. Call :meth:`flush` before
        anything outside may act on them (a command sent to a runtime, a stop requested): an
        acknowledged effect is then always on disk, and a crash loses only entries nothing
        acted on. Groups nest; an in-memory ledger ignores them."""
        return _Group(self)

    def flush(self) -> int:
        """Commit the entries held by an open group; returns :attr:`durable_seq`."""
        with self._lock:
            if self._journal is None:
                return self._seq
            self._journal.flush()
            self._after_write()
            return self._journal.last_seq

    @property
    def durable_seq(self) -> int:
        """The newest journal seq on disk (in memory: the newest seq)."""
        return self._seq if self._journal is None else self._journal.last_seq

    def _after_write(self) -> None:
        """Write a snapshot when ``snapshot_every`` entries are on disk since the last one."""
        journal = self._journal
        if (journal is not None and self.snapshot_every is not None and not journal.pending
                and journal.last_seq - journal.snapshot_seq >= self.snapshot_every):
            save_snapshot(self._book, journal, journal.last_seq)
