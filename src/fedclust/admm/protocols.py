"""The messages of federated ADMM (seed 003 §2.3, D6.2 Algorithm 2) and which centre may send
them (:func:`takes_part`): declared once, below the in-process reference (:mod:`.data`) and the
federated run (:mod:`.admm`)."""

from __future__ import annotations

from ..federation import Protocol
from ..federation.disclosure import DisclosurePolicy
from ..privacy.centre import glm_floor

#: round 0: a centre's moments (n, column sums and sums of squares; nothing row-level) and the
#: pooled mean / SD the in-process reference sends back
STANDARDIZE = Protocol("admm_standardize", {"n": "count", "sum": "aggregate", "sumsq": "aggregate"})
STANDARDIZE_GLOBAL = Protocol(
    "admm_standardize_global",
    {"mean": "aggregate", "sd": "aggregate", "y_mean": "aggregate", "y_sd": "aggregate"},
)
LOCAL_UPDATE = Protocol(
    "admm_local_update", {"x": "parameters", "w": "aggregate", "n": "count"}, glm=True
)
CONSENSUS = Protocol("admm_consensus", {"z": "parameters"})
OBJECTIVE = Protocol("admm_objective", {"loss": "aggregate", "n": "count"})
#: the privatised iteration (privacy–utility stage, issue 24): a centre's clipped, noised
#: x_{i,k+1} + w_{i,k} (all the z-update needs), summed under secure aggregation; the centre
#: then only acknowledges z_{k+1} (its loss at z is not released: it is not privatised)
PRIVATE_UPDATE = Protocol(
    "admm_private_update", {"v": "parameters", "n": "count"}, glm=True, summed=True
)
CONSENSUS_ACK = Protocol("admm_consensus_ack", {"n": "count"})
#: round 0 after the moments: the pooled mean / SD (standardising) and N_total (the loss
#: weight 1/N_total), from the centres' messages only; the centre acknowledges with n_i
DESIGN = Protocol(
    "admm_design",
    {"mean": "aggregate", "sd": "aggregate", "y_mean": "aggregate", "y_sd": "aggregate",
     "n_total": "count"},
)  # fmt: skip
DESIGN_ACK = Protocol("admm_design_ack", {"n": "count"})
#: requests that carry nothing: the centre answers from its own rows and state
MOMENTS_REQUEST = Protocol("admm_standardize_request", {})
LOCAL_REQUEST = Protocol("admm_local_update_request", {})
#: the stage's own run (the private iteration's two are the privacy–utility stage's)
PROTOCOLS = (
    MOMENTS_REQUEST, STANDARDIZE, DESIGN, DESIGN_ACK, LOCAL_REQUEST, LOCAL_UPDATE, CONSENSUS,
    OBJECTIVE,
)  # fmt: skip


def takes_part(policy: DisclosurePolicy, n: int, d: int, min_samples: int = 1) -> bool:
    """Whether a center of ``n`` rows may release a ``d``-parameter model (the centre's GLM
    floor, issue 22; :mod:`.admm`)."""
    return int(n) >= glm_floor(policy, int(d), int(min_samples))
