"""Partitioned variational inference (seed 003 ch. 4, §3.4) with differential privacy (issue 24).

Each centre is the bayes stage's :class:`fedclust.bayes.centre.PVICentre`; the private one
(:class:`PrivatePVICentre`) releases its change of factor Δη_m = ε(η(q_new) − η_q) — the
natural parameters [η₁, η₂] of the mean-field Gaussian over the network's weights, one vector
of 2·P numbers — clipped to L2 norm C (``clip``, over both parts together) with
N(0, (z·Δ₂)²) added per coordinate **at the centre**, before the message leaves (the "noise on
the local update" variant of DP-PVI, Heikkilä et al. 2022, "Differentially private
partitioned variational inference", TMLR). Δη_m is an arbitrary function of the centre's
images, so after clipping one image added or removed moves it anywhere in the ball: Δ₂ = 2C
(record-level; the release is (ε, δ)-DP on its own, whoever sees it). The centre keeps the
factor the server holds: t_m ← t_m + (the released Δη_m), so the next cavity η_q − t_m removes
exactly its own released contribution (post-processing). A local fit that diverges from a
noisy global (the stage's divergence check) releases Δη = 0 with the same noise. The server
is the stage's own (:class:`fedclust.bayes.server.NaturalSum` under the unit's schedule, the
core's round loop): a noisy precision that leaves the valid range is raised to 1/var_max there
(the stage's positive-variance rule, post-processing).

Composition: a centre releases at most once per round; z is calibrated so that ``rounds``
Gaussian releases spend exactly ε (the accountant, RDP); the budget rows give each centre's
own number of releases (a sampled schedule asks a centre in fewer rounds) and the ε those
spent. Not privatised (stated in the report): the counts ``n`` / ``n_test`` and the local
ELBO and accuracies in the message's metrics (the stage's per-round record; a deployment
would drop them as central DP-FedAvg drops the loss) — which centres are asked is the
server's public seeded schedule.

Second mechanism (``privacy_utility.bayes.mechanisms: [.., dp_sgd]``, arm ``federated_local``):
noise on ~2·P natural parameters at ε ≤ 8 leaves the update-noise arm at chance, so the local
ELBO fit itself runs DP-SGD (:mod:`.bayes_dpsgd`: per-image gradient clipping of the data term,
Poisson sampling, Gaussian noise, its own local settings ``sgd_local``); each centre's z is
calibrated for its own q = batch / n_train and rounds × epochs × ⌈n_train / batch⌉ steps, the
budget rows give the steps it took (``releases``) and their ε; Δη leaves without noise.

ε = ∞: the bayes stage's own federated unit (:func:`fedclust.bayes.experiment.
run_federated_unit`), no clipping, no noise. Pooled: centralised BBB on every training image
(the stage's ``pooled`` algorithm); isolated: BBB on each centre's own images alone
(mean test accuracy over centres). Headline: test accuracy of the global posterior on the
pooled test images (an evaluation, as the bayes section's).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pandas as pd

from fedclust.errors import ConfigError
from fedclust.federation import Abstain
from fedclust.seeds import derive_seed, rng

from .records import budget_rows, curve_row, epsilons, frames, noise_multiplier, spent

#: privacy_utility.bayes.mechanisms: noise on the released Δη; DP-SGD in the local fit
MECHANISMS = ("update_noise", "dp_sgd")


class PrivatePVICentre:
    """A PVI centre whose Δη leaves clipped and noised (module docstring): wraps a built
    :class:`fedclust.bayes.centre.PVICentre` (its images, factor and training streams).
    ``bound``: C; ``noise``: the multiplier z (0: none); ``seed``: its own noise generator."""

    def __init__(self, centre: Any, bound: float, noise: float, seed: int) -> None:
        self.centre = centre
        self.cid, self.n_samples, self.n_train = centre.cid, centre.n_samples, centre.n_train
        self.bound, self.noise = float(bound), float(noise)
        self._rng = rng(seed, "privacy_utility", "bayes", centre.cid)
        self.releases = 0
        self.norms: list[float] = []  # ‖Δη‖ before clipping (diagnostics)
        self.diverged = 0  # local fits that diverged (their Δη released as 0 + noise)
        self.clean: np.ndarray | None = None  # the last clipped Δη before noise (tests only)

    @property
    def sensitivity(self) -> float:
        """Δ₂ of one release: the diameter 2C of the clipping ball."""
        return 2.0 * self.bound

    @property
    def cavity_clipped(self) -> int:
        return int(self.centre.cavity_clipped)

    def fit(self, parameters: list[np.ndarray], config: dict[str, Any]):
        """The stage's PVI step, then Δη clipped to C and N(0, (z·2C)²) added per coordinate;
        the centre's factor follows the released Δη."""
        try:
            out = self.centre.fit(parameters, config)
        except ConfigError as err:  # the local fit diverged from a noisy global: Δη = 0
            if "diverged" not in err.what:
                raise
            self.diverged += 1
            zero = [np.zeros_like(np.asarray(p, np.float64)) for p in parameters]
            out = (zero, self.centre.n_train, {"client": int(self.centre.index)})
        if isinstance(out, Abstain):
            return out
        delta, n, metrics = out
        sizes = [np.size(d) for d in delta]
        flat = np.concatenate([np.ravel(np.asarray(d, np.float64)) for d in delta])
        norm = float(np.linalg.norm(flat))
        self.norms.append(norm)
        clipped = flat * min(1.0, self.bound / norm) if norm > 0 else flat
        self.clean = clipped.copy()
        released = clipped
        if self.noise > 0:
            released = clipped + self._rng.normal(0.0, self.noise * self.sensitivity, flat.shape)
        parts = np.split(released, np.cumsum(sizes)[:-1])
        parts = [p.reshape(np.shape(d)) for p, d in zip(parts, delta, strict=True)]
        c = self.centre  # t_m ← t_m − Δη + released Δη
        c.factor = [f - np.asarray(d, np.float64) + p
                    for f, d, p in zip(c.factor, delta, parts, strict=True)]  # fmt: skip
        self.releases += 1
        return parts, n, metrics


