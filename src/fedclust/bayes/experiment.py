"""One unit of the bayes stage's grid (see :mod:`.workflow`): builds the centres from a client
split, runs ``federate(centres, server, ledger=..., transport=...)`` and returns tables.

- central units: :func:`fedclust.bayes.pooled.run_central` (Table 4.1's methods);
- federated units: PVI / VIRTUAL-style federated BBB (:class:`.centre.PVICentre`,
  :class:`.server.NaturalSum`), FedAvg of deterministic networks (:class:`.centre.FedAvgCentre`,
  the core's ``make_strategy("fedavg")``), both on the core's ``run_rounds``; a ``pooled``
  method = centralized BBB with the federated model on all training images;
- ``conjugate``: Bayesian linear regression over centres, sequential PVI (one pass) and
  synchronous damped PVI against the exact pooled posterior.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..config import defaults_at
from ..errors import ConfigError
from ..federation import INPROCESS, Ledger, Transport, federate, make_strategy
from ..seeds import derive_seed, rng
from . import bbb, centre, pooled, protocols, server
from . import data as D
from . import pvi as P
from .workflow import CONJUGATE, central_specs, federated_specs


def settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``bayes`` section with the schema's defaults filled in."""
    return defaults_at(cfg, ["bayes"])


def run_central_unit(cfg: dict[str, Any], data: dict[str, np.ndarray], unit: str, seed: int):
    cfg = settings(cfg)
    specs = central_specs(cfg)
    if unit not in specs:
        raise ConfigError(
            f"unknown central unit {unit!r}", where="bayes", fix=f"one of {list(specs)}"
        )
    s = bbb.TrainSettings.from_config(cfg["train"])
    curve, result = pooled.run_central(
        data,
        specs[unit],
        cfg["model"]["hidden"],
        cfg["model"]["bias"],
        cfg["init"],
        s,
        cfg["dropout"],
        seed,
        derive_seed(seed, "bayes", "central", unit),
        pooled.device_of(cfg["device"]),
        int(cfg["train"]["eval_every"]),
    )
    return curve, {"unit": unit, **result}


def _damping(spec: dict[str, Any], per_round: int) -> float:
    d = spec.get("damping", 1.0)
    return 1.0 / per_round if d == "auto" else float(d)


def _per_round(spec: dict[str, Any], n_clients: int) -> int:
    return {"sequential": 1, "synchronous": n_clients}.get(
        spec["schedule"], min(int(spec.get("clients_per_round") or n_clients), n_clients)
    )


def _check_algorithm(algorithm: str) -> None:
    if algorithm not in ("pvi", "fedavg"):
        raise ConfigError(
            f"unknown algorithm {algorithm!r}",
            where="bayes.federated.methods.<m>.algorithm",
            fix="pvi, fedavg or pooled",
        )


def make_centre(
    algorithm: str, cid: str, index: int, rows: tuple, layout: bbb.Layout,
    s: bbb.TrainSettings, seed: int, init: tuple[np.ndarray, np.ndarray], prior_sigma: float,
    floor: int, var_max: float, private_sigma: float | None, device: str = "cpu",
):  # fmt: skip
    """One centre of a federated unit: its own (train x, y, test x, y) ``rows``, its training
    seed; PVI centres start from ``init`` (μ₀, ρ₀) with the server's prior N(0, prior_sigma²)
    as the floor of their cavities."""
    _check_algorithm(algorithm)
    if algorithm == "pvi":
        prior = list(bbb.gaussian_natural(layout.n_params, prior_sigma))
        return centre.PVICentre(cid, index, *rows, layout, s, seed, init, prior,
                                min_samples=floor, var_max=var_max,
                                private_sigma=private_sigma, device=device)  # fmt: skip
    return centre.FedAvgCentre(cid, index, *rows, layout, s, seed, min_samples=floor,
                               device=device)  # fmt: skip


def server_parts(
    algorithm: str, schedule: str, per_round: int | None, strat_seed: int, n_params: int,
    prior_sigma: float, var_max: float, mu0: np.ndarray, floor: int,
):  # fmt: skip
    """(strategy, initial global parameters, protocol) of a federated unit's server: PVI's
    :class:`.server.NaturalSum` from the prior N(0, prior_sigma²), or the core's FedAvg from
    μ₀, under the unit's schedule."""
    _check_algorithm(algorithm)
    if algorithm == "pvi":
        strategy = server.Scheduled(server.NaturalSum(var_max=var_max), schedule, per_round,
                                    strat_seed)  # fmt: skip
        return (
            strategy,
            list(bbb.gaussian_natural(n_params, prior_sigma)),
            protocols.pvi_delta(floor),
        )
    strategy = server.Scheduled(make_strategy("fedavg"), schedule, per_round, strat_seed)
    return strategy, [mu0], protocols.fedavg_fit(floor)


