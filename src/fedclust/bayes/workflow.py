"""Parse-time helpers for rules/bayes.smk: unit ids, their settings, rule inputs (no heavy
imports).

Units (one job each with ``bayes.fanout: unit``; all of a rule's units in one job with
``all``):

- central: ``sgd``, ``dropout``, ``gauss_<a>`` (Gaussian prior σ = e^{−a}), ``mix_pi<p>_s<a>_s<b>``
  (scale mixture π = p/100, σ₁ = e^{−a}, σ₂ = e^{−b}); numbers with ``.`` → ``p``;
- federated: ``<method>__<split>`` for every method and client split, ``<method>`` for a
  ``pooled`` method (no split), and ``conjugate`` (the Bayesian linear regression check).
"""

from __future__ import annotations

import math
from typing import Any

CONJUGATE = "conjugate"


def _num(x: float) -> str:
    return f"{float(x):g}".replace(".", "p").replace("-", "m")


def central_specs(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Central unit id -> its spec (method, prior and prior parameters)."""
    out: dict[str, dict[str, Any]] = {}
    for b in cfg.get("baselines", []):
        out[b] = {"method": b}
    pri = cfg.get("priors", {})
    for a in (pri.get("gaussian") or {}).get("neg_log_sigma", []):
        out[f"gauss_{_num(a)}"] = {
            "method": "bbb",
            "prior": "gaussian",
            "neg_log_sigma": a,
            "sigma": math.exp(-a),
        }
    mix = pri.get("mixture") or {}
    for p in mix.get("pi", []):
        for a in mix.get("neg_log_sigma1", []):
            for b in mix.get("neg_log_sigma2", []):
                out[f"mix_pi{_num(100 * p)}_s{_num(a)}_s{_num(b)}"] = {
                    "method": "bbb",
                    "prior": "mixture",
                    "pi": p,
                    "neg_log_sigma1": a,
                    "neg_log_sigma2": b,
                    "sigma1": math.exp(-a),
                    "sigma2": math.exp(-b),
                }
    return out


def federated_specs(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Federated unit id -> {method, split, and the method's settings}."""
    fed = cfg.get("federated") or {}
    out: dict[str, dict[str, Any]] = {}
    if fed.get("enabled", True):
        for m, spec in (fed.get("methods") or {}).items():
            if spec.get("algorithm") == "pooled":
                out[m] = {"method": m, "split": None, **spec}
                continue
            for s in fed.get("splits") or {}:
                out[f"{m}__{s}"] = {"method": m, "split": s, **spec}
    if (cfg.get("conjugate") or {}).get("enabled", False):
        out[CONJUGATE] = {"method": CONJUGATE, "split": None}
    return out


def fanout(cfg: dict[str, Any]) -> str:
    return str(cfg.get("fanout", "all"))


def unit_outputs(kind: str, names: list[str], units: list[str], grouped: bool) -> dict:
    """Output paths of rule ``bayes_<kind>``: every unit's files (a grouped job) or the
    ``{unit}`` wildcard's; keyed by the file stem (``curve``, ``result``, ...)."""
    base = f"results/bayes/{kind}"
    if grouped:
        return {n.split(".")[0]: [f"{base}/{u}/{n}" for u in units] for n in names}
    return {n.split(".")[0]: f"{base}/{{unit}}/{n}" for n in names}


def data_inputs(cfg: dict[str, Any], download_dir: str) -> dict[str, str]:
    """The four MNIST IDX files when ``bayes.data.source`` is idx, else nothing."""
    if (cfg.get("data") or {}).get("source") != "idx":
        return {}
    dl = f"{download_dir}/mnist"
    return {
        "train_images": f"{dl}/train-images-idx3-ubyte.gz",
        "train_labels": f"{dl}/train-labels-idx1-ubyte.gz",
        "test_images": f"{dl}/t10k-images-idx3-ubyte.gz",
        "test_labels": f"{dl}/t10k-labels-idx1-ubyte.gz",
    }
