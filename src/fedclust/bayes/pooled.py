"""The pooled (centralized) side: Table 4.1's methods on all training images in one place
(BBB with a Gaussian or scale-mixture prior, SGD, SGD + dropout) and the exact posterior of
Bayesian linear regression (the conjugate check's reference; its mean is scikit-learn's ridge
solution with α = s²/τ²)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..seeds import derive_seed
from . import bbb


def device_of(name: str) -> str:
    """``cpu``, ``cuda`` or ``auto`` (cuda when available)."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def _t(a: np.ndarray, dtype, device: str) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=dtype, device=device)


def make_prior(spec: dict[str, Any], n_params: int, device: str) -> bbb.Prior:
    """``{"prior": "gaussian", "sigma": σ}`` or ``{"prior": "mixture", "pi", "sigma1",
    "sigma2"}``. The Gaussian goes through natural parameters, as PVI's cavity does."""
    if spec["prior"] == "gaussian":
        return bbb.GaussianPrior(*bbb.gaussian_natural(n_params, spec["sigma"]), device=device)
    return bbb.ScaleMixturePrior(spec["pi"], spec["sigma1"], spec["sigma2"], device=device)


def initial_posterior(
    layout: bbb.Layout, init: dict[str, Any], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(μ₀, ρ₀): the seeded starting point shared by centralized BBB and every PVI centre."""
    mu = bbb.init_weights(layout, derive_seed(seed, "bayes", "init", *layout.sizes))
    rho = bbb.init_rho(
        layout.n_params,
        float(init["rho_mean"]),
        float(init["rho_std"]),
        derive_seed(seed, "bayes", "init_rho", *layout.sizes),
    )
    return mu, rho


def run_central(
    data: dict[str, np.ndarray],
    spec: dict[str, Any],
    hidden: list[int],
    bias: bool,
    init: dict[str, Any],
    s: bbb.TrainSettings,
    dropout: dict[str, float],
    seed: int,
    train_seed: int,
    device: str = "cpu",
    eval_every: int = 1,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Train one Table 4.1 method (``spec['method']``: bbb | sgd | dropout) on the training
    images outside the validation mask; per evaluated epoch the validation and test error
    (MC predictive with ``s.mc_test`` samples; ``test_error_mean``: weights = μ)."""
    val = data["val"]
    x, y = (
        _t(data["x_train"][~val], torch.float32, device),
        _t(data["y_train"][~val], torch.int64, device),
    )
    xv, yv = (
        _t(data["x_train"][val], torch.float32, device),
        _t(data["y_train"][val], torch.int64, device),
    )
    xt, yt = _t(data["x_test"], torch.float32, device), _t(data["y_test"], torch.int64, device)
    layout = bbb.make_layout(x.shape[1], hidden, int(data["y_train"].max()) + 1, bias)
    gens = bbb.Generators.from_seed(train_seed, device)
    mu0, rho0 = initial_posterior(layout, init, seed)
    mu = _t(mu0, torch.float32, device).clone()
    method = spec["method"]

    def errors(mean: torch.Tensor, sigma: torch.Tensor | None) -> dict[str, float]:
        out = {"test_error_mean": bbb.error_rate(bbb.predict_proba(xt, layout, mean), yt)}
        for name, xs, ys in (("val_error", xv, yv), ("test_error", xt, yt)):
            if len(ys):
                p = bbb.predict_proba(xs, layout, mean, sigma, s.mc_test, gens.eval)
                out[name] = bbb.error_rate(p, ys)
            else:
                out[name] = float("nan")
        return out

    if method == "bbb":
        rho = _t(rho0, torch.float32, device).clone()
        prior = make_prior(spec, layout.n_params, device)

        def on_epoch(e: int) -> dict[str, float]:
            if e % eval_every and e != s.epochs:
                return {}
            return errors(mu, F.softplus(rho))

        recs = bbb.fit_variational(mu, rho, x, y, layout, prior, s, gens, on_epoch=on_epoch)
        state = {"mu": mu, "rho": rho}
    else:
        rates = (
            (float(dropout["input"]), float(dropout["hidden"]))
            if method == "dropout"
            else (0.0, 0.0)
        )

        def on_epoch(e: int) -> dict[str, float]:
            if e % eval_every and e != s.epochs:
                return {}
            return errors(mu, None)

        recs = bbb.fit_deterministic(mu, x, y, layout, s, gens, rates, on_epoch=on_epoch)
        state = {"mu": mu}
    curve = pd.DataFrame(recs)
    last = curve.iloc[-1]
    result = {
        **{k: v for k, v in spec.items()},
        "n_train": int(len(y)),
        "n_validation": int(len(yv)),
        "n_test": int(len(yt)),
        "sizes": list(layout.sizes),
        "n_params": layout.n_params,
        "epochs": int(s.epochs),
        "val_error": float(last["val_error"]),
        "test_error": float(last["test_error"]),
        "test_error_mean": float(last["test_error_mean"]),
    }
    if method == "bbb":
        sig = F.softplus(state["rho"])
        result["posterior_sigma_median"] = float(sig.median())
    return curve, result


# ------------------------------------------------------------------ conjugate reference
def regression_posterior(x: np.ndarray, y: np.ndarray, noise_var: float, prior_sd: float):
    """Exact posterior N(μ, Σ) of w under N(0, τ² I) and y ~ N(Xw, s² I): Σ = (I/τ² +
    XᵀX/s²)⁻¹, μ = Σ Xᵀy / s² (textbook form; its natural parameters are [Σ⁻¹μ, −½Σ⁻¹])."""
    x = np.asarray(x, dtype=np.float64)
    prec = np.eye(x.shape[1]) / prior_sd**2 + x.T @ x / noise_var
    cov = np.linalg.inv(prec)
    return cov @ (x.T @ np.asarray(y, dtype=np.float64)) / noise_var, cov


def regression_natural(x: np.ndarray, y: np.ndarray, noise_var: float, prior_sd: float):
    mean, cov = regression_posterior(x, y, noise_var, prior_sd)
    prec = np.linalg.inv(cov)
    return [prec @ mean, -0.5 * prec]


def ridge_mean(x: np.ndarray, y: np.ndarray, noise_var: float, prior_sd: float) -> np.ndarray:
    """scikit-learn's ridge solution with α = s²/τ² (= the posterior mean)."""
    from sklearn.linear_model import Ridge

    r = Ridge(alpha=noise_var / prior_sd**2, fit_intercept=False, solver="cholesky", tol=1e-12)
    return r.fit(x, y).coef_
