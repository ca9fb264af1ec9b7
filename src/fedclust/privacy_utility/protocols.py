"""Every message of the privacy–utility stage's own protocols (issue 24), declared once.

The stage measures the other stages' federated methods under differential privacy and secure
aggregation; the methods that run on the stages' own centres (heart FL, survival Weights
Averaging, DEC's TSAE) keep their protocols. The releases added here:

- ``pu_mean_stats`` — a centre's sum of its rows clipped to the public bound and its count
  (one row, shape (1, d)); a *summing* protocol: only the secure sum reaches the server, which
  adds Gaussian noise once (the centring of the HAC data);
- ``pu_lloyd_stats`` — DP-Lloyd: per cluster of the broadcast centroids, the count and the sum
  of the centre's clipped rows (counts as one row (1, k)); summing, noise once after the sum;
- ``pu_cluster_release`` — a centre's own locally-private release of its cut clusters (HAC
  simultaneous sharing, DEC stage B): noisy sums and noisy counts, noise added at the centre
  (each centre's samples are released once);
- ``pu_km_counts`` — events and censorings per interval of the public time grid (one row per
  table); summing, noise once after the secure sum.

The centres of the summing protocols require secure aggregation (their own settings), so a
cell below a disclosure floor never reaches the server on its own.
"""

from __future__ import annotations

from fedclust.federation import Protocol

MEAN_REQUEST = Protocol("pu_mean_request", {"parameters": "parameters"})
MEAN_STATS = Protocol("pu_mean_stats", {"sum": "aggregate", "n": "count"}, summed=True)
LLOYD_REQUEST = Protocol("pu_lloyd_request", {"parameters": "parameters"})
LLOYD_STATS = Protocol(
    "pu_lloyd_stats", {"sums": "aggregate", "counts": "aggregate", "n": "count"}, summed=True
)
CLUSTER_REQUEST = Protocol(
    "pu_cluster_request", {"parameters": "parameters", "n_min": "metadata", "k": "metadata"}
)
CLUSTER_RELEASE = Protocol(
    "pu_cluster_release", {"sums": "aggregate", "counts": "aggregate", "n": "count"}
)
KM_REQUEST = Protocol("pu_km_request", {"parameters": "parameters"})
KM_COUNTS = Protocol(
    "pu_km_counts", {"events": "aggregate", "censored": "aggregate", "n": "count"}, summed=True
)
