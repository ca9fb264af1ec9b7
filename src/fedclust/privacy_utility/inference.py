"""The seed-001 property-inference and reconstruction attacks on privatised releases (issue 24,
item 3; seed 001 §8.2–8.3, thesis §4.4.2–4.4.3).

The centres release their projected rows ``y = x Q`` (as in the attacks stage) privatised row by
row like ``known_io``'s: each released row clipped to an L2 ball of radius ``bound`` and released
once with ``N(0, (z·Δ₂)² I)``, ``Δ₂ = 2·bound`` (replacing one patient's row moves the clipped
release anywhere in the ball: its diameter), z calibrated by the accountant for one release
(:func:`.records.noise_multiplier`); every row is its own patient's only release, so each spends
ε. At ε = ∞ nothing is clipped or noised: the attacks stage's numbers on the same input.

The attacks are the library's (:func:`fedclust.attacks.property_inference.run_property_inference`
with its ``release`` hook; :func:`fedclust.attacks.reconstruction.reconstruct` on the Fig 4.19
setting), not copies:

- ``property_inference`` — the sex classifier (seed 001 §8.2) trained on the attacker's own rows,
  applied to the centres' privatised releases: test accuracy of the ``fixed`` (knows Q) and
  ``invariant`` attackers; chance = the test rows' majority share;
- ``reconstruction`` — MMD distribution matching (linear decoder, pseudo-inverse start, seed 001
  §8.3, Fig 4.19) on the privatised releases: median relative error ``‖x̂ − x‖/‖x‖`` of the
  centres' rows, and the pseudo-inverse ``y Q⁺`` (the attacker knows Q) beside it; chance = every
  row guessed as the attacker's mean row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from fedclust.federation.dp import clip_rows
from fedclust.seeds import derive_seed, rng

from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, spent

MECHANISM = "gaussian per released row (clipped, Δ₂ = 2·bound)"


def privatise(y: np.ndarray, eps: float, delta: float, bound: float, g: np.random.Generator):
    """Each row of ``y`` clipped to ``bound`` plus N(0, (z·2·bound)²) per entry, z for one
    release at (ε, δ); ε = ∞: ``y`` unchanged (no clipping)."""
    if math.isinf(eps):
        return np.asarray(y, float)
    z = noise_multiplier(eps, delta, 1)
    return clip_rows(np.asarray(y, float), bound) + g.normal(0.0, z * 2.0 * bound, np.shape(y))


def _budget(method: str, eps: float, s: int, delta: float) -> list[dict]:
    if math.isinf(eps):
        return []
    z = noise_multiplier(eps, delta, 1)
    return budget_rows(method, eps, s, ["each row"], MECHANISM, 1, z, spent(z, 1, delta), delta)


def train_spec(m: dict[str, Any], device: str = "cpu"):
    """The attacks stage's :class:`TrainSpec` from the method's config section."""
    from fedclust.attacks.property_inference import TrainSpec

    return TrainSpec(
        d_nn=int(m["d_nn"]),
        d_nn_small=int(m["d_nn"]),
        small_input=0,
        lrs=tuple(float(x) for x in m["lrs"]),
        epochs=int(m["epochs"]),
        batch_size=int(m["batch_size"]),
        device=device,
    )


def run_property_inference(
    counts: pd.DataFrame, obs: pd.DataFrame, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Property inference (sex) on privatised releases over ε; seed s = the attack's run s."""
    from fedclust.attacks import property_inference as PI

    m, delta = cfg["property_inference"], float(cfg["delta"])
    bound = float(m["bound"])
    cond = {"kind": str(m["projection"]), "k": m.get("k")}
    curve, budget = [], []
    for eps in epsilons(cfg["epsilons"]):

        def release(y, run, eps=eps):
            g = rng(seed, "privacy_utility", "property_inference", "noise", eps, run)
            return privatise(y, eps, delta, bound, g)

        acc = PI.run_property_inference(
            counts,
            obs,
            conditions=[cond],
            n_runs=int(cfg["seeds"]),
            spec=train_spec(m),
            seed=seed,
            preprocessing=str(m["preprocessing"]),
            genes=str(m["genes"]),
            max_genes=m.get("max_genes"),
            release=release,
        )
        for r in acc.itertuples():
            metric = "pi_accuracy" if r.classifier == "fixed" else "pi_accuracy_invariant"
            curve.append(
                curve_row("property_inference", "attack", eps, r.run, metric, r.test_accuracy)
            )
            if math.isinf(eps):
                curve.append(
                    curve_row(
                        "property_inference",
                        "chance",
                        math.inf,
                        r.run,
                        metric,
                        r.majority_share_test,
                    )  # fmt: skip
                )
        for s in sorted(set(acc["run"])):
            budget += _budget("property_inference", eps, int(s), delta)
    return frames(curve, budget)


def run_reconstruction(
    counts: pd.DataFrame, obs: pd.DataFrame, cfg: dict[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The Fig 4.19 reconstruction (Gaussian k, linear decoder from the pseudo-inverse, MMD) on
    privatised releases over ε; seed s = the attack's run s (its 50/50 split and Q)."""
    from fedclust.attacks import reconstruction as RC
    from fedclust.attacks.data import split_preprocess
    from fedclust.hac.projection import projection_matrix

    m, delta = cfg["reconstruction"], float(cfg["delta"])
    bound, k = float(m["bound"]), int(m["k"])
    spec = RC.DecoderSpec(
        decoder="linear",
        init="pinv",
        optimizer=str(m.get("optimizer", "adam")),
        lr=float(m["lr"]),
        epochs=int(m["epochs"]),
        batch_size=int(m["batch_size"]),
        sigma_factors=tuple(float(x) for x in m["sigma_factors"]),
    )
    curve, budget = [], []
    for s in range(int(cfg["seeds"])):
        att, srv = RC.half_split(len(counts), seed, s)
        xa_df, xs_df = split_preprocess(
            counts, att, srv, str(m["preprocessing"]), "all", m.get("max_genes")
        )
        xa, xs = xa_df.to_numpy(float), xs_df.to_numpy(float)
        q = projection_matrix(xa.shape[1], k, "gaussian", derive_seed(seed, "recon-q", s))
        base = RC.relative_error(np.broadcast_to(xa.mean(0), xs.shape), xs)
        for metric in ("recon_rel_error", "recon_pinv_rel_error"):
            curve.append(
                curve_row("reconstruction", "chance", math.inf, s, metric, np.median(base))
            )
        for eps in epsilons(cfg["epsilons"]):
            g = rng(seed, "privacy_utility", "reconstruction", "noise", eps, s)
            y = privatise(xs @ q, eps, delta, bound, g)
            xh, _ = RC.reconstruct(y, xa, q, spec, seed + s)
            for metric, est in (("recon_rel_error", xh), ("recon_pinv_rel_error", None)):
                est = RC.pinv_reconstruction(y, q) if est is None else est
                err = float(np.median(RC.relative_error(est, xs)))
                curve.append(curve_row("reconstruction", "attack", eps, s, metric, err))
            budget += _budget("reconstruction", eps, s, delta)
    return frames(curve, budget)
