"""Every message of D6.2 ch. 7's federated DEC (seed 003 §6.4), declared once.

* ``d62_column_ones``: a centre's count of ones per binary column and its sample count — the one
  count aggregation the random-flip layer needs (D6.2: flips "respecting the overall
  distribution of 0 and 1 in the entire dataset"); one row, shape (1, F);
* ``d62_flip_rates`` / ``d62_received``: the server's per-column frequencies of ones, and the
  centre's acknowledgement (its count only);
* ``d62_fit``: a FedAvg update of the autoencoder (stage A) or of the encoder + centroids
  (stage C) with the sample count and the centre's training and held-out losses (the G metric's
  two terms) and, stage C, the fraction of its patients whose cluster changed since the previous
  global model;
* the local k-means centroids and the global centroids are the DEC stage's protocols
  (:func:`fedclust.dec.federated.kmeans_protocol`, ``dec_global_centroids``).
"""

from __future__ import annotations

from fedclust.federation import Protocol, declares, fit_protocol

#: fewest patients behind any message of a centre (config ``dec.d62.min_samples``)
MIN_SAMPLES = 3

COLUMN_ONES_REQUEST = Protocol("d62_column_ones_request", {"columns": "metadata"})
FLIP_RATES = Protocol("d62_flip_rates", {"p1": "aggregate"})
RECEIVED = Protocol("d62_received", {"n": "count"})


@declares()
def column_ones(min_samples: int = MIN_SAMPLES) -> Protocol:
    return Protocol(
        "d62_column_ones", {"ones": "aggregate", "n": "count"}, min_samples=int(min_samples)
    )


@declares()
def fit(min_samples: int = MIN_SAMPLES) -> Protocol:
    """A FedAvg update of either stage (autoencoder or encoder + centroids)."""
    return fit_protocol("d62_fit", ("loss", "eval_loss", "changed"), min_samples=int(min_samples))


def declared(min_samples: int, min_cluster_size: int) -> dict[str, Protocol]:
    """What a centre answers, method by method (applied by the centre-side guard)."""
    from fedclust.dec.federated import kmeans_protocol

    return {
        "column_ones": column_ones(min_samples),
        "flip_rates": RECEIVED,
        "fit": fit(min_samples),
        "kmeans": kmeans_protocol(max(int(min_cluster_size), int(min_samples))),
    }
