"""Every message the generative stage sends, declared once (docs/ARCHITECTURE.md "How to add a
federated method"). ``min_samples`` is the disclosure floor: every count field's entries must
reach it (config ``generative.min_samples``; a centre below it abstains instead of sending).

What leaves a centre:

- ``generative_moments`` — per-feature sums, sums of squares and counts of the observed entries
  of the gaussian columns (the federated standardisation every shared model uses);
- ``savae_fit`` / ``dgd_fit`` — FedAvg updates: model parameters, the sample count, the loss
  (the DGD's per-sample representations are never part of a message);
- ``savae_virtual_patients`` — once, the good node's *virtual* patients: rows drawn from its
  generator (never its patients), with the count of real patients the generator was trained on
  (the one SAVAE protocol with per-sample rows; their privacy is the generator's, labelled so);
- ``radialgan_codes`` / ``radialgan_code_grads`` — RadialGAN's only cross-centre payload:
  latent codes F_j(x, y) of a minibatch (or of the whole training set, for the augmented data),
  and, back, the gradient of the receivers' losses with respect to those codes;
- acknowledgements (``*_received``): the sample count only.

What the server sends (re-distributions of checked aggregates; no count rule applies): the
``*_request`` / ``*_global`` / ``*_relay`` protocols below.
"""

from __future__ import annotations

from dataclasses import replace

from fedclust.federation import Protocol, declares, fit_protocol


# ----------------------------------------------------------------------- centre -> server
@declares((1,))
def moments(min_samples: int) -> Protocol:
    return Protocol(
        "generative_moments",
        {"sum": "aggregate", "sumsq": "aggregate", "n": "count"},
        min_samples=min_samples,
    )


@declares(
    *((n, 1) for n in ("generative_standardised", "savae_fit_received", "dgd_fit_received",
                       "radialgan_applied", "savae_virtual_received"))
)  # fmt: skip
def received(name: str, min_samples: int) -> Protocol:
    """A centre's acknowledgement: only its sample count."""
    return Protocol(name, {"n": "count"}, min_samples=min_samples)


@declares((1,))
def savae_fit(min_samples: int) -> Protocol:
    return fit_protocol("savae_fit", metrics=("loss",), min_samples=min_samples)


@declares((1,))
def dgd_fit(min_samples: int) -> Protocol:
    """The decoder + mixture update; ``units_withheld`` (metadata, only when > 0): the decoder's
    hidden units the centre reset to the received weights because fewer of its samples than its
    floor reached them (:mod:`fedclust.federation.unit_floor`)."""
    p = fit_protocol("dgd_fit", metrics=("loss",), min_samples=min_samples)
    return replace(p, fields={**p.fields, "units_withheld": "metadata"})


@declares((1,))
def virtual_patients(min_samples: int) -> Protocol:
    return Protocol(
        "savae_virtual_patients",
        {"x": "per_sample", "y": "per_sample", "t": "per_sample", "n": "count"},
        min_samples=min_samples,
        per_sample=True,
    )


@declares((1,))
def radialgan_codes(min_samples: int) -> Protocol:
    return Protocol(
        "radialgan_codes",
        {"z": "per_sample", "n": "count"},
        min_samples=min_samples,
        per_sample=True,
    )


@declares((1,))
def radialgan_code_grads(min_samples: int) -> Protocol:
    fields = {"z_grad": "per_sample", "loss": "aggregate", "n": "count"}
    return Protocol("radialgan_code_grads", fields, min_samples=min_samples, per_sample=True)


# ----------------------------------------------------------------------- server -> centre
MOMENTS_REQUEST = Protocol("generative_moments_request", {"columns": "metadata"})
MOMENTS_GLOBAL = Protocol(
    "generative_moments_global", {"columns": "metadata", "mean": "aggregate", "sd": "aggregate"}
)
MODEL_GLOBAL = Protocol("generative_global_model", {"parameters": "parameters"})
VIRTUAL_REQUEST = Protocol("savae_virtual_request", {"n_virtual": "metadata"})
VIRTUAL_RELAY = Protocol(
    "savae_virtual_relay",
    {"x": "per_sample", "y": "per_sample", "t": "per_sample"},
    per_sample=True,
)
CODES_REQUEST = Protocol("radialgan_codes_request", {"batch": "metadata", "all": "metadata"})
CODES_RELAY = Protocol(
    "radialgan_codes_relay",
    {"codes": "per_sample", "alpha": "aggregate", "train": "metadata"},
    per_sample=True,
)
GRADS_RELAY = Protocol("radialgan_grads_relay", {"z_grad": "per_sample"}, per_sample=True)


@declares((1,))
def radialgan_evaluation(min_samples: int) -> Protocol:
    """A centre's downstream AUC without / with the augmented data (an evaluation summary)."""
    return Protocol(
        "radialgan_evaluation",
        {"auc_local": "aggregate", "auc_augmented": "aggregate", "virtual": "aggregate",
         "virtual_positive": "aggregate", "n": "count"},
        min_samples=min_samples,
    )  # fmt: skip