def run_federated_unit(
    cfg: dict[str, Any],
    data: dict[str, np.ndarray],
    unit: str,
    seed: int,
    transport: Transport = INPROCESS,
    wrap: Callable[[Any], Any] | None = None,
):
    """(rounds table, ledger table, result dict) of one federated unit. ``wrap``: applied to
    every centre once built (the privacy–utility stage's private centres; None: as built)."""
    cfg = settings(cfg)
    specs = federated_specs(cfg)
    if unit not in specs:
        raise ConfigError(
            f"unknown federated unit {unit!r}", where="bayes.federated", fix=f"one of {list(specs)}"
        )
    spec = specs[unit]
    if unit == CONJUGATE:
        return run_conjugate(cfg, seed, transport)
    fed = cfg["federated"]
    device = pooled.device_of(cfg["device"])
    local = {
        **fed["local"],
        **{
            k: spec[k]
            for k in ("kl_weight", "epochs", "lr")
            if k in spec and spec["algorithm"] != "pooled"
        },
    }
    s = bbb.TrainSettings.from_config(local)
    x, y = data["x_train"], data["y_train"]
    xt, yt = data["x_test"], data["y_test"]
    layout = bbb.make_layout(
        x.shape[1], fed["model"]["hidden"], int(y.max()) + 1, fed["model"]["bias"]
    )
    mu0, rho0 = pooled.initial_posterior(layout, cfg["init"], seed)
    xt_t = torch.as_tensor(xt, device=device)
    yt_t = torch.as_tensor(yt, device=device)
    eval_gen = bbb.Generators.from_seed(
        derive_seed(seed, "bayes", "server_eval", unit), device
    ).eval
    base = {
        "unit": unit,
        "method": spec["method"],
        "split": spec["split"],
        "algorithm": spec["algorithm"],
        "sizes": list(layout.sizes),
    }

    if spec["algorithm"] == "pooled":
        if "epochs" not in spec:
            raise ConfigError(
                f"pooled method {spec['method']!r} has no epochs",
                where=f"bayes.federated.methods.{spec['method']}.epochs",
                fix="set epochs (the pooled BBB reference's training length)",
            )
        s_pool = bbb.TrainSettings.from_config({**fed["local"], "epochs": spec["epochs"]})
        curve, res = pooled.run_central(
            {**data, "val": np.zeros(len(y), dtype=bool)},
            {"method": "bbb", "prior": "gaussian", "sigma": fed["prior_sigma"]},
            fed["model"]["hidden"],
            fed["model"]["bias"],
            cfg["init"],
            s_pool,
            cfg["dropout"],
            seed,
            derive_seed(seed, "bayes", "federated", unit),
            device,
            int(fed["eval_every"]),
        )
        rounds = curve.rename(columns={"epoch": "round"})
        rounds["server_accuracy"] = 1.0 - rounds["test_error"]
        rounds = rounds[["round", "loss", "train_accuracy", "server_accuracy"]]
        result = {
            **base,
            "rounds": int(spec["epochs"]),
            "n_clients": 1,
            "server_accuracy": float(rounds["server_accuracy"].iloc[-1]),
            "clients_accuracy": None,
            "messages": 0,
            "floats": 0,
            "abstentions": 0,
            "clipped": 0,
            "units_withheld": 0,
        }
        return rounds, Ledger().table(), result

    m = int(fed["n_clients"])
    split = fed["splits"][spec["split"]]
    owner = D.split_clients(y, split, m, seed)
    towner = D.split_test(y, owner, yt, split["kind"], m, seed)
    per_round = _per_round(spec, m)
    damping = _damping(spec, per_round)
    floor = int(fed["min_samples"])
    names = [f"c{i:03d}" for i in range(m)]
    strat_seed = derive_seed(seed, "bayes", "schedule", unit)

    algorithm = spec["algorithm"]
    private = float(fed["private_sigma"]) if spec.get("hierarchical") else None
    var_max = float(fed["var_max"] or float(fed["prior_sigma"]) ** 2)
    centres = [
        make_centre(
            algorithm,
            names[i],
            i,
            (x[owner == i], y[owner == i], xt[towner == i], yt[towner == i]),
            layout,
            s,
            derive_seed(seed, "bayes", "client", unit, i),
            (mu0, rho0),
            float(fed["prior_sigma"]),
            floor,
            var_max,
            private,
            device,
        )  # fmt: skip
        for i in range(m)
    ]
    if wrap is not None:
        centres = [wrap(c) for c in centres]
    strategy, initial, protocol = server_parts(
        algorithm, spec["schedule"], per_round, strat_seed, layout.n_params,
        float(fed["prior_sigma"]), var_max, mu0, floor,
    )  # fmt: skip

    if algorithm == "pvi":

        def evaluate(params):
            mean, var = P.from_natural(params)
            mu_t = torch.as_tensor(mean, dtype=torch.float32, device=device)
            sig_t = torch.as_tensor(np.sqrt(var), dtype=torch.float32, device=device)
            p = bbb.predict_proba(xt_t, layout, mu_t, sig_t, s.mc_test, eval_gen)
            return {"server_accuracy": 1.0 - bbb.error_rate(p, yt_t)}
    else:

        def evaluate(params):
            w = torch.as_tensor(params[0], device=device)
            return {
                "server_accuracy": 1.0 - bbb.error_rate(bbb.predict_proba(xt_t, layout, w), yt_t)
            }

    ledger = Ledger()
    config = {"epochs": int(s.epochs), "damping": damping}
    serve = server.serve(
        strategy,
        initial,
        int(spec["rounds"]),
        config,
        protocol,
        evaluate,
        int(fed["eval_every"]),
        label=unit,
    )
    _, records = federate(centres, serve, ledger=ledger, transport=transport)
    rounds = server.rounds_table(records)
    last = rounds.iloc[-1]
    result = {
        **base,
        "rounds": int(spec["rounds"]),
        "n_clients": m,
        "per_round": per_round,
        "damping": damping,
        "schedule": spec["schedule"],
        "hierarchical": bool(spec.get("hierarchical", False)),
        "client_sizes": [int(c.n_train) for c in centres],
        "server_accuracy": float(rounds["server_accuracy"].dropna().iloc[-1]),
        "clients_accuracy": float(last["clients_accuracy"]) if "clients_accuracy" in last else None,
        "messages": ledger.n_messages,
        "floats": ledger.n_floats,
        "abstentions": ledger.n_abstentions,
        "clipped": int(rounds["clipped"].sum()) if "clipped" in rounds else 0,
        "cavity_clipped": int(sum(getattr(c, "cavity_clipped", 0) for c in centres)),
        # FedAvg: hidden units the centres reset (fewer images than their floor reached them)
        "units_withheld": int(rounds["units_withheld"].sum()) if "units_withheld" in rounds else 0,
    }
    return rounds, ledger.table(), result