def _bayes_cfg(bcfg: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
    """The bayes section (schema-filled) with the privacy–utility sizes: one federated method
    (``unit``'s algorithm and schedule), ``rounds``, local ``epochs`` (and ``local``'s
    overrides of its local training), ``hidden`` layers, ``n_clients`` (null: the section's)
    and a pooled BBB method of ``pooled_epochs``."""
    import copy

    from fedclust.bayes.experiment import settings

    cfg = copy.deepcopy(settings(bcfg))
    fed = cfg["federated"]
    spec = dict(fed["methods"][m["method"]]) if m["method"] in fed["methods"] else None
    if spec is None or spec.get("algorithm") != "pvi":
        from fedclust.errors import ConfigError

        pvi = sorted(k for k, v in fed["methods"].items() if v.get("algorithm") == "pvi")
        raise ConfigError(
            f"privacy_utility.bayes.method {m['method']!r} is not a PVI method of bayes",
            where="privacy_utility.bayes.method",
            fix=f"one of {pvi}",
        )
    spec["rounds"] = int(m["rounds"])
    fed["methods"] = {
        m["method"]: spec,
        "pu_pooled": {"algorithm": "pooled", "epochs": int(m["pooled_epochs"])},
    }
    fed["splits"] = {m["split"]: fed["splits"][m["split"]]}
    fed["local"] = {**fed["local"], **(m.get("local") or {}), "epochs": int(m["epochs"])}
    if m.get("n_clients") is not None:
        fed["n_clients"] = int(m["n_clients"])
    fed["model"] = {**fed["model"], "hidden": [int(h) for h in m["hidden"]]}
    cfg["conjugate"] = {**cfg.get("conjugate", {}), "enabled": False}
    cfg["device"] = "cpu"  # the privacy–utility job asks for no GPU
    return cfg


def load_data(bcfg: dict[str, Any], m: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """The bundled images of ``privacy_utility.bayes.source`` split as the bayes stage does."""
    from fedclust.bayes.data import build_dataset
    from fedclust.bayes.experiment import settings

    d = settings(bcfg)["data"]
    return build_dataset(str(m["source"]), seed, float(d["test_fraction"]), 0.0)


def isolated_accuracy(cfg: dict[str, Any], data: dict[str, np.ndarray], seed: int) -> float:
    """BBB (the stage's centralised trainer, the federated model) on each centre's own
    training images for ``pooled_epochs``; mean test accuracy over centres (pooled test)."""
    from fedclust.bayes import bbb, pooled
    from fedclust.bayes import data as D

    fed = cfg["federated"]
    split = next(iter(fed["splits"].values()))
    m = int(fed["n_clients"])
    owner = D.split_clients(data["y_train"], split, m, seed)
    epochs = int(fed["methods"]["pu_pooled"]["epochs"])
    s = bbb.TrainSettings.from_config({**fed["local"], "epochs": epochs})
    accs = []
    for i in range(m):
        w = owner == i
        own = {"x_train": data["x_train"][w], "y_train": data["y_train"][w],
               "x_test": data["x_test"], "y_test": data["y_test"],
               "val": np.zeros(int(w.sum()), dtype=bool)}  # fmt: skip
        curve, _ = pooled.run_central(
            own,
            {"method": "bbb", "prior": "gaussian", "sigma": fed["prior_sigma"]},
            fed["model"]["hidden"],
            fed["model"]["bias"],
            cfg["init"],
            s,
            cfg["dropout"],
            seed,
            derive_seed(seed, "pu", "bayes", "isolated", i),
            "cpu",
            epochs,
        )
        accs.append(1.0 - float(curve["test_error"].iloc[-1]))
    return float(np.mean(accs))


def run_bayes(bcfg: dict[str, Any], cfg: dict[str, Any], seed: int) -> tuple[pd.DataFrame, ...]:
    """PVI (``privacy_utility.bayes.method`` of the bayes section, split ``split``) over
    ε × seeds × ``mechanisms`` (``bcfg``: the bayes section; ``cfg``: ``privacy_utility``).
    ``update_noise``: noise on the released Δη (arm ``federated``, module docstring);
    ``dp_sgd``: DP-SGD in the local ELBO fit (arm ``federated_local``, :mod:`.bayes_dpsgd`); at
    ε = ∞ both are the stage's own unit (one ``federated`` row). Headline: test accuracy of the
    global posterior; pooled and isolated BBB beside it (module docstring)."""
    from fedclust.bayes.experiment import run_federated_unit

    m, delta = cfg["bayes"], float(cfg["delta"])
    mechanisms = list(m["mechanisms"])
    bad = sorted(set(mechanisms) - set(MECHANISMS))
    if bad or not mechanisms:
        raise ConfigError(
            f"privacy_utility.bayes.mechanisms {mechanisms!r}: unknown or empty",
            where="privacy_utility.bayes.mechanisms",
            fix=f"a non-empty list of {list(MECHANISMS)}",
        )
    bc = _bayes_cfg(bcfg, m)
    unit = f"{m['method']}__{m['split']}"
    rounds, bound = int(m["rounds"]), float(m["clip"])
    curve, budget = [], []
    for sd in range(int(cfg["seeds"])):
        s_seed = derive_seed(seed, "pu", "bayes", sd)
        data = load_data(bcfg, m, s_seed)
        for eps in epsilons(cfg["epsilons"]):
            if math.isinf(eps):
                _, _, res = run_federated_unit(bc, data, unit, s_seed)
                curve.append(curve_row("bayes", "federated", eps, sd, "test_accuracy",
                                       res["server_accuracy"]))  # fmt: skip
                continue
            if "update_noise" in mechanisms:
                z = noise_multiplier(eps, delta, rounds)
                made: list[PrivatePVICentre] = []
                noise_seed = derive_seed(seed, "pu", "bayes", eps, sd)

                def wrap(c, z=z, made=made, noise_seed=noise_seed):
                    made.append(PrivatePVICentre(c, bound, z, noise_seed))
                    return made[-1]

                _, _, res = run_federated_unit(bc, data, unit, s_seed, wrap=wrap)
                curve.append(curve_row("bayes", "federated", eps, sd, "test_accuracy",
                                       res["server_accuracy"]))  # fmt: skip
                for c in made:
                    budget += budget_rows(
                        "bayes",
                        eps,
                        sd,
                        [c.cid],
                        "gaussian at the centre on the clipped Δη (Δ₂ = 2·clip)",
                        c.releases,
                        z,
                        spent(z, c.releases, delta) if c.releases else 0.0,
                        delta,
                    )
            if "dp_sgd" in mechanisms:
                curve_r, budget_r = run_dp_sgd(bc, data, unit, m, eps, delta, seed, sd, s_seed)
                curve.append(curve_r)
                budget += budget_r
        _, _, res = run_federated_unit(bc, data, "pu_pooled", s_seed)
        curve.append(curve_row("bayes", "pooled", math.inf, sd, "test_accuracy",
                               res["server_accuracy"]))  # fmt: skip
        curve.append(curve_row("bayes", "isolated", math.inf, sd, "test_accuracy",
                               isolated_accuracy(bc, data, s_seed)))  # fmt: skip
    return frames(curve, budget)


def run_dp_sgd(
    bc: dict[str, Any],
    data: dict[str, np.ndarray],
    unit: str,
    m: dict[str, Any],
    eps: float,
    delta: float,
    seed: int,
    sd: int,
    s_seed: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One DP-SGD PVI run at ε (:mod:`.bayes_dpsgd`): each centre's z calibrated for its own
    q = batch / n_train and the most steps it can take (rounds × epochs × ⌈n_train / batch⌉);
    (its curve row, one budget row per centre with the steps it took and the ε they spent)."""
    from fedclust.bayes.experiment import run_federated_unit

    from . import bayes_dpsgd as D

    rounds, clip = int(m["rounds"]), float(m["sgd_clip"])
    if m.get("sgd_local"):  # the DP-SGD fit's own local settings (e.g. a larger batch)
        bc = {**bc, "federated": {**bc["federated"]}}
        bc["federated"]["local"] = {**bc["federated"]["local"], **m["sgd_local"]}
    epochs = int(bc["federated"]["local"]["epochs"])
    made: list[D.DPSGDPVICentre] = []

    def wrap(c):
        q = D.sample_rate(c.n_train, c.settings.batch_size)
        steps = rounds * epochs * D.steps_per_epoch(c.n_train, c.settings.batch_size)
        z = _dp_sgd_noise(eps, delta, q, steps)
        own = derive_seed(seed, "pu", "bayes_dpsgd", eps, sd, c.cid)
        made.append(D.DPSGDPVICentre(c, clip, z, own, max_steps=steps))
        return made[-1]

    _, _, res = run_federated_unit(bc, data, unit, s_seed, wrap=wrap)
    row = curve_row("bayes", "federated_local", eps, sd, "test_accuracy", res["server_accuracy"])
    rows = []
    for c in made:
        rows += budget_rows(
            "bayes",
            eps,
            sd,
            [c.cid],
            "DP-SGD in the local ELBO fit (per-image gradient clip, Poisson q; releases = steps)",
            c.steps,
            c.noise,
            D.spent(c.noise, c.q, c.steps, delta),
            delta,
        )
    return row, rows


@functools.lru_cache(maxsize=256)
def _dp_sgd_noise(eps: float, delta: float, q: float, steps: int) -> float:
    from .bayes_dpsgd import calibrated_noise

    return calibrated_noise(eps, delta, q, steps)
