"""The federation core: the privacy boundary (:mod:`.ledger`), Flower-shaped strategies
(:mod:`.strategy`) and the one round loop with a ledger-transport client proxy (:mod:`.engine`).
"""

from fedclust.errors import DisclosureError

from .ledger import KINDS, Ledger, Message, Protocol, abstention_summary, check_disclosure

__all__ = [
    "KINDS",
    "DisclosureError",
    "Ledger",
    "Message",
    "Protocol",
    "abstention_summary",
    "check_disclosure",
]
