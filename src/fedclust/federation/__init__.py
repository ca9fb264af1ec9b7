"""The federation core: the privacy boundary (:mod:`.ledger`), Flower-shaped strategies
(:mod:`.strategy`) and the one round loop with a ledger-transport client proxy (:mod:`.engine`);
secure aggregation (:mod:`.secagg`) and differential privacy (:mod:`.dp`, :mod:`.privacy`).
"""

from fedclust.errors import DisclosureError

from .engine import (
    Abstain,
    EveryCentreAbstained,
    History,
    LedgerClientProxy,
    RoundLog,
    call_all,
    fit_all,
    fit_protocol,
    run_rounds,
)
from .faults import CentreLost, Dropouts
from .ledger import (
    KINDS,
    Ledger,
    Message,
    Protocol,
    abstention_summary,
    check_disclosure,
    declared_protocols,
    declares,
)
from .privacy import PrivacySettings, secure_sum
from .strategy import (
    STRATEGIES,
    FedAdam,
    FedAvg,
    FedOpt,
    FedYogi,
    PublishedAverage,
    Strategy,
    aggregate,
    ave_weights_published,
    make_strategy,
    weighted_average,
)
from .transport import INPROCESS, TRANSPORTS, InProcess, Transport, centre_id, federate

__all__ = [
    "declared_protocols",
    "declares",
    "KINDS",
    "STRATEGIES",
    "Abstain",
    "CentreLost",
    "DisclosureError",
    "Dropouts",
    "FedAdam",
    "FedAvg",
    "FedOpt",
    "FedYogi",
    "INPROCESS",
    "InProcess",
    "TRANSPORTS",
    "Transport",
    "centre_id",
    "federate",
    "History",
    "Ledger",
    "LedgerClientProxy",
    "Message",
    "Protocol",
    "PrivacySettings",
    "PublishedAverage",
    "RoundLog",
    "Strategy",
    "abstention_summary",
    "aggregate",
    "ave_weights_published",
    "call_all",
    "check_disclosure",
    "fit_all",
    "fit_protocol",
    "make_strategy",
    "EveryCentreAbstained",
    "run_rounds",
    "secure_sum",
    "weighted_average",
]
