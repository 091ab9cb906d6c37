"""The host's journal writes, batched, and the event log they feed.

A change to a command's record is journaled before anything is said about it: the changed
records are collected (``dirty``) and written together, and the events that tell of them are
staged and let out into the event log (what ``events_since`` reads) only once journaled. A
step journals once at its end; a step that gives way to requests journals its changes a few
records at a time (``FLUSH_CHUNK``), giving way between two writes, because one write of a
hundred records is a third of a millisecond no request could break into. An answer that tells
of a record still in hand journals everything first (:meth:`JournalBatch.reveal`); a new
command's record is journaled alone (:meth:`JournalBatch.flush_own`), so a submit answered in
the middle of a step does not wait for the step's own changes.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable

from harness_bt.ledger import CommandEvent
from runtime_bridge.host.record import RuntimeRecord
from runtime_bridge.host.record_store import RuntimeJournal

__all__ = ["JournalBatch"]


class JournalBatch:
    """See the module docstring. ``log_size``: events kept for ``events_since``."""

    #: records per journal write when a step journals its changes giving way: about 20 us of
    #: writing no request can break into (16 records took 40 us; a write's own cost is 3 us)
    FLUSH_CHUNK = 8

    def __init__(self, journal: RuntimeJournal, *, log_size: int) -> None:
        self.journal = journal
        #: records changed since the last write, by command id
        self.dirty: dict[str, RuntimeRecord] = {}
        #: meta values (epoch, boots) to write with the next records
        self.meta: dict[str, str] = {}
        #: events told of changes not yet journaled
        self.staged: list[CommandEvent] = []
        #: what a step's writes let out (None outside a step)
        self.collected: list[CommandEvent] | None = None
        self._log: deque[tuple[int, CommandEvent]] = deque(maxlen=log_size)
        #: the index of the newest event in the log
        self.log_index = 0

    def stage(self, rec: RuntimeRecord, event: CommandEvent) -> None:
        """``rec`` changed, and ``event`` tells of it."""
        self.dirty[rec.command_id] = rec
        self.staged.append(event)

    def reveal(self, *command_ids: str) -> None:
        """Before an answer tells of these commands: journal what is not yet (a step
        answering between two commands has changes of its own in hand)."""
        if any(cid in self.dirty for cid in command_ids):
            self.flush()

    def flush(self) -> None:
        """Journal the changes, then let the staged events out."""
        if self.dirty or self.meta:
            self.journal.write(list(self.dirty.values()), self.meta)
            self.dirty.clear()
            self.meta = {}
        self._let_out(self.staged)
        if self.collected is not None:
            self.collected += self.staged
        self.staged.clear()

    def flush_own(self, rec: RuntimeRecord, first: int) -> None:
        """Journal a new command's record (and the meta) alone, and let out the events staged
        for it after ``first``: an answer about it needs nothing else journaled. When the
        submit changed another command too (it preempted one), everything in hand is
        journaled."""
        cid = rec.command_id
        own = self.staged[first:]  # an accepted command has none, a refused one its refusal
        if own and any(event.command_id != cid for event in own):
            self.dirty[cid] = rec
            self.flush()
            return
        self.journal.write([rec], self.meta)
        self.meta = {}
        self.dirty.pop(cid, None)
        self._let_out(own)
        del self.staged[first:]

    def flush_in_chunks(self, give_way: Callable[[float], float], since: float) -> None:
        """Journal the changes ``FLUSH_CHUNK`` records per write, calling ``give_way`` between
        two writes (``since``: when the step last gave way). Each record's row is whole in one
        write; the staged events go out afterwards, in :meth:`flush`, once all of them are
        journaled. A failed write leaves its records in hand."""
        while len(self.dirty) > self.FLUSH_CHUNK:
            ids = list(itertools.islice(self.dirty, self.FLUSH_CHUNK))
            self.journal.write([self.dirty[cid] for cid in ids], self.meta)
            self.meta = {}
            for cid in ids:  # only once written
                del self.dirty[cid]
            since = give_way(since)

    def forget(self, command_id: str) -> None:
        """Drop what is in hand about ``command_id`` (a submit that could not be journaled
        never happened)."""
        self.dirty.pop(command_id, None)
        self.staged[:] = [e for e in self.staged if e.command_id != command_id]

    def events_since(self, cursor: int, limit: int) -> tuple[tuple[CommandEvent, ...], int, bool]:
        """Events after ``cursor`` (at most ``limit``), the cursor to read from next, and
        whether events between ``cursor`` and these were dropped from the log."""
        log = self._log
        first = log[0][0] if log else self.log_index + 1
        start = max(0, cursor + 1 - first)  # indices in the log are consecutive
        out = tuple(ev for _, ev in itertools.islice(log, start, start + limit))
        nxt = max(cursor, first - 1) + len(out)
        return out, max(nxt, min(cursor, self.log_index)), cursor + 1 < first

    def _let_out(self, events: list[CommandEvent]) -> None:
        """Append journaled events to the log ``events_since`` reads."""
        for event in events:
            self.log_index += 1
            self._log.append((self.log_index, event))
