"""Federated preprocessing (issue 23): the data stage's pooled preprocessing steps computed by
the centres through the federation core, equal to pooled where the arithmetic allows.

- :mod:`.protocols` — every message, declared (floor ``min_samples``);
- :mod:`.centre` — the centre objects (own rows only);
- :mod:`.server` — RNA-seq: pydeseq2 size factors, genewise dispersions (scipy's L-BFGS-B in
  lockstep, :mod:`.lbfgsb`), trend (pydeseq2's code), VST, top-N genes;
- :mod:`.rnaseq` — one run from a split and its agreement with pooled pydeseq2;
- :mod:`.tabular` — column frequencies, binned quantiles and scaling for the tables (MDS,
  survival, heart).
"""

from .protocols import MIN_SAMPLES, Protocols
from .rnaseq import FederatedRnaseq, PooledRnaseq, agreement, federated_rnaseq, pooled_rnaseq
from .server import RnaseqFit, RnaseqSettings, rnaseq_server

__all__ = [
    "MIN_SAMPLES",
    "FederatedRnaseq",
    "PooledRnaseq",
    "Protocols",
    "RnaseqFit",
    "RnaseqSettings",
    "agreement",
    "federated_rnaseq",
    "pooled_rnaseq",
    "rnaseq_server",
]
