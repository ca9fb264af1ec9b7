"""One unit of each experiment grid: builds the centres, runs the federated method through
:func:`fedclust.federation.federate` and the isolated / pooled baselines, returns tables.

- :func:`run_savae` — D6.2 §6.6's good node / poor node test (one data set, one corruption
  rate r): isolated good node (upper bound), isolated poor node (lower bound), FedAvg SAVAE,
  virtual patients (the good node's generator supplies the poor node once), pooled; metrics of
  the poor node's downstream classifier (latent space and recovered samples, Figs 6.13–6.16),
  reconstruction / imputation error, and for survival data the C-index and integrated Brier
  score of the Weibull time decoder.
- :func:`run_dgd` — the DGD federated (decoder + mixture by FedAvg) vs pooled vs isolated, and a
  same-size VAE: held-out NLL, imputation under masking, ARI / FMI of the representations.
- :func:`run_radialgan` — see :mod:`.radialgan_experiment`.

Every number evaluates a model on an evaluation set (never sent anywhere); every training
message passed the ledger under its protocol.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fedclust.federation import INPROCESS, Ledger, Transport, federate
from fedclust.seeds import derive_seed, rng

from . import data as D
from . import dgd as G
from . import evaluate as E
from . import likelihoods as L
from . import pooled, savae
from . import server as S
from .centre import DgdCentre, SavaeCentre
from .nets import device, get_parameters, init_module, n_parameters

log = logging.getLogger(__name__)
ARMS = ("good_isolated", "poor_isolated", "federated", "virtual", "pooled")


# ----------------------------------------------------------------------------------- helpers
@dataclass
class EvalSet:
    """A held-out set: values as the node sees them (corrupted or clean), their mask, the clean
    truth, labels, survival."""

    name: str
    x: np.ndarray
    mask: np.ndarray
    truth: np.ndarray
    y: np.ndarray
    t: np.ndarray | None
    d: np.ndarray | None


def _eval_scale(truth: np.ndarray, spec: L.FeatureSpec) -> np.ndarray:
    """Per-column error unit: the evaluation set's SD for gaussian columns, 1 otherwise."""
    sd = np.nanstd(truth, axis=0)
    g = np.array([k == "gaussian" for k in spec.kinds])
    return np.where(g & (sd > 0), sd, 1.0)


def _cat(spec: L.FeatureSpec) -> np.ndarray:
    return np.array([k == "categorical" for k in spec.kinds])


def _survival_metrics(
    model: savae.SAVAE, xs: np.ndarray, t: np.ndarray, d: np.ndarray
) -> dict[str, float]:
    lk, ll = savae.time_params(model, xs)
    risk = -np.asarray(savae.weibull.mean_time(lk, ll), float)
    grid = E.time_grid(t, d)
    surv = savae.weibull.survival_curves(grid, lk, ll)
    return {"c_index": E.c_index(t, risk, d), "ibs": E.integrated_brier(surv, grid, t, d)}


