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

#: df_clinical.tsv columns usable as covariates (numeric or coded; checked by
#: :func:`fedclust.data.mds.check_clinical` where the file is read)
IPSSM_COVARIATES = (
    "AGE", "SEX", "BM_BLAST", "PB_BLAST", "WBC", "ANC", "MONOCYTES", "HB", "PLT",
    "RINGED_SIDEROBLASTS", "CYTO_IPSSR", "complex", "IPSSR_SCORE", "IPSSRA_SCORE", "IPSSM_SCORE",
)  # fmt: skip
#: the covariates the simulated stand-in draws (:func:`fedclust.survival.cohort.simulate_cohort`)
SIMULATED_COVARIATES = (
    "AGE", "SEX", "BM_BLAST", "PB_BLAST", "WBC", "ANC", "MONOCYTES", "HB", "PLT", "CYTO_IPSSR",
    "complex",
)  # fmt: skip
#: outcome columns (``*_YEARS``, ``*_STATUS``): never covariates (issue 30 item 2)
OUTCOME_SUFFIXES = ("_YEARS", "_STATUS")
