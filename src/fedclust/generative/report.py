"""Tables, figures and the report section of the generative stage (seed 003 ch. 5, 6, 9).

D6.2 prints no number for any of these models (figures only, or "not yet completely
operative"): every value here is a first measurement. The headline therefore compares the
federated arm with the isolated and pooled ones: D6.2's qualitative claim (the federated poor
node lies between its isolated lower bound and the good node's upper bound, Figs 6.13–6.16) as a
bound ("> 0"), and the rest as "not reported"."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from ..io import read_json, save_figure, write_table
from ..report import StageSection
from ..report.headlines import Col, Line, Spec

ARMS = ("good_isolated", "poor_isolated", "federated", "virtual", "pooled", "mean_imputation")
ARM_LABEL = {
    "good_isolated": "good node isolated (upper bound)",
    "poor_isolated": "poor node isolated (lower bound)",
    "federated": "federated (FedAvg SAVAE)",
    "virtual": "virtual patients from the good node",
    "pooled": "pooled (centralised) model",
    "mean_imputation": "column-mean imputation",
}
SAVAE_METRICS = [
    "latent_accuracy",
    "latent_auc",
    "recovered_accuracy",
    "recovered_auc",
    "recon_error",
    "impute_error",
    "c_index",
    "ibs",
]
FIRST = "first measurement (D6.2 prints no number)"


# ---------------------------------------------------------------------------------- tables
def savae_table(metrics: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One row per (data set, rate, evaluation set, arm); one column per metric."""
    long = pd.concat(list(metrics), ignore_index=True)
    wide = long.pivot_table(
        index=["dataset", "rate", "test", "arm"], columns="metric", values="value", aggfunc="first"
    ).reset_index()
    wide.columns.name = None
    wide["arm"] = pd.Categorical(wide["arm"], ARMS, ordered=True)
    wide = wide.sort_values(["dataset", "rate", "test", "arm"]).reset_index(drop=True)
    wide["arm"] = wide["arm"].astype(str)
    cols = ["dataset", "rate", "test", "arm"] + [m for m in SAVAE_METRICS if m in wide]
    return wide[cols]