def run_conjugate(cfg: dict[str, Any], seed: int, transport: Transport = INPROCESS):
    """Bayesian linear regression over ``n_centres`` centres: sequential PVI for one pass and
    synchronous damped PVI for ``rounds`` rounds, the relative error of the global natural
    parameters to the exact pooled posterior after every round."""
    c = settings(cfg)["conjugate"]
    g = rng(seed, "bayes", "conjugate")
    n, d, m = int(c["n"]), int(c["d"]), int(c["n_centres"])
    x = g.standard_normal((n, d))
    w_true = g.standard_normal(d)
    y = x @ w_true + float(c["noise_sd"]) * g.standard_normal(n)
    noise_var, prior_sd = float(c["noise_sd"]) ** 2, float(c["prior_sd"])
    owner = g.integers(0, m, n)
    exact = pooled.regression_natural(x, y, noise_var, prior_sd)
    floor = int(c["min_samples"])
    rows, ledgers, result = [], [], {"unit": CONJUGATE, "n": n, "d": d, "n_centres": m}
    for schedule, rounds, damping in (
        ("sequential", m, 1.0),
        ("synchronous", int(c["rounds"]), float(c["damping"])),
    ):
        centres = [
            centre.ConjugateCentre(
                f"c{i:02d}", i, x[owner == i], y[owner == i], noise_var, min_samples=floor
            )
            for i in range(m)
        ]
        strategy = server.Scheduled(server.NaturalSum(var_max=1e12), schedule, None, 0)
        ledger = Ledger()

        def evaluate(params, exact=exact):
            return {"relative_error": P.relative_error(params, exact)}

        serve = server.serve(
            strategy,
            P.isotropic_prior(d, prior_sd),
            rounds,
            {"damping": damping},
            protocols.pvi_delta(floor),
            evaluate,
            label=f"conjugate_{schedule}",
        )
        final, recs = federate(centres, serve, ledger=ledger, transport=transport)
        for r in recs:
            rows.append(
                {
                    "schedule": schedule,
                    "round": r["round"],
                    "relative_error": r["relative_error"],
                    "clipped": r.get("clipped", 0),
                }
            )
        ledgers.append(ledger.table().assign(schedule=schedule))
        result[f"{schedule}_rounds"] = rounds
        result[f"{schedule}_relative_error"] = P.relative_error(final, exact)
        result[f"{schedule}_damping"] = damping
    mean, _ = P.full_to_moments(exact)
    result["ridge_max_abs_diff"] = float(
        np.max(np.abs(mean - pooled.ridge_mean(x, y, noise_var, prior_sd)))
    )
    return pd.DataFrame(rows), pd.concat(ledgers, ignore_index=True), result


def run_units(
    kind: str,
    cfg: dict[str, Any],
    data: dict[str, np.ndarray] | None,
    units: list[str],
    seed: int,
    transport: Transport = INPROCESS,
) -> list:
    """Every unit of a grouped job (``bayes.fanout: all``), in order; seeds derive from each
    unit's own id, so grouping does not change a number."""
    if kind == "central":
        return [run_central_unit(cfg, data, u, seed) for u in units]
    return [run_federated_unit(cfg, data, u, seed, transport) for u in units]


def load_data(path: str) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}
