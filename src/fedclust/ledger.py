"""Backward-compatible alias: the ledger now lives in :mod:`fedclust.federation.ledger`."""

from fedclust.errors import DisclosureError
from fedclust.federation.ledger import (
    KINDS,
    Ledger,
    Message,
    Protocol,
    abstention_summary,
    check_disclosure,
)

__all__ = [
    "KINDS",
    "DisclosureError",
    "Ledger",
    "Message",
    "Protocol",
    "abstention_summary",
    "check_disclosure",
]