def ledger_summary(ledgers: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Messages and floats per (model, unit, protocol, sender); abstentions counted."""
    rows = []
    for (model, unit), t in ledgers.items():
        if t.empty:
            continue
        g = t.assign(abstain=t["kind"] == "abstain").groupby(["protocol", "sender"], sort=False)
        for (proto, sender), part in g:
            rows.append(
                {
                    "model": model,
                    "unit": unit,
                    "protocol": proto,
                    "sender": sender,
                    "messages": int((~part["abstain"]).sum()),
                    "abstentions": int(part["abstain"].sum()),
                    "floats": int(part["floats"].sum()),
                }
            )
    return pd.DataFrame(
        rows, columns=["model", "unit", "protocol", "sender", "messages", "abstentions", "floats"]
    )


DGD_METRICS = [
    "nll_per_entry",
    "nll_per_sample",
    "impute_error",
    "kmeans_ari",
    "kmeans_fmi",
    "train_ari",
    "train_fmi",
    "test_ari",
    "test_fmi",
    "parameters",
]
DGD_ARMS = ("federated", "pooled", "isolated", "vae", "mean_imputation")


def dgd_table(metrics: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One row per (unit, arm, centre); isolated centres also averaged (centre ``mean``)."""
    long = pd.concat(list(metrics), ignore_index=True)
    long["centre"] = long["centre"].fillna("").astype(str)
    iso = long[long["arm"] == "isolated"]
    if not iso.empty:
        mean = iso.groupby(["unit", "arm", "metric"], as_index=False)["value"].mean()
        mean["centre"] = "mean"
        long = pd.concat([long, mean], ignore_index=True)
    wide = long.pivot_table(
        index=["unit", "arm", "centre"], columns="metric", values="value", aggfunc="first"
    ).reset_index()
    wide.columns.name = None
    wide["arm"] = pd.Categorical(wide["arm"], DGD_ARMS, ordered=True)
    wide = wide.sort_values(["unit", "arm", "centre"]).reset_index(drop=True)
    wide["arm"] = wide["arm"].astype(str)
    return wide[["unit", "arm", "centre"] + [m for m in DGD_METRICS if m in wide]]


def _dgd_get(wide: pd.DataFrame, unit: str, arm: str, metric: str, centre: str = "") -> float:
    sel = wide[(wide["unit"] == unit) & (wide["arm"] == arm) & (wide["centre"] == centre)]
    return float(sel[metric].iloc[0]) if len(sel) and metric in sel else float("nan")


RADIALGAN_COLUMNS = ["unit", "testbed", "alpha", "centre", "n_train", "n_test", "features",
                     "missing_features", "positive", "auc_local", "auc_augmented", "gain",
                     "virtual", "virtual_positive"]  # fmt: skip


def radialgan_table(metrics: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One row per (unit, centre): AUC without / with the augmented data and the gain."""
    t = pd.concat(list(metrics), ignore_index=True)
    return t[[c for c in RADIALGAN_COLUMNS if c in t]]


def _task_metric(wide: pd.DataFrame, dataset: str) -> str:
    """Accuracy for multi-class tasks (D6.2's "probability of detection"), AUC for a binary
    label (SF3B1: about a quarter mutated, accuracy says little)."""
    return "latent_accuracy" if dataset == "mnist" else "latent_auc"


def _get(wide: pd.DataFrame, ds: str, rate: float, test: str, arm: str, metric: str) -> float:
    sel = wide[
        (wide["dataset"] == ds)
        & (wide["rate"] == rate)
        & (wide["test"] == test)
        & (wide["arm"] == arm)
    ]
    return float(sel[metric].iloc[0]) if len(sel) and metric in sel else float("nan")


def headline_table(
    savae: pd.DataFrame | None = None,
    dgd: pd.DataFrame | None = None,
    radialgan: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The rows the section headline reads (:data:`HEADLINE`):
    ``row`` (its kind), ``quantity``, ``value``."""
    rows: list[dict[str, Any]] = []
    if savae is not None and not savae.empty:
        for (ds, rate), _ in savae.groupby(["dataset", "rate"], sort=True):
            m = _task_metric(savae, ds)
            name = m.replace("latent_", "latent ")
            fed = _get(savae, ds, rate, "corrupted", "federated", m)
            low = _get(savae, ds, rate, "corrupted", "poor_isolated", m)
            up = _get(savae, ds, rate, "clean", "good_isolated", m)
            vir = _get(savae, ds, rate, "corrupted", "virtual", m)
            poo = _get(savae, ds, rate, "corrupted", "pooled", m)
            tag = f"SAVAE {ds} r={rate:g}"
            rows += [
                {
                    "row": "savae_above_lower",
                    "quantity": f"{tag}: {name}, federated − isolated poor node",
                    "value": fed - low,
                },
                {
                    "row": "savae_below_upper",
                    "quantity": f"{tag}: {name}, good node (upper bound) − federated",
                    "value": up - fed,
                },
                {
                    "row": "savae_virtual",
                    "quantity": f"{tag}: {name}, virtual patients − isolated poor node",
                    "value": vir - low,
                },
                {
                    "row": "savae_pooled",
                    "quantity": f"{tag}: {name}, federated − pooled",
                    "value": fed - poo,
                },
            ]
            if "c_index" in savae and not np.isnan(
                _get(savae, ds, rate, "clean", "federated", "c_index")
            ):
                rows.append(
                    {
                        "row": "savae_cindex",
                        "quantity": f"{tag}: C-index of the federated SAVAE (clean test set)",
                        "value": _get(savae, ds, rate, "clean", "federated", "c_index"),
                    }
                )
    if dgd is not None and not dgd.empty:
        for unit in sorted(dgd["unit"].unique()):
            fed = _dgd_get(dgd, unit, "federated", "nll_per_entry")
            rows += [
                {
                    "row": "dgd_nll",
                    "quantity": f"DGD {unit}: held-out NLL per observed entry, federated - pooled",
                    "value": fed - _dgd_get(dgd, unit, "pooled", "nll_per_entry"),
                },
                {
                    "row": "dgd_nll_isolated",
                    "quantity": f"DGD {unit}: held-out NLL per observed "
                    "entry, federated - isolated centres (mean)",
                    "value": fed - _dgd_get(dgd, unit, "isolated", "nll_per_entry", "mean"),
                },
                {
                    "row": "dgd_vae",
                    "quantity": f"DGD {unit}: imputation error, federated DGD - "
                    "same-size VAE (pooled)",
                    "value": _dgd_get(dgd, unit, "federated", "impute_error")
                    - _dgd_get(dgd, unit, "vae", "impute_error"),
                },
                {
                    "row": "dgd_ari",
                    "quantity": f"DGD {unit}: ARI of the federated "
                    "representations (k-means) vs the reference clusters",
                    "value": _dgd_get(dgd, unit, "federated", "kmeans_ari"),
                },
            ]
    if radialgan is not None and not radialgan.empty:
        for _unit, part in radialgan.groupby("unit", sort=True):
            tb, rule = part["testbed"].iloc[0], part["alpha"].iloc[0]
            rows.append({"row": "radialgan_gain", "quantity": f"RadialGAN {tb}, alpha {rule}: "
                         f"AUC with - without augmentation, mean of {len(part)} centres",
                         "value": float(part["gain"].mean())})  # fmt: skip
    return pd.DataFrame(rows, columns=["row", "quantity", "value"])


# --------------------------------------------------------------------------------- figures
def savae_figure(wide: pd.DataFrame):
    """Fig. 6.13–6.16's bounds: the poor node's downstream score on the corrupted test set per
    arm and corruption rate (latent space solid, recovered samples dashed), the good node's on
    clean images as the upper bound."""
    import matplotlib.pyplot as plt

    sets = sorted(wide["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(5.2 * len(sets), 3.8), squeeze=False)
    colors = {
        "good_isolated": "C2",
        "poor_isolated": "C3",
        "federated": "C0",
        "virtual": "C1",
        "pooled": "C7",
    }
    for ax, ds in zip(axes[0], sets, strict=True):
        m = _task_metric(wide, ds)
        rm = m.replace("latent_", "recovered_")
        part = wide[wide["dataset"] == ds]
        rates = sorted(part["rate"].unique())
        for arm, col in colors.items():
            test = "clean" if arm == "good_isolated" else "corrupted"
            lat = [_get(part, ds, r, test, arm, m) for r in rates]
            rec = [_get(part, ds, r, test, arm, rm) for r in rates]
            ax.plot(rates, lat, "o-", color=col, label=ARM_LABEL[arm])
            ax.plot(rates, rec, "s--", color=col, alpha=0.7)
        ax.set_xlabel("corruption rate r (fraction of entries replaced by noise)")
        ax.set_ylabel(m.replace("latent_", "").replace("auc", "AUC") + " on the test set")
        ax.set_title(f"{ds}: poor node's classifier")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def digits_figure(examples: Mapping[str, np.ndarray], title: str):
    """Image panel of Figs 6.13–6.15: originals, the poor node's corrupted inputs, and each
    arm's reconstruction."""
    import matplotlib.pyplot as plt

    cols = [c for c in ("original", "corrupted", *ARMS) if c in examples]
    n = len(examples["original"])
    side = int(round(np.sqrt(examples["original"].shape[1])))
    fig, axes = plt.subplots(n, len(cols), figsize=(1.1 * len(cols), 1.1 * n + 0.6), squeeze=False)
    for j, c in enumerate(cols):
        for i in range(n):
            ax = axes[i][j]
            ax.imshow(np.asarray(examples[c][i]).reshape(side, side), cmap="gray_r", vmin=0, vmax=1)
            ax.set_xticks([]), ax.set_yticks([])
            if i == 0:
                ax.set_title(c.replace("_", "\n"), fontsize=7)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    return fig


def curves_figure(curves: pd.DataFrame, model: str):
    """Training loss per epoch (isolated, pooled) or per round (federated) of every unit."""
    import matplotlib.pyplot as plt

    keys = [c for c in ("dataset", "rate", "unit_id") if c in curves]
    groups = list(curves.groupby(keys, sort=True)) if keys else [("all", curves)]
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.2), squeeze=False)
    for ax, (key, part) in zip(axes[0], groups, strict=True):
        for arm, c in part.groupby("arm", sort=False):
            ax.plot(c["step"], c["loss"], label=f"{arm} (per {c['unit'].iloc[0]})")
        ax.set_title(
            f"{model} {key if isinstance(key, str) else ' '.join(map(str, key))}", fontsize=8
        )
        ax.set_xlabel("epoch / round")
        ax.set_ylabel("training loss")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def representations_figure(reps: Mapping[str, Mapping[str, np.ndarray]]):
    """D6.2 Fig. 9.1 D–F's view: the federated DGD's training representations (first two
    dimensions), coloured by reference cluster, with the mixture's component means."""
    import matplotlib.pyplot as plt

    units = list(reps)
    fig, axes = plt.subplots(1, len(units), figsize=(4.4 * len(units), 4.0), squeeze=False)
    for ax, unit in zip(axes[0], units, strict=True):
        r = reps[unit]
        z, lab = np.asarray(r["federated_train"]), np.asarray(r["federated_train_labels"])
        means = np.asarray(r["means"])
        ax.scatter(
            z[:, 0],
            z[:, 1] if z.shape[1] > 1 else np.zeros(len(z)),
            c=lab,
            s=6,
            cmap="tab10",
            alpha=0.7,
        )
        ax.scatter(
            means[:, 0],
            means[:, 1] if means.shape[1] > 1 else np.zeros(len(means)),
            marker="x",
            c="k",
            s=40,
            label="component means",
        )
        ax.set_title(f"DGD {unit}: federated representations", fontsize=9)
        ax.set_xlabel("z1")
        ax.set_ylabel("z2")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def radialgan_figure(table: pd.DataFrame):
    """Each centre's downstream AUC without (light) and with (dark) the RadialGAN-augmented
    data, per unit (test bed x alpha rule)."""
    import matplotlib.pyplot as plt

    units = sorted(table["unit"].unique())
    fig, axes = plt.subplots(1, len(units), figsize=(4.0 * len(units), 3.4), squeeze=False)
    for ax, unit in zip(axes[0], units, strict=True):
        part = table[table["unit"] == unit]
        pos = np.arange(len(part))
        ax.bar(pos - 0.2, part["auc_local"], 0.4, color="C7", label="own data")
        ax.bar(pos + 0.2, part["auc_augmented"], 0.4, color="C0", label="+ augmented (eq. 5.8)")
        ax.set_xticks(pos, [str(c)[:12] for c in part["centre"]], rotation=30, fontsize=7)
        lo = float(np.nanmin(part[["auc_local", "auc_augmented"]].to_numpy()))
        ax.set_ylim(max(0.0, lo - 0.1), 1.0)
        ax.set_ylabel("test AUC")
        ax.set_title(f"RadialGAN {unit}", fontsize=9)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def text(models: Sequence[str], infos: Mapping[str, list[dict]]) -> list[str]:
    """The section's paragraphs (first: what is measured and that it is a first measurement)."""
    out = [
        "Seed 003 (GenoMed4All D6.2) chapters 5, 6 and 9: federated generative models in which "
        "nodes share a common latent space, model parameters or generated data instead of "
        "patients. D6.2 reports no numbers for any of them (figures only; RadialGAN 'not yet "
        "completely operative'), so every value in this section is a first measurement; the "
        "headline compares the federated arm with the isolated and pooled ones, D6.2's "
        "qualitative claim (federated between the poor node's lower bound and the good node's "
        "upper bound) written as a bound.",
    ]
    if "savae" in models:
        inf = infos.get("savae", [])
        desc = "; ".join(
            f"{i['dataset']} r={i['rate']:g}: good {i['n_good']} / poor {i['n_poor']} / test "
            f"{i['n_test']} samples, {i['features']} features, {i['epochs']} epochs "
            f"({i['rounds']} rounds x {i['local_epochs']} local), {i['n_virtual']} virtual "
            f"patients; data: {i['source']}"
            for i in inf
        )
        out.append(
            "SAVAE (D6.2 §6.4.4): a VAE over the covariates with per-feature likelihoods "
            "(Bernoulli, Gaussian, categorical; missing entries masked out of the likelihood) and "
            "a Weibull time decoder, ELBO with the time term weighted by w; the censored "
            "log-likelihood d log f(t) + (1-d) log S(t). Good node / poor node test (D6.2 "
            "§6.6): the poor node has few samples and a fraction r of its entries replaced by "
            "binary noise (known to be missing). Arms: each node isolated (bounds), FedAvg over "
            "both nodes through the federation core, virtual patients (the good node's trained "
            "generator sends decoded prior draws, labelled by its latent classifier, once), "
            "and one pooled model. The poor node's downstream logistic regression learns from "
            "its own labelled samples (plus the virtual ones in that arm) on latent means "
            "(solid) or recovered samples (dashed), and is scored on a held-out test set "
            "corrupted the same way; the good node's upper bound is scored on the clean test "
            f"set. Units: {desc}."
        )
    if "dgd" in models:
        parts = []
        for i in infos.get("dgd", []):
            sizes = ", ".join(f"{k} {v}" for k, v in i["centres"].items())
            low = f"; below the floor: {', '.join(i['abstaining'])}" if i["abstaining"] else ""
            parts.append(
                f"{i['unit']}: {i['train']} training / {i['test']} test samples, "
                f"{i['features']} features, {len(i['centres'])} centres ({sizes}{low}), "
                f"{i['components']} components in {i['dim']} dimensions, {i['epochs']} epochs, "
                f"DGD {i['dgd_parameters']} / VAE {i['vae_parameters']} parameters; data: "
                f"{i['source']}"
            )
        desc = "; ".join(parts)
        out.append(
            "Deep Generative Decoder (D6.2 ch. 9): no encoder; a Gaussian mixture over the "
            "representation space (learnable weights, means, diagonal precisions; soft-ball, "
            "Dirichlet and log-precision hyper-priors) and a decoder, fitted with one "
            "representation per sample by MAP; the likelihood covers the observed entries only. "
            "Federated as D6.2 §9.5 plans it: decoder and mixture by FedAvg through the core, "
            "every representation stays at its centre (the ledger shows the same floats "
            "whatever a centre's size). Test samples get their representation by Adam from every "
            "component mean (the same number of steps for every model); held-out NLL = -log "
            "p(x_observed, z) at that representation. Imputation: a share of the test entries is "
            "hidden, the representation found from the rest, the hidden entries decoded; the "
            "same-size VAE (decoder of the same widths plus an encoder) encodes the test sample "
            "with the hidden entries at the column mean. Clustering: ARI / FMI against the "
            f"reference clusters of the mixture's components and of k-means on the "
            f"representations (an evaluation over the centres' representations). Units: {desc}."
        )
    if "radialgan" in models:
        parts = []
        for i in infos.get("radialgan", []):
            cs = ", ".join(
                f"{c['centre']} {c['n_train']}+{c['n_test']} rows / {c['features']} features"
                for c in i["centres"]
            )
            parts.append(f"{i['unit']}: {cs}; {i['iterations']} iterations; data: {i['source']}")
        out.append(
            "RadialGAN (D6.2 ch. 5, Yoon et al. 2018): every centre keeps its encoder F_i into "
            "the shared latent space, its decoder G_i and discriminator D_i; adversarial loss "
            "plus lambda times the cycle loss (eqs. 5.5-5.7), alpha_ij as D6.2 defines it "
            "(n_j / sum of the others, 'd62') and as the authors' released code does (1/(M-1), "
            "'authors'). Per iteration each centre's minibatch codes go to the other centres, "
            "which return the gradient of their losses with respect to those codes: the joint "
            "step of eq. 5.7 (equal to the one-process step in the tests) with the codes as "
            "the only cross-centre payload. The label is a coordinate of the code (the authors' "
            "code conditions G_i and D_i on it). After training each centre decodes the others' "
            "training codes into its own feature space (eq. 5.8) and trains a logistic "
            "regression with and without them; AUC on its own held-out rows (the paper's "
            "measure). Feature mismatch: Switzerland records no cholesterol (dropped there); in "
            "the heart data the data stage imputed missing cholesterol from the class median, "
            "so VA Long Beach's imputed values carry label information. Units: "
            + "; ".join(parts)
            + "."
        )
    return out


# ------------------------------------------------------------------------- headline, section
GEN_FIRST = "first measurement: D6.2 prints no number for these models (figures only)"


def _gen(kind: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    return lambda t: t[t["row"] == kind]


def _gen_line(kind: str, source: str, cause: str, quantity: str) -> Line:
    return Line(
        quantity,
        source=source,
        ours=Col("value", float),
        table="generative/tables/headline",
        where=_gen(kind),
        each=True,
        label=lambda s: str(s.row["quantity"]),
        cause=cause,
        note=GEN_FIRST,
    )


HEADLINE = Spec(
    doc="Seed 003 ch. 5, 6, 9 print no number: D6.2's qualitative claims become bounds; the "
    "rest are first measurements (source 'not reported').",
    lines=(
        _gen_line(
            "savae_above_lower",
            "> 0",
            "at this size the federated poor node does not beat its isolated lower bound "
            "(D6.2 Figs 6.13-6.16 show it above, as curves without numbers)",
            "SAVAE: federated - isolated poor node",
        ),
        _gen_line(
            "savae_below_upper",
            "> 0",
            "the federated poor node reaches the good node's upper bound here (D6.2: between "
            "the bounds)",
            "SAVAE: good node upper bound - federated",
        ),
        _gen_line(
            "savae_virtual",
            "> 0",
            "the virtual patients do not help the poor node at this size (D6.2 §6.5.2 expects "
            "them to; its MNIST test used the good node's real samples instead)",
            "SAVAE: virtual patients - isolated poor node",
        ),
        _gen_line("savae_pooled", "not reported", GEN_FIRST, "SAVAE: federated - pooled"),
        _gen_line("savae_cindex", "not reported", GEN_FIRST, "SAVAE: C-index, federated"),
        _gen_line("dgd_nll", "not reported", GEN_FIRST, "DGD: held-out NLL, federated - pooled"),
        _gen_line(
            "dgd_nll_isolated",
            "< 0",
            "at this size the federated decoder does not fit held-out samples better than the "
            "centres' own models",
            "DGD: held-out NLL, federated - isolated",
        ),
        _gen_line(
            "dgd_vae",
            "< 0",
            "the same-size VAE imputes better at this size (D6.2 §9.2 reports the DGD ahead of "
            "a VAE on CIFAR10 reconstruction after 50 epochs, from the DGD paper)",
            "DGD: imputation error, federated DGD - VAE",
        ),
        _gen_line("dgd_ari", "not reported", GEN_FIRST, "DGD: ARI of the representations"),
        _gen_line(
            "radialgan_gain",
            "> 0",
            "augmentation does not raise the centres' mean AUC at this size (Yoon et al. 2018 "
            "report gains; D6.2 has no RadialGAN result)",
            "RadialGAN: AUC gain from augmentation",
        ),
    ),
    source_label="D6.2 (qualitative)",
    figure=("savae_bounds",),
)


SECTION = StageSection(
    "generative",
    "Federated generative models: SAVAE, DGD, RadialGAN (seed 003 ch. 5, 6, 9)",
    65,
    HEADLINE,
)


def build_section(
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    *,
    models: list[str],
    units: Mapping[str, list[str]],
    digit_units: list[str],
) -> None:
    """Rule ``generative_report``: the merged tables, the figures and the generative section.
    ``inputs`` / ``outputs``: the rule's named files (``<model>_<key>`` per-unit lists, in the
    order of ``units[<model>]``; ``savae_digits`` in the order of ``digit_units``)."""
    out, models = SimpleNamespace(**outputs), list(models)

    def _units(model: str) -> list[str]:
        return list(units[model])

    def _read(model: str, key: str) -> list[pd.DataFrame]:
        return [pd.read_csv(p, sep="\t") for p in inputs[f"{model}_{key}"]]

    infos = {m: [read_json(p) for p in inputs[f"{m}_info"]] for m in models}
    ledgers = {}
    for m in models:
        for u, t in zip(_units(m), _read(m, "ledger"), strict=True):
            ledgers[(m, u)] = t
    write_table(out.ledger, ledger_summary(ledgers), index=False)
    tables = [
        {
            "path": out.ledger,
            "caption": "Every message of every unit by protocol and "
            "sender: messages, abstentions (a centre below generative.min_samples sends "
            "nothing) and floats. What leaves a centre is declared in "
            "fedclust.generative.protocols.",
        }
    ]
    figures = []
    savae = None
    if "savae" in models:
        savae = savae_table(_read("savae", "metrics"))
        write_table(out.savae, savae, index=False)
        tables.insert(
            0,
            {
                "path": out.savae,
                "caption": "SAVAE good node / poor node test (D6.2 "
                "§6.6): one row per data set, corruption rate r, evaluation set "
                "(clean / corrupted like the poor node) and arm. latent_* / "
                "recovered_*: the poor node's downstream logistic regression on latent"
                " means / recovered samples (the good node's own for the upper bound);"
                " recon_error on observed, impute_error on the corrupted entries "
                "(|error| in units of the test set's SD for Gaussian columns); c_index"
                " and ibs (integrated Brier score) of the Weibull time decoder.",
            },
        )
        save_figure(savae_figure(savae), out.savae_figure)
        figures.append(
            {
                "path": out.savae_figure,
                "reproduces": "D6.2 Figs 6.13-6.16 (bounds)",
                "caption": "Poor node's downstream classifier on the corrupted test set "
                "per arm vs corruption rate r: latent space (solid) and recovered samples"
                " (dashed); the good node's on clean images is the upper bound and the "
                "isolated poor node the lower bound. D6.2 shows these as curves only (no "
                "numbers). Data: " + "; ".join(sorted({i["source"] for i in infos["savae"]})) + ".",
            }
        )
        curves = pd.concat(_read("savae", "curves"), ignore_index=True)
        save_figure(curves_figure(curves, "SAVAE"), out.savae_curves)
        figures.append(
            {
                "path": out.savae_curves,
                "caption": "SAVAE training loss (-ELBO per "
                "sample) per epoch (isolated, virtual, pooled) or FedAvg round "
                "(federated, sample-weighted mean of the centres' last local epoch).",
            }
        )
        for path, unit in zip(out.savae_digits, digit_units, strict=True):
            i = _units("savae").index(unit)
            ex = dict(np.load(inputs["savae_examples"][i]))
            save_figure(digits_figure(ex, f"SAVAE {unit}: test digits"), path)
            figures.append(
                {
                    "path": path,
                    "reproduces": "D6.2 Figs 6.13-6.15 (digit panels)",
                    "caption": f"Unit {unit}: original test digits, the poor node's "
                    "corrupted input, and each arm's reconstruction (good node: from "
                    "the clean digit). Data: " + infos["savae"][i]["source"] + ".",
                }
            )
    dgd = None
    if "dgd" in models:
        dgd = dgd_table(_read("dgd", "metrics"))
        write_table(out.dgd, dgd, index=False)
        tables.insert(
            1 if savae is not None else 0,
            {
                "path": out.dgd,
                "caption": "Deep Generative Decoder: one row per unit, arm and centre (isolated "
                "centres one by one and their mean). nll_per_entry / nll_per_sample: held-out "
                "-log p(x_observed, z) at the MAP representation; impute_error: hidden test "
                "entries (|error| in units of the test set's SD); kmeans_* / train_*: ARI / FMI "
                "of k-means / the mixture's components on the training representations vs the "
                "reference clusters; test_*: the mixture's components on the test "
                "representations; parameters: the VAE's size (the DGD's is in the text).",
            },
        )
        reps = {
            u: dict(np.load(p))
            for u, p in zip(_units("dgd"), inputs["dgd_representations"], strict=True)
        }
        save_figure(representations_figure(reps), out.dgd_figure)
        figures.append(
            {
                "path": out.dgd_figure,
                "reproduces": "D6.2 Fig. 9.1 D-F (representation space)",
                "caption": "Federated DGD: the training representations (they never left their "
                "centres; gathered here for the figure only) coloured by reference cluster, "
                "with the mixture's component means. Data: "
                + "; ".join(sorted({i["source"] for i in infos["dgd"]}))
                + ".",
            }
        )
        curves = pd.concat(_read("dgd", "curves"), ignore_index=True)
        curves = curves[curves["centre"].fillna("").astype(str).isin(["", "nan"])]
        save_figure(curves_figure(curves, "DGD"), out.dgd_curves)
        figures.append(
            {
                "path": out.dgd_curves,
                "caption": "DGD training loss (-log posterior per sample) per epoch (pooled, VAE:"
                " -ELBO) or FedAvg round (federated).",
            }
        )
    rg = None
    if "radialgan" in models:
        rg = radialgan_table(_read("radialgan", "metrics"))
        write_table(out.radialgan, rg, index=False)
        tables.insert(
            len(tables) - 1,
            {
                "path": out.radialgan,
                "caption": "RadialGAN: one row per unit (test bed x alpha rule) and centre: "
                "training / test rows, features it records (missing_features: what it lacks), "
                "share of positive labels, test AUC of its logistic regression on its own rows "
                "(auc_local) and with the decoded rows of the other centres (auc_augmented), "
                "the gain, and the virtual rows with their share of positives.",
            },
        )
        save_figure(radialgan_figure(rg), out.radialgan_figure)
        figures.append(
            {
                "path": out.radialgan_figure,
                "reproduces": "D6.2 ch. 5 / Yoon et al. 2018 (per-centre AUC with augmentation;"
                " D6.2: 'not yet completely operative', no figure)",
                "caption": "Each centre's test AUC trained on its own rows vs with the "
                "RadialGAN-augmented set D~_i = D_i + G_i(F_j(D_j)) (eq. 5.8). Data: "
                + "; ".join(sorted({i["source"] for i in infos["radialgan"]}))
                + ".",
            }
        )
        curves = pd.concat(_read("radialgan", "curves"), ignore_index=True)
        save_figure(curves_figure(curves, "RadialGAN"), out.radialgan_curves)
        figures.append(
            {
                "path": out.radialgan_curves,
                "caption": "RadialGAN: sum over centres of the F/G objective (adversarial + "
                "lambda x cycle) per iteration.",
            }
        )
    head = headline_table(savae=savae, dgd=dgd, radialgan=rg)
    write_table(out.headline, head, index=False)
    tables.append(
        {
            "path": out.headline,
            "caption": "The values the headline reads (differences"
            " between arms on the poor node's task, corrupted test set).",
        }
    )
    SECTION.write(out.section, text=text(models, infos), figures=figures, tables=tables)
