"""The durable command ledger (docs/architecture.md, "The command ledger").

One record per command id. The lifecycle::

    ACCEPTED -> RUNNING -> EVALUATING -> SUCCEEDED | FAILED
    ACCEPTED | RUNNING -> CANCELING -> CANCELED
    CANCELING (stop not confirmed in time) | lost evidence -> UNKNOWN
    UNKNOWN -> RECONCILING -> SUCCEEDED | FAILED | CANCELED | UNKNOWN
    refused at submit or start -> REJECTED

Terminal states (SUCCEEDED, FAILED, CANCELED, REJECTED) never regress. The same id with the
same content returns the original record (its start budget is never refreshed); the same id
with other content is COMMAND_ID_CONFLICT. A resource is held from ACCEPTED until terminal,
UNKNOWN included. Runtime events are applied at most once per sequence number.
"""

from harness_bt.ledger.command import SCHEMA_VERSION, Command, CommandEvent
from harness_bt.ledger.errors import LedgerCode, LedgerError
from harness_bt.ledger.ledger import Ledger, LedgerListener, PremiseCheck
from harness_bt.ledger.record import CommandRecord, HistoryEntry
from harness_bt.ledger.states import ACTIVE, TERMINAL, CommandState, EventKind, Verdict
from harness_bt.ledger.table import ledger_table

__all__ = [
    "ACTIVE",
    "SCHEMA_VERSION",
    "TERMINAL",
    "Command",
    "CommandEvent",
    "CommandRecord",
    "CommandState",
    "EventKind",
    "HistoryEntry",
    "Ledger",
    "LedgerCode",
    "LedgerError",
    "LedgerListener",
    "PremiseCheck",
    "Verdict",
    "ledger_table",
]
