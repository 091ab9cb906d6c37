"""Rebuilding a ledger's state from its file: the newest snapshot, then the journal's tail.

Used by :meth:`harness_bt.ledger.Ledger.open`. A snapshot that cannot be used is reported with a
warning and the whole journal is replayed instead, which gives the same state, only slower.
"""

from __future__ import annotations

import gc
import logging

from harness_bt.ledger.lifecycle import Book
from harness_bt.ledger.snapshot import SnapshotMismatch, dump_book, load_book
from harness_bt.ledger.sqlite_store import LedgerJournal

__all__ = ["replay", "save_snapshot"]

log = logging.getLogger(__name__)


def replay(book: Book, journal: LedgerJournal, *, use_snapshot: bool = True) -> int:
    """Fill the empty ``book`` from ``journal``; returns the seq of the last entry applied."""
    # Replay allocates only acyclic objects; pausing the cyclic collector saves the repeated
    # full-heap passes that would otherwise dominate the reopen of a long journal.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        seq = 0
        stored = journal.newest_snapshot() if use_snapshot else None
        if stored is not None:
            try:
                seq, journal.snapshot_chunks = load_book(book, *stored, last_seq=journal.last_seq)
            except SnapshotMismatch as why:
                log.warning("%s: ignoring the ledger snapshot (%s); replaying the whole journal",
                            journal.path, why)
                seq = 0  # load_book left the book untouched
                journal.snapshot_seq = 0  # so that a sound one replaces it (on close at last)
        apply = book.apply
        last = seq
        for last, entry in journal.read(after=seq):  # noqa: B007  (the last one is returned)
            apply(entry)
        return last
    finally:
        if was_enabled:
            gc.enable()


def save_snapshot(book: Book, journal: LedgerJournal, seq: int) -> None:
    """Write a snapshot of ``book`` as it stands after entry ``seq`` (which is on disk)."""
    dump = dump_book(book, seq, journal.snapshot_chunks, journal.next_chunk_id)
    journal.write_snapshot(seq, dump.head, dump.sha256, [cid for cid, _ in dump.chunks],
                           dump.new)
    journal.snapshot_chunks = dump.chunks
