"""Scenario and strategy names of the survival stage.

Kept free of heavy imports: ``rules/survival.smk`` reads them (via :mod:`.workflow`) when
Snakemake parses the workflow, which used to import torch and scikit-learn (~3 CPU-s per parse).
"""

SCENARIOS = ("iid_balanced", "iid_unbalanced", "noniid_time", "noniid_bm_blast")
STRATEGIES = ("sequential", "weights_averaging", "ensemble", "isolated", "centralized")
FEDERATED = ("sequential", "weights_averaging", "ensemble")