def evaluate_savae(
    node: SavaeCentre,
    sets: list[EvalSet],
    classes: np.ndarray,
    c: float,
    train_rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """The node's evaluation of its model: downstream classifiers trained on its own training
    rows (latent means; recovered samples), scored on each evaluation set; reconstruction error
    on the observed entries, imputation error on the missing ones (vs the clean truth); for a
    model with a time decoder the C-index and integrated Brier score. ``train_rows`` (x, mask,
    y): the rows the classifiers learn from when they are not the node's own."""
    model, sc, spec = node.model, node.scaler, node.spec
    if train_rows is None:
        z_tr, y_tr = node.training_latents()
        r_tr, _ = node.training_recovered()
    else:
        x_tr, m_tr, y_tr = train_rows
        xs_tr = sc.transform(x_tr)
        z_tr, r_tr = savae.embed(model, xs_tr), savae.reconstruct(model, xs_tr, m_tr)
    out = []
    for s in sets:
        xs = sc.transform(s.x)
        z = savae.embed(model, xs)
        rec = savae.reconstruct(model, xs, s.mask)
        lat = E.classify(z_tr, y_tr, z, s.y, classes, c)
        recd = E.classify(r_tr, y_tr, rec, s.y, classes, c)
        est = sc.inverse(savae.decode_mean(model, xs))
        known = ~np.isnan(s.truth)
        scale, cat = _eval_scale(s.truth, spec), _cat(spec)
        truth = np.nan_to_num(s.truth)
        m = {
            "latent_accuracy": lat["accuracy"],
            "latent_auc": lat["auc"],
            "recovered_accuracy": recd["accuracy"],
            "recovered_auc": recd["auc"],
            "recon_error": E.masked_error(est, truth, (s.mask > 0) & known, scale, cat),
            "impute_error": E.masked_error(est, truth, (s.mask == 0) & known, scale, cat),
        }
        if model.has_time and s.t is not None:
            m.update(_survival_metrics(model, xs, s.t, s.d))
        out += [{"test": s.name, "metric": k, "value": float(v)} for k, v in m.items()]
    return out


def _mean_imputation(x: np.ndarray, mask: np.ndarray, sets: list[EvalSet], spec) -> list[dict]:
    """Baseline: every missing entry filled with the node's own observed column mean (mode for
    categorical columns)."""
    obs = np.where(mask > 0, x, np.nan)
    fill = np.nanmean(obs, axis=0)
    for j in np.flatnonzero(_cat(spec)):
        vals = obs[~np.isnan(obs[:, j]), j]
        fill[j] = np.bincount(vals.astype(int)).argmax() if vals.size else 0
    fill = np.nan_to_num(fill)
    out = []
    for s in sets:
        est = np.repeat(fill[None, :], len(s.x), 0)
        known = ~np.isnan(s.truth)
        err = E.masked_error(
            est,
            np.nan_to_num(s.truth),
            (s.mask == 0) & known,
            _eval_scale(s.truth, spec),
            _cat(spec),
        )
        out.append({"test": s.name, "metric": "impute_error", "value": err})
    return out


# -------------------------------------------------------------------------------------- SAVAE
def savae_unit(dataset: str, rate: float) -> tuple[str, str]:
    """The labels a SAVAE unit's seeds derive from."""
    return (dataset, f"r{rate}")


def savae_training(sv: dict, has_time: bool) -> tuple[dict, int, int]:
    """(local training settings, FedAvg rounds, local epochs per round) of ``generative.savae``."""
    tr = sv["train"]
    train = {
        "lr": float(tr["lr"]),
        "batch_size": int(tr["batch_size"]),
        "w": float(tr["w"]) if has_time else 0.0,
        "draw": str(sv["draw"]),
    }
    return train, int(tr["rounds"]), int(tr["local_epochs"])


def savae_split(table: D.Tabular, sv: dict, dataset: str, rate: float, seed: int):
    """D6.2 §6.6's rows: ((good, poor, test) indices, (good, poor, test) tables, (the poor
    node's corrupted table, its mask))."""
    ds = sv["datasets"][dataset]
    unit = savae_unit(dataset, rate)
    idx = D.draw_disjoint(
        table.n,
        [ds["n_good"], ds["n_poor"], ds["n_test"]],
        rng(seed, "savae", *unit, "split"),
        where=f"generative.savae.datasets.{dataset}",
    )
    good, poor, test = (table.rows(i) for i in idx)
    px, pm = D.corrupt(
        poor.x, D.observed(poor.x), rate, table.spec, rng(seed, "savae", *unit, "poor"),
        str(sv["fill"]),
    )  # fmt: skip
    poor_c = D.Tabular(px, poor.names, table.spec, poor.y, poor.t, poor.d, source=poor.source)
    return idx, (good, poor, test), (poor_c, pm)


def build_savae(spec: L.FeatureSpec, arch: savae.Arch, has_time: bool, seed: int,
                unit: tuple[str, ...], dev: Any = "cpu") -> savae.SAVAE:  # fmt: skip
    """The unit's SAVAE with its seeded initial weights (every arm starts from them); a
    module-level function so a centre holding ``functools.partial(build_savae, ...)`` pickles
    (a deployment keeps the centre object between messages as bytes)."""
    make = functools.partial(savae.SAVAE, spec, arch, has_time)
    return init_module(make, seed, "savae", *unit, "init").to(dev)


def savae_centre(cid: str, table: D.Tabular, mask: np.ndarray, build, train: dict, seed: int,
                 unit: tuple[str, ...], min_samples: int) -> SavaeCentre:  # fmt: skip
    """A SAVAE node of the unit (its training seed derives from the unit and its name)."""
    return SavaeCentre(cid, table, mask, build, train, derive_seed(seed, "savae", *unit, cid),
                       min_samples)  # fmt: skip


def run_savae(
    table: D.Tabular,
    cfg: dict,
    dataset: str,
    rate: float,
    seed: int,
    transport: Transport = INPROCESS,
) -> dict[str, Any]:
    """D6.2 §6.6's good node / poor node test on ``table`` at corruption rate ``rate``.

    Returns ``metrics`` (arm × evaluation set × metric), ``curves`` (training loss per epoch or
    round), ``ledger`` (every message), ``examples`` (arrays for the image panel), ``info`` and
    ``federated_parameters`` (the FedAvg arm's final model; the deployed stage's output).
    """
    sv = cfg["savae"]
    ms = int(cfg["min_samples"])
    train, rounds, local = savae_training(sv, table.t is not None)
    epochs = rounds * local
    unit = savae_unit(dataset, rate)
    spec = table.spec
    (good_i, poor_i, test_i), (good, poor, test), (poor_c, pm) = savae_split(
        table, sv, dataset, rate, seed
    )
    fill = str(sv["fill"])
    px = poor_c.x
    tx, tm = D.corrupt(
        test.x, D.observed(test.x), rate, spec, rng(seed, "savae", *unit, "test"), fill
    )
    sets = [
        EvalSet("clean", test.x, D.observed(test.x), test.x, test.y, test.t, test.d),
        EvalSet("corrupted", tx, tm, test.x, test.y, test.t, test.d),
    ]
    classes = np.unique(table.y)
    arch = savae.Arch.from_config(sv["model"])
    has_time = table.t is not None

    dev = device(str(cfg.get("device", "auto")))

    build = functools.partial(build_savae, spec, arch, has_time, seed, unit, dev)

    def node(cid, tab, mask):
        return savae_centre(cid, tab, mask, build, train, seed, unit, ms)

    c = float(sv["classifier_c"])
    rows: list[dict] = []
    curves: list[dict] = []

    def record(arm, metrics, losses, unit_name="epoch"):
        rows.extend({"arm": arm, **m} for m in metrics)
        curves.extend(
            {"arm": arm, "step": i + 1, "unit": unit_name, "loss": float(v)}
            for i, v in enumerate(losses)
        )

    # isolated good node: the upper bound (its own data, clean)
    g_node = node("good", good, D.observed(good.x))
    g_node.standardise_locally()
    losses = g_node.train_local(epochs)
    record("good_isolated", evaluate_savae(g_node, sets, classes, c), losses)
    # isolated poor node: the lower bound
    p_node = node("poor", poor_c, pm)
    p_node.standardise_locally()
    losses = p_node.train_local(epochs)
    record("poor_isolated", evaluate_savae(p_node, sets, classes, c), losses)
    rows.extend({"arm": "mean_imputation", **m} for m in _mean_imputation(px, pm, sets, spec))
    # federated: FedAvg over the good and the poor node
    ledger = Ledger()
    fg, fp = node("good", good, D.observed(good.x)), node("poor", poor_c, pm)
    init = get_parameters(build())
    params, hist = federate(
        [fg, fp],
        lambda proxies: S.savae_fedavg(proxies, spec, init, rounds, local, ms),
        ledger=ledger,
        transport=transport,
    )
    record("federated", evaluate_savae(fp, sets, classes, c), hist.loss, "round")
    # virtual patients: the (isolated) good node's generator supplies the poor node once
    pv = node("poor", poor_c, pm)
    n_virtual = federate(
        [g_node, pv],
        lambda proxies: S.virtual_patients(proxies, "good", "poor", int(sv["n_virtual"]), ms),
        ledger=ledger,
        transport=transport,
    )
    pv.standardise_locally()
    losses = pv.train_local(epochs)
    record("virtual", evaluate_savae(pv, sets, classes, c), losses)
    # pooled: one model on the good and the poor node's rows; the poor node's classifier
    pooled_tab = D.Tabular(
        np.concatenate([good.x, px]),
        good.names,
        spec,
        np.concatenate([good.y, poor.y]),
        None if not has_time else np.concatenate([good.t, poor.t]),
        None if not has_time else np.concatenate([good.d, poor.d]),
    )
    pooled_mask = np.concatenate([D.observed(good.x), pm])
    pn, losses = pooled.savae(
        pooled_tab, pooled_mask, build, train, derive_seed(seed, "savae", *unit, "pooled"), epochs
    )
    record("pooled", evaluate_savae(pn, sets, classes, c, (px, pm, poor.y)), losses)

    metrics = pd.DataFrame(rows)
    metrics.insert(0, "rate", float(rate))
    metrics.insert(0, "dataset", dataset)
    curves_t = pd.DataFrame(curves)
    curves_t.insert(0, "rate", float(rate))
    curves_t.insert(0, "dataset", dataset)
    examples = _examples(
        table,
        sets,
        {
            "good_isolated": g_node,
            "poor_isolated": p_node,
            "federated": fp,
            "virtual": pv,
            "pooled": pn,
        },
    )
    info = {
        "dataset": dataset,
        "rate": float(rate),
        "source": table.source,
        "n_good": int(len(good_i)),
        "n_poor": int(len(poor_i)),
        "n_test": int(len(test_i)),
        "features": int(spec.n_features),
        "families": {k: int(spec.kinds.count(k)) for k in L.FAMILIES},
        "classes": int(len(classes)),
        "survival": bool(has_time),
        "epochs": int(epochs),
        "rounds": rounds,
        "local_epochs": local,
        "n_virtual": int(n_virtual),
        "parameters": n_parameters(build()),
        "fill": fill,
        "messages": int(ledger.n_messages),
        "floats": int(ledger.n_floats),
    }
    return {
        "metrics": metrics,
        "curves": curves_t,
        "ledger": ledger.table(),
        "examples": examples,
        "info": info,
        "federated_parameters": params,  # the FedAvg arm's final global model
    }


def _examples(
    table: D.Tabular, sets: list[EvalSet], nodes: dict[str, SavaeCentre], n: int = 8
) -> dict[str, np.ndarray]:
    """Image panel (Figs 6.13–6.15): original, corrupted, and each arm's reconstruction of the
    first ``n`` test images (the good node from the clean image, the others from the corrupted
    one). Empty for non-image data."""
    side = int(round(np.sqrt(table.spec.n_features)))
    if side * side != table.spec.n_features or set(table.spec.kinds) != {"bernoulli"}:
        return {}
    clean, corr = sets[0], sets[1]
    out = {"original": clean.truth[:n], "corrupted": np.where(corr.mask[:n] > 0, corr.x[:n], 0.5)}
    for arm, nd in nodes.items():
        src = clean if arm == "good_isolated" else corr
        out[arm] = savae.decode_mean(nd.model, nd.scaler.transform(src.x[:n]))
    return {k: np.asarray(v, np.float32) for k, v in out.items()}


# ---------------------------------------------------------------------------------------- DGD
def _split_centres(
    table: D.Tabular, how: str, n_centres: int, gen: np.random.Generator
) -> list[tuple[str, np.ndarray]]:
    """(centre id, row indices): the table's ``groups`` column (``column``) or a uniform random
    split into ``n_centres`` (``uniform``)."""
    if how == "column":
        if table.groups is None:
            raise ValueError("this data set has no centre column")
        return [(str(g), np.flatnonzero(table.groups == g)) for g in sorted(set(table.groups))]
    perm = gen.permutation(table.n)
    return [(f"c{i:02d}", np.sort(part)) for i, part in enumerate(np.array_split(perm, n_centres))]


def _dgd_eval(
    model: G.DGD,
    scaler: D.Scaler,
    test_x: np.ndarray,
    test_m: np.ndarray,
    imp_m: np.ndarray,
    y_test: np.ndarray,
    steps: int,
    lr: float,
    spec,
) -> tuple[dict[str, float], np.ndarray]:
    """Held-out NLL (MAP representations from every component mean, ``steps`` Adam steps),
    imputation of the entries hidden by ``imp_m`` (representation found from the rest), ARI /
    FMI of the test representations' components."""
    xs = scaler.transform(test_x)
    z, nll = G.find_representations(model, xs, test_m, steps, lr)
    zi, _ = G.find_representations(model, xs, imp_m, steps, lr)
    est = scaler.inverse(G.impute(model, zi))
    hidden = (test_m > 0) & (imp_m == 0)
    out = {
        "nll_per_sample": float(np.mean(nll)),
        "nll_per_entry": float(np.sum(nll) / max(float(test_m.sum()), 1.0)),
        "impute_error": E.masked_error(
            est, np.nan_to_num(test_x), hidden, _eval_scale(test_x, spec), _cat(spec)
        ),
    }
    agr = E.agreement(G.assign(model, z), y_test)
    out.update({f"test_{k}": v for k, v in agr.items()})
    return out, z


def dgd_split(table: D.Tabular, dg: dict, unit: str, seed: int):
    """(the unit's table (subsampled to ``n_samples``), [(centre id, training rows)], test
    rows): every centre holds out ``test_fraction`` of its rows."""
    ds = dg["datasets"][unit]
    g = rng(seed, "dgd", unit, "split")
    if ds.get("n_samples") and table.n > int(ds["n_samples"]):
        table = table.rows(np.sort(g.permutation(table.n)[: int(ds["n_samples"])]))
    train_parts, test_idx = [], []
    for cid, rows in _split_centres(table, str(ds["split"]), int(ds["n_centres"]), g):
        rows = g.permutation(rows)
        k = int(round(float(ds["test_fraction"]) * len(rows)))
        test_idx.append(rows[:k])
        train_parts.append((cid, np.sort(rows[k:])))
    return table, train_parts, np.sort(np.concatenate(test_idx))


def dgd_prior(dg: dict, n_labels: int) -> G.Prior:
    """The mixture prior (``components``: null = the number of reference clusters)."""
    return G.Prior.from_config(dg["prior"], int(dg.get("components") or n_labels))


def build_dgd(spec: L.FeatureSpec, prior: G.Prior, hidden: tuple[int, ...], act: str,
              seed: int, unit: str, dev: Any = "cpu") -> G.DGD:  # fmt: skip
    """The unit's DGD (decoder + mixture) with its seeded initial weights; module-level so a
    centre holding ``functools.partial(build_dgd, ...)`` pickles (see :func:`build_savae`)."""
    make = functools.partial(G.DGD, spec, prior, tuple(hidden), act)
    return init_module(make, seed, "dgd", unit, "init").to(dev)


def dgd_centre(cid: str, x: np.ndarray, spec: L.FeatureSpec, build, train: G.Training,
               seed: int, unit: str, min_samples: int) -> DgdCentre:  # fmt: skip
    """A DGD centre of the unit (its training seed derives from the unit and its name)."""
    return DgdCentre(cid, x, D.observed(x), spec, build, train,
                     derive_seed(seed, "dgd", unit, cid), min_samples)  # fmt: skip


def run_dgd(
    table: D.Tabular, cfg: dict, unit: str, seed: int, transport: Transport = INPROCESS
) -> dict[str, Any]:
    """The DGD on ``table``: federated (decoder + mixture by FedAvg, representations kept at
    the centres) vs pooled vs each centre isolated, and a same-size VAE (pooled)."""
    dg = cfg["dgd"]
    ds = dg["datasets"][unit]
    ms = int(cfg["min_samples"])
    table, train_parts, test_i = dgd_split(table, dg, unit, seed)
    spec = table.spec
    train_i = np.sort(np.concatenate([r for _, r in train_parts]))
    test = table.rows(test_i)
    test_m = D.observed(test.x)
    imp_m = test_m * (
        rng(seed, "dgd", unit, "mask").random(test_m.shape) >= float(dg["mask_rate"])
    ).astype(np.float32)
    labels = np.unique(table.y)
    prior = dgd_prior(dg, len(labels))
    hidden = tuple(int(h) for h in dg["model"]["hidden"])
    act = str(dg["model"]["activation"])
    train = G.Training.from_config(dg["train"])
    rounds, local = int(dg["train"]["rounds"]), int(dg["train"]["local_epochs"])
    epochs = rounds * local
    dev = device(str(cfg.get("device", "auto")))
    build = functools.partial(build_dgd, spec, prior, hidden, act, seed, unit, dev)

    rows: list[dict] = []
    curves: list[dict] = []

    def record(arm, metrics, losses, unit_name="epoch", centre=""):
        rows.extend(
            {"arm": arm, "centre": centre, "metric": k, "value": float(v)}
            for k, v in metrics.items()
        )
        curves.extend(
            {"arm": arm, "centre": centre, "step": i + 1, "unit": unit_name, "loss": float(v)}
            for i, v in enumerate(losses)
        )

    n_clusters = len(labels)

    def train_agreement(model, z, y):
        """ARI / FMI vs the reference labels of the mixture's components and of k-means
        (k = number of reference clusters) on the training representations (evaluation)."""
        out = {f"train_{k}": v for k, v in E.agreement(G.assign(model, z), y).items()}
        km = E.kmeans_labels(z, n_clusters, derive_seed(seed, "dgd", unit, "kmeans"))
        out.update({f"kmeans_{k}": v for k, v in E.agreement(km, y).items()})
        return out

    # federated
    ledger = Ledger()
    centres = [dgd_centre(cid, table.x[r], spec, build, train, seed, unit, ms)
               for cid, r in train_parts]  # fmt: skip
    init = get_parameters(build())
    params, hist = federate(
        centres,
        lambda px: S.dgd_fedavg(px, spec, init, rounds, local, ms),
        ledger=ledger,
        transport=transport,
    )
    active = [c for c in centres if c.n_samples >= ms]
    ref = active[0]
    m, z_test = _dgd_eval(
        ref.model, ref.scaler, test.x, test_m, imp_m, test.y, train.test_steps, train.rep_lr, spec
    )
    # the training representations stay at their centres: each scores its own assignments
    # (an evaluation; the labels never travel either)
    z_train = np.concatenate([c.representations() for c in active])
    y_train = np.concatenate(
        [table.y[r] for (cid, r), c in zip(train_parts, centres, strict=True) if c in active]
    )
    m.update(train_agreement(ref.model, z_train, y_train))
    record("federated", m, hist.loss, "round")
    # pooled
    pn, losses = pooled.dgd(
        table.x[train_i],
        D.observed(table.x[train_i]),
        spec,
        build,
        train,
        derive_seed(seed, "dgd", unit, "pooled"),
        epochs,
    )
    mp, z_pooled = _dgd_eval(
        pn.model, pn.scaler, test.x, test_m, imp_m, test.y, train.test_steps, train.rep_lr, spec
    )
    mp.update(train_agreement(pn.model, pn.representations(), table.y[train_i]))
    record("pooled", mp, losses)
    # each centre isolated
    for cid, r in train_parts:
        if len(r) < ms:
            continue
        node = dgd_centre(cid, table.x[r], spec, build, train, seed, unit, ms)
        node.standardise_locally()
        losses = node.train_local(epochs)
        mi, _ = _dgd_eval(
            node.model,
            node.scaler,
            test.x,
            test_m,
            imp_m,
            test.y,
            train.test_steps,
            train.rep_lr,
            spec,
        )
        mi.update(train_agreement(node.model, node.representations(), table.y[r]))
        record("isolated", mi, losses, centre=cid)
    # a VAE of the same size (decoder as the DGD's, plus an encoder), pooled
    arch = savae.Arch(latent=prior.dim, hidden=hidden, time_hidden=(), activation=act)
    vtrain = {"lr": train.lr, "batch_size": train.batch_size, "w": 0.0, "draw": "mean"}
    vae_tab = D.Tabular(table.x[train_i], table.names, spec, table.y[train_i])

    def build_vae():
        return init_module(
            lambda: savae.SAVAE(spec, arch, time=False), seed, "dgd", unit, "vae"
        ).to(dev)

    vn, losses = pooled.savae(
        vae_tab,
        D.observed(vae_tab.x),
        build_vae,
        vtrain,
        derive_seed(seed, "dgd", unit, "vae"),
        epochs,
    )
    xs = vn.scaler.transform(np.where(imp_m > 0, test.x, np.nan))
    est = vn.scaler.inverse(savae.decode_mean(vn.model, xs))
    hidden_m = (test_m > 0) & (imp_m == 0)
    record(
        "vae",
        {
            "impute_error": E.masked_error(
                est, np.nan_to_num(test.x), hidden_m, _eval_scale(test.x, spec), _cat(spec)
            ),
            "parameters": n_parameters(vn.model),
        },
        losses,
    )
    mean_err = _mean_imputation(
        table.x[train_i],
        D.observed(table.x[train_i]),
        [EvalSet("masked", test.x, imp_m, test.x, test.y, None, None)],
        spec,
    )[0]["value"]
    record("mean_imputation", {"impute_error": mean_err}, [])
    metrics = pd.DataFrame(rows)
    metrics.insert(0, "unit", unit)
    curves_t = pd.DataFrame(curves, columns=["arm", "centre", "step", "unit", "loss"])
    curves_t.insert(0, "unit_id", unit)
    info = {
        "unit": unit,
        "data": ds["data"],
        "source": table.source,
        "samples": int(table.n),
        "features": int(spec.n_features),
        "train": int(len(train_i)),
        "test": int(len(test_i)),
        "centres": {cid: int(len(r)) for cid, r in train_parts},
        "abstaining": [c.cid for c in centres if c.n_samples < ms],
        "components": prior.components,
        "dim": prior.dim,
        "labels": int(len(labels)),
        "epochs": epochs,
        "rounds": rounds,
        "local_epochs": local,
        "test_steps": train.test_steps,
        "mask_rate": float(dg["mask_rate"]),
        "dgd_parameters": n_parameters(build()),
        "vae_parameters": n_parameters(vn.model),
        "messages": int(ledger.n_messages),
        "floats": int(ledger.n_floats),
        "representation_floats": int(z_train.size),
    }
    reps = {
        "federated_train": z_train,
        "federated_train_labels": y_train,
        "federated_test": z_test,
        "pooled_test": z_pooled,
        "test_labels": test.y,
        "means": ref.model.gmm.means.detach().cpu().numpy(),
    }
    return {
        "metrics": metrics,
        "curves": curves_t,
        "ledger": ledger.table(),
        "info": info,
        "representations": {k: np.asarray(v) for k, v in reps.items()},
        "federated_parameters": params,  # the federated arm's final decoder + mixture
    }


def run_dgd_units(
    cfg: dict,
    unit_ids: list[str],
    files: dict,
    seed: int,
    sources: dict,
    transport: Transport = INPROCESS,
) -> list[dict[str, Any]]:
    """Every DGD unit of one job."""
    out = []
    for unit in unit_ids:
        ds = cfg["dgd"]["datasets"][unit]
        rs = cfg["dgd"].get("rnaseq", {})
        kw = {}
        if ds["data"] == "rnaseq":
            kw = {
                "cohorts": files["cohorts"],
                "label": rs["label"],
                "group": rs["group"],
                "max_genes": rs.get("max_genes"),
            }
        table = load_table(ds["data"], cfg, files, seed, sources, **kw)
        log.info("DGD unit %s: %d samples x %d features", unit, table.n, table.spec.n_features)
        out.append(run_dgd(table, cfg, unit, seed, transport))
    return out


# ---------------------------------------------------------------------------------- RadialGAN
def radialgan_domains(
    table: D.Tabular, tb: dict, seed: int, testbed: str
) -> list[tuple[str, np.ndarray, list[int]]]:
    """(centre, rows, feature columns) of a test bed: the table's centre column (heart: the
    source hospital) or a uniform random split; each centre's own feature set (``drop``: named
    columns a centre lacks, e.g. Switzerland's cholesterol; ``drop_fraction``: a random share
    of the columns removed per centre, the IPSS-M column subsets)."""
    g = rng(seed, "radialgan", testbed, "domains")
    if str(tb["split"]) == "column":
        parts = _split_centres(table, "column", 0, g)
    else:
        parts = _split_centres(table, "uniform", int(tb["n_centres"]), g)
    out = []
    p = table.spec.n_features
    for cid, rows in parts:
        cols = list(range(p))
        for name in (tb.get("drop") or {}).get(cid, []):
            if name not in table.names:
                raise ValueError(f"{name!r} is not a feature of test bed {testbed!r}")
            cols.remove(table.names.index(name))
        frac = float(tb.get("drop_fraction") or 0.0)
        if frac > 0:
            k = int(round(frac * len(cols)))
            gone = set(g.choice(cols, size=k, replace=False).tolist())
            cols = [c for c in cols if c not in gone]
        out.append((cid, rows, cols))
    return out


def radialgan_arch(rg: dict) -> Any:
    """The Domain architecture of ``generative.radialgan``."""
    from . import radialgan as R

    return R.Arch(int(rg["latent"]), tuple(int(h) for h in rg["hidden"]), str(rg["activation"]))


def radialgan_training(rg: dict) -> dict[str, Any]:
    """A RadialGAN centre's training settings (``lr``, λ, the GAN loss, the classifier's C)."""
    return {
        "lr": float(rg["train"]["lr"]),
        "lam": float(rg["lam"]),
        "gan_loss": str(rg["gan_loss"]),
        "classifier_c": float(rg["classifier_c"]),
    }


def build_radialgan(p: int, arch: Any, labels: str, seed: int, testbed: str, cid: str) -> Any:
    """Centre ``cid``'s F, G, D for ``p`` features with their seeded initial weights (a
    module-level function: the deployed centre builds the same from its file)."""
    from . import radialgan as R

    return init_module(lambda: R.Domain(p, arch, labels), seed, "radialgan", testbed, cid)


def radialgan_centres(
    table: D.Tabular, cfg: dict, unit: str, seed: int
) -> tuple[list[Any], list[dict[str, Any]]]:
    """The centres of RadialGAN unit ``unit`` (test bed × α rule: their own rows, feature sets,
    train / test split) and a row of facts per centre (counts, features, missing features)."""
    from sklearn.model_selection import train_test_split

    from .centre import RadialCentre

    rg = cfg["radialgan"]
    testbed, _ = unit.rsplit("_", 1)
    tb = rg["testbeds"][testbed]
    ms = int(cfg["min_samples"])
    arch = radialgan_arch(rg)
    train = radialgan_training(rg)
    centres, rows_info = [], []
    for cid, rows, cols in radialgan_domains(table, tb, seed, testbed):
        y = table.y[rows]
        strat = y if min(np.bincount(y, minlength=2)) >= 2 else None
        tr, te = train_test_split(
            np.arange(len(rows)),
            test_size=float(rg["test_fraction"]),
            random_state=derive_seed(seed, "radialgan", testbed, cid) % 2**31,
            stratify=strat,
        )
        x = table.x[np.ix_(rows, cols)]
        build = functools.partial(
            build_radialgan, arch=arch, labels=str(rg["labels"]), seed=seed, testbed=testbed,
            cid=cid,
        )  # fmt: skip
        centres.append(
            RadialCentre(
                cid,
                x[tr],
                y[tr],
                x[te],
                y[te],
                build,
                train,
                derive_seed(seed, "radialgan", testbed, cid, "batches"),
                ms,
            )
        )
        rows_info.append(
            {
                "centre": cid,
                "n_train": len(tr),
                "n_test": len(te),
                "features": len(cols),
                "missing_features": ",".join(
                    table.names[c] for c in range(table.spec.n_features) if c not in cols
                )[:200],
                "positive": float(np.mean(y)),
            }
        )
    return centres, rows_info


def run_radialgan(
    table: D.Tabular, cfg: dict, unit: str, seed: int, transport: Transport = INPROCESS
) -> dict[str, Any]:
    """RadialGAN on one test bed with one α rule: every centre's downstream AUC on its own test
    rows, trained without and with the augmented data (eq. 5.8)."""
    from . import radialgan as R

    rg = cfg["radialgan"]
    testbed, rule = unit.rsplit("_", 1)
    ms = int(cfg["min_samples"])
    arch = radialgan_arch(rg)
    centres, rows_info = radialgan_centres(table, cfg, unit, seed)
    ledger = Ledger()
    res = federate(
        centres,
        lambda px: S.radialgan(
            px, int(rg["train"]["iterations"]), int(rg["train"]["batch_size"]), rule, ms
        ),
        ledger=ledger,
        transport=transport,
    )
    out = []
    for info in rows_info:
        ev = res["evaluation"].get(info["centre"])
        row = {"unit": unit, "testbed": testbed, "alpha": rule, **info}
        if ev is None:
            row.update(auc_local=np.nan, auc_augmented=np.nan, virtual=0, virtual_positive=np.nan)
        else:
            row.update(
                {k: ev[k] for k in ("auc_local", "auc_augmented", "virtual", "virtual_positive")}
            )
        row["gain"] = row["auc_augmented"] - row["auc_local"]
        out.append(row)
    curves = pd.DataFrame(
        {
            "unit_id": unit,
            "arm": "radialgan",
            "step": np.arange(1, len(res["losses"]) + 1),
            "unit": "iteration",
            "loss": res["losses"],
        }
    )
    info = {
        "unit": unit,
        "testbed": testbed,
        "alpha": rule,
        "source": table.source,
        "centres": rows_info,
        "iterations": int(rg["train"]["iterations"]),
        "latent": arch.latent,
        "lam": float(rg["lam"]),
        "gan_loss": str(rg["gan_loss"]),
        "labels": str(rg["labels"]),
        "messages": int(ledger.n_messages),
        "floats": int(ledger.n_floats),
        "released_codes": res["released"],
        "alpha_centres": list(res["sizes"]),
        "alpha_matrix": R.alpha(list(res["sizes"].values()), rule).round(4).tolist()
        if res["sizes"]
        else [],
    }
    return {"metrics": pd.DataFrame(out), "curves": curves, "ledger": ledger.table(), "info": info}


def run_radialgan_units(
    cfg: dict,
    unit_ids: list[str],
    files: dict,
    seed: int,
    sources: dict,
    transport: Transport = INPROCESS,
) -> list[dict[str, Any]]:
    """Every RadialGAN unit of one job (each test bed loaded once)."""
    tables: dict[str, D.Tabular] = {}
    out = []
    for unit in unit_ids:
        testbed = unit.rsplit("_", 1)[0]
        tb = cfg["radialgan"]["testbeds"][testbed]
        if testbed not in tables:
            t = load_table(tb["data"], cfg, files, seed, sources, group=tb.get("group", "source"))
            if tb.get("n_samples") and t.n > int(tb["n_samples"]):
                g = rng(seed, "radialgan", testbed, "subset")
                t = t.rows(np.sort(g.permutation(t.n)[: int(tb["n_samples"])]))
            tables[testbed] = t
        log.info("RadialGAN unit %s: %d samples", unit, tables[testbed].n)
        out.append(run_radialgan(tables[testbed], cfg, unit, seed, transport))
    return out


# ------------------------------------------------------------------------- units of a job
def load_table(kind: str, cfg: dict, files: dict, seed: int, sources: dict, **kw) -> D.Tabular:
    """The data set ``kind`` from the job's input files (``files``: the rule's named inputs)."""
    if kind == "mnist":
        return D.load_mnist(files["mnist_features"], files["mnist_obs"], sources["mnist"])
    if kind == "mds":
        ipssm = {k: files[k] for k in ("clinical", "mut", "cna")} if "clinical" in files else None
        return D.load_mds(cfg["mds"], seed, ipssm, sources["mds"])
    if kind == "heart":
        return D.load_heart(
            files["heart_features"], files["heart_obs"], kw["group"], sources["heart"]
        )
    if kind == "rnaseq":
        return D.load_rnaseq(
            files["vst"],
            files["rnaseq_obs"],
            kw["cohorts"],
            kw["label"],
            kw.get("max_genes"),
            kw["group"],
            sources["rnaseq"],
        )
    raise ValueError(f"unknown data set kind {kind!r}")


def run_savae_units(
    cfg: dict,
    unit_ids: list[str],
    files: dict,
    seed: int,
    sources: dict,
    transport: Transport = INPROCESS,
) -> list[dict[str, Any]]:
    """Every SAVAE unit of one job (each data set loaded once)."""
    from .workflow import parse_savae_unit

    tables: dict[str, D.Tabular] = {}
    out = []
    for unit in unit_ids:
        ds, rate = parse_savae_unit(unit)
        if ds not in tables:
            tables[ds] = load_table(ds, cfg, files, seed, sources)
        log.info(
            "SAVAE unit %s: %d samples x %d features",
            unit,
            tables[ds].n,
            tables[ds].spec.n_features,
        )
        out.append(run_savae(tables[ds], cfg, ds, rate, seed, transport))
    return out
