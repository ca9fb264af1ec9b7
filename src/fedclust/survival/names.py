"""Scenario and strategy names of the survival stage.

Kept free of heavy imports: ``rules/survival.smk`` reads them (via :mod:`.workflow`) when
Snakemake parses the workflow, which used to import torch and scikit-learn (~3 CPU-s per parse).
"""

SCENARIOS = ("iid_balanced", "iid_unbalanced", "noniid_time", "noniid_bm_blast")
STRATEGIES = (
    "sequential", "weights_averaging", "ensemble", "isolated", "centralized", "centralized_steps",
)  # fmt: skip
#: the upper bounds (pooled data, no scenario): ``centralized`` = one centre holding every
#: training patient (a centre's optimiser path: ``batches`` minibatches per epoch);
#: ``centralized_steps`` = the pooled data in K × ``batches`` minibatches per epoch (as many
#: optimiser steps per epoch as Sequential makes over K centres; issue 28 item 9)
CENTRALIZED = ("centralized", "centralized_steps")
FEDERATED = ("sequential", "weights_averaging", "ensemble")
