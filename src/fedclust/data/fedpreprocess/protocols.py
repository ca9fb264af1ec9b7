"""Every message of federated preprocessing (issue 23), as declared :class:`Protocol` objects.

One place a reviewer reads to know what leaves a centre. ``min_samples`` is the disclosure floor
(config ``data.federated.min_samples``, default 3), a parameter of every protocol: no centre
message summarises fewer samples. Each centre also declares these protocols itself (``protocols``
of the centre classes) and applies its own disclosure policy on top (config ``disclosure``,
:mod:`fedclust.federation.disclosure`: the floor is ``max(min_samples, nfilter_subset)``, table
cells ``nfilter_tab``); a centre below its floor abstains but still receives the broadcasts and
preprocesses its own rows.

RNA-seq (pydeseq2's blind VST, :mod:`.server`), per gene unless said otherwise:

- ``prep_logsum``: Σ log counts (−inf where a count is 0) and n — the pooled log geometric
  means are Σ_k sum_k / N (fedpydeseq2's size-factor step, exact);
- ``prep_normed_moments``: n, mean and centred sum of squares of the size-factor normalised
  counts, and Σ 1/s_i — merged with the parallel-variance update (exact);
- ``prep_nb_terms``: for the genes and log α values the server asks for, the centre's share of
  pydeseq2's negative-binomial log-likelihood and its derivative and of the Cox–Reid term
  (Σ W, Σ dW/dα) — one lockstep L-BFGS-B round (:mod:`.lbfgsb`);
- ``prep_vst_moments``: n, mean and centred sum of squares of the VST values (top-N genes).

Tables (MDS, survival, heart; :mod:`.tabular`):

- ``prep_column_moments``: per column the observed count, mean (a frequency of ones for a 0/1
  column) and centred sum of squares of the observed values, and whether they are all 0/1 or
  all whole numbers (columns with fewer observed values than the floor are not sent);
- ``prep_binned_counts``: per column the counts of observed values in the server's bins, a bin
  with 1 … floor−1 values sent as 0 (DataSHIELD's small-cell suppression; a ``table`` field, so
  the ledger and the centre's guard check that every cell is 0 or ≥ the floor).

Server broadcasts (``prep_*_broadcast``) carry aggregates already checked on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedclust.federation import Protocol, declares

MIN_SAMPLES = 3  # default floor (config data.federated.min_samples)


def as_row(values: Any) -> np.ndarray:
    """A per-gene / per-column summary sent as one row, shape (1, …): the centre's guard
    (:mod:`fedclust.federation.disclosure`) refuses an aggregate whose first axis has the
    centre's sample count (one row per sample), which a vector of G per-gene sums would trip
    whenever G happens to equal the centre's size."""
    return np.asarray(values, dtype=np.float64)[None, ...]


def from_row(values: Any) -> np.ndarray:
    """The summary :func:`as_row` sent."""
    return np.asarray(values, dtype=np.float64)[0]


@dataclass(frozen=True)
class Protocols:
    """The protocols of one federation, all with the same floor."""

    min_samples: int = MIN_SAMPLES

    def _up(self, name: str, fields: dict[str, str]) -> Protocol:
        return Protocol(name, fields, min_samples=int(self.min_samples))

    # ---- RNA-seq
    @property
    def logsum(self) -> Protocol:
        return self._up("prep_logsum", {"sum_log": "aggregate", "n": "count"})

    @property
    def normed_moments(self) -> Protocol:
        return self._up(
            "prep_normed_moments",
            {"mean": "aggregate", "m2": "aggregate", "sum_inv_sf": "aggregate", "n": "count"},
        )

    @property
    def nb_terms(self) -> Protocol:
        return self._up(
            "prep_nb_terms",
            {"nll": "aggregate", "dnll": "aggregate", "w": "aggregate", "dw": "aggregate",
             "n": "count"},
        )  # fmt: skip

    @property
    def vst_moments(self) -> Protocol:
        return self._up("prep_vst_moments", {"mean": "aggregate", "m2": "aggregate", "n": "count"})

    # ---- tables
    @property
    def column_moments(self) -> Protocol:
        return self._up(
            "prep_column_moments",
            {"columns": "metadata", "mean": "aggregate", "m2": "aggregate", "binary": "aggregate",
             "whole": "aggregate", "n_obs": "count", "n": "count"},
        )  # fmt: skip

    @property
    def binned_counts(self) -> Protocol:
        return self._up(
            "prep_binned_counts",
            {"columns": "metadata", "counts": "table", "n_obs": "count", "n": "count"},
        )

    # ---- what each centre class answers (the centre declares its own protocols: the guard
    # of fedclust.federation applies these, whatever the server offers)
    def rnaseq_methods(self) -> dict[str, Protocol]:
        return {
            "logsum": self.logsum,
            "normed_moments": self.normed_moments,
            "nb_terms": self.nb_terms,
            "apply_vst": self.vst_moments,
            "select": ACK,
        }

    def table_methods(self) -> dict[str, Protocol]:
        return {"column_moments": self.column_moments, "binned_counts": self.binned_counts,
                "label_set": LABELS, "take_fill": ACK}  # fmt: skip


@declares()
def declared() -> list[Protocol]:
    """Every protocol a centre of either class answers (builds the floor-dependent ones)."""
    return [*DEFAULT.rnaseq_methods().values(), *DEFAULT.table_methods().values()]


DEFAULT = Protocols()

# server → centre: requests and broadcasts (no sample-count rule: they re-distribute aggregates).
# ``parameters`` is the array the centre method receives as its first argument.
REQUEST = Protocol("prep_request", {"step": "metadata"})
LOGMEANS = Protocol("prep_logmeans_broadcast", {"parameters": "aggregate"})
NB_REQUEST = Protocol(
    "prep_nb_request",
    {"parameters": "parameters", "active": "metadata", "fit_genes": "metadata",
     "beta": "aggregate", "min_mu": "parameters"},
)  # fmt: skip
TREND = Protocol(
    "prep_trend_broadcast", {"coeffs": "parameters", "mean_disp": "parameters", "genes": "metadata"}
)
SELECTION = Protocol("prep_selection_broadcast", {"genes": "metadata"})
ACK = Protocol("prep_ack", {})  # an empty reply: the centre keeps what it was sent
# centre -> server: the classes of its rows (class-conditional statistics: the server learns
# the label set from the centres, never from a pooled target column; issue 30)
LABELS = Protocol("prep_labels", {"labels": "metadata"})
COLUMNS = Protocol("prep_columns_request", {"columns": "metadata", "labels": "metadata"})
BINS = Protocol(
    "prep_bins_request", {"parameters": "parameters", "columns": "metadata", "labels": "metadata"}
)
FILL = Protocol("prep_fill_broadcast", {"fill": "aggregate", "lo": "aggregate", "hi": "aggregate"})
# the heart fill (class-conditional): classes × columns of values, the classes (the union of the
# centres' label sets) and per (class, column) whether any centre reported a value (a NaN fill
# otherwise): a centre holding missing cells of a (column, class) without a value stops itself
CLASS_FILL = Protocol(
    "prep_class_fill_broadcast", {"fill": "aggregate", "classes": "metadata", "has": "metadata"}
)
