"""Every message the bayes stage sends (the one place a reviewer reads to know what leaves a
centre). Built per run because the sample-count floor is the run's ``min_samples``.

- ``bayes_pvi_delta``: PVI / VIRTUAL-style federated BBB. Down: the global natural parameters
  η_q (``parameters``, from the server: no count rule). Up: Δη = ε(η(q_new) − η_q), the change
  of the centre's factor (``parameters``), its training-image count ``n`` and test-image count
  ``n_test`` (``count``, each ≥ ``min_samples``), the local −ELBO per image, training and local
  test accuracy (``aggregate``) and the client's index (``metadata``, so the server can keep
  each client's latest accuracy: VIRTUAL's "clients" curve). The private weights of the
  ``hierarchical`` variant are never sent.
- ``bayes_fedavg_fit``: FedAvg of deterministic networks: the weights, the same counts and
  metrics, and ``units_withheld`` (``metadata``, only when > 0): how many hidden units the
  centre reset to the received weights because fewer images than its floor reached them
  (:mod:`fedclust.federation.unit_floor`).
"""

from __future__ import annotations

from fedclust.federation import Protocol, declares

METRICS = {
    "n_test": "count",
    "loss": "aggregate",
    "train_accuracy": "aggregate",
    "test_accuracy": "aggregate",
    "client": "metadata",
}


@declares()
def pvi_delta(min_samples: int = 3) -> Protocol:
    """Δη of one centre (and the global η_q it was computed from, sent down)."""
    return Protocol(
        "bayes_pvi_delta",
        {"parameters": "parameters", "n": "count", **METRICS},
        min_samples=int(min_samples),
    )


@declares()
def fedavg_fit(min_samples: int = 3) -> Protocol:
    """The weights of a deterministic network after local training (FedAvg)."""
    return Protocol(
        "bayes_fedavg_fit",
        {"parameters": "parameters", "n": "count", **METRICS, "units_withheld": "metadata"},
        min_samples=int(min_samples),
    )
