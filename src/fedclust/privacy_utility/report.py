"""Tables, figures and the section of the privacy–utility stage (issue 24): its headline
(:data:`HEADLINE`, the metric at the largest ε against the same method without noise) and the
section builder of rule ``privacy_utility_report`` (:func:`build_section`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from ..io import save_figure, write_table
from ..report import Section, StageSection
from ..report.headlines import Col, Line, Sel, Spec, read_frame
from .experiment import ATTACK_METHODS, HEADLINE_METRICS

#: what each method's headline metric is, for captions
METRIC_NAMES = {
    "fmi": "FMI with the pooled clustering (k clusters)",
    "fmi_reference": "FMI with the reference labels",
    "sup_distance": "sup |S(t) − S_pooled(t)| on the grid",
    "c_index": "blind-test C-index",
    "auc": "test AUC (held-out rows: heart, all hospitals; boosting, pooled)",
    "accuracy": "Hungarian accuracy (reference labels)",
    "logrank": "OS log-rank statistic between the clusters",
    "median_rel_error": "attack: median relative reconstruction error",
    "breach_rate": "attack: share of rows reconstructed within 20 %",
    "objective_gap": "relative objective gap (f(z) − f*)/|f*| to the pooled optimum",
    "diverged": "share of runs whose model went non-finite (C-index 0.5 recorded)",
    "recon_error": "reconstruction error on clean held-out rows (SD units; lower is better)",
    "hac_fmi": "FMI of ward HAC on the top-N VST with the non-private federated one",
    "top_overlap": "top-N genes shared with the non-private federated run",
    "attack_success": "attack (no secure aggregation): share of patients reconstructed ≤ 20 %",
    "attack_record_error": "attack: median relative error of a patient's reconstructed row",
    "attack_bin_accuracy": "attack: share of a patient's feature bins recovered",
    "attack_label_accuracy": "attack: share of patients' labels recovered",
    "test_accuracy": "test accuracy of the global model (pooled test images)",
    "pi_accuracy": "attack: sex inferred from the releases, test accuracy (attacker knows Q)",
    "pi_accuracy_invariant": "attack: sex inferred, test accuracy (projection-invariant attacker)",
    "recon_rel_error": "attack: median relative error of MMD-reconstructed rows",
    "recon_pinv_rel_error": "attack: median relative error of y Q⁺ (attacker knows Q)",
}
TITLES = {
    "dp_lloyd": "Federated DP-Lloyd k-means (MDS features, secure sum + central noise)",
    "hac": "HAC simultaneous sharing (seed 001) with privatised centroids",
    "km": "Kaplan–Meier from noisy secure sums of count tables",
    "survival": "Survival Weights Averaging (D6.2) with central DP-FedAvg",
    "heart": "Heart FL (seed 004) with central DP-FedAvg",
    "dec": "DEC TSAE + centroid release (seed 000) with DP",
    "known_io": "Known input–output attack (seed 001) on privatised perturbation",
    "admm": "Consensus ADMM (seed 003) with iterates clipped and noised at the centre",
    "boosting": "Federated gradient boosting (seed 003) with noisy gradient histograms",
    "generative": "SAVAE FedAvg (seed 003, good node / poor node) with central DP-FedAvg",
    "fedprep": "Federated RNA-seq preprocessing (size factors, VST, top-N) with noisy sums",
    "fedcref": "FedCRef (seed 002) with central DP-FedAvg on the group models",
    "bayes": "PVI (seed 003 ch. 4), DP at each centre: noise on Δη; local: DP-SGD in the ELBO fit",
    "property_inference": "Property-inference attack (seed 001, sex) on privatised projections",
    "reconstruction": "Reconstruction attack (seed 001, MMD matching) on privatised projections",
}


def summary(curves: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and number of seeds per (method, arm, metric, ε)."""
    g = curves.groupby(["method", "arm", "metric", "epsilon"], sort=True)["value"]
    out = g.agg(["mean", "std", "count"]).reset_index()
    return out.rename(columns={"count": "seeds"})


def thresholds(summ: pd.DataFrame, budget: pd.DataFrame, within: float = 0.05) -> pd.DataFrame:
    """Per method and private arm: the non-private value (ε = ∞), the value at the largest
    finite ε, and the smallest ε of the grid from which on the mean headline metric stays
    within ``within`` of the non-private one (relative for higher-is-better metrics, absolute
    for the KM distance; for the attack: from which on its median reconstruction error is
    ≤ ``within``, i.e. it succeeds) — ``rule`` says which. ``epsilon_spent``: the mean ε each
    centre spent at that grid point (the accountant's)."""
    rows = []
    for method, (metric, higher) in HEADLINE_METRICS.items():
        sm = summ[(summ["method"] == method) & (summ["metric"] == metric)]
        if sm.empty:
            continue
        arms = [a for a in ("federated", "federated_local", "attack") if a in set(sm["arm"])]
        for arm in arms:
            a = sm[sm["arm"] == arm].set_index("epsilon")["mean"].sort_index()
            ref_arm = "federated" if arm == "federated_local" else arm
            ref_s = sm[(sm["arm"] == ref_arm) & np.isinf(sm["epsilon"])]["mean"]
            if ref_s.empty:
                continue
            ref = float(ref_s.iloc[0])
            finite = a[np.isfinite(a.index)]
            if method in ATTACK_METHODS[1:]:  # the attack as good as without noise
                ok = finite >= (1 - within) * ref if higher else finite <= ref + within
                rule = f"attack within {within:g} of its success without noise"
            elif method == "known_io":
                ok = finite <= within  # the attack succeeds (error ≤ 5 %) from this ε on
                rule = f"median reconstruction error ≤ {within:g} (the attack succeeds)"
            elif higher:
                ok = finite >= (1 - within) * ref
                rule = f"≥ (1 − {within:g}) × non-private"
            else:
                ok = finite <= ref + within
                rule = f"≤ non-private + {within:g}"
            eps_ok = math.nan
            for e in sorted(finite.index, reverse=True):  # the smallest ε from which on all hold
                if not ok[e]:
                    break
                eps_ok = float(e)
            spent = budget[(budget["method"] == method) & (budget["epsilon"] == eps_ok)]
            top = float(finite.index.max()) if len(finite) else math.nan
            rows.append(
                {
                    "method": method,
                    "arm": arm,
                    "metric": metric,
                    "rule": rule,
                    "nonprivate": ref,
                    "epsilon_max": top,
                    "at_epsilon_max": float(finite[top]) if len(finite) else math.nan,
                    "epsilon_within": eps_ok,
                    "epsilon_spent": float(spent["epsilon_spent"].mean())
                    if len(spent)
                    else math.nan,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "method",
            "arm",
            "metric",
            "rule",
            "nonprivate",
            "epsilon_max",
            "at_epsilon_max",
            "epsilon_within",
            "epsilon_spent",
        ],
    )


def budget_table(budget: pd.DataFrame) -> pd.DataFrame:
    """ε spent per centre per method (mean over seeds) at each target ε."""
    if budget.empty:
        return budget
    g = budget.groupby(["method", "epsilon", "centre", "mechanism"], sort=True)
    out = g.agg(
        releases=("releases", "first"),
        noise_multiplier=("noise_multiplier", "mean"),
        epsilon_spent=("epsilon_spent", "mean"),
        delta=("delta", "first"),
    )
    return out.reset_index()


def _x(eps: Sequence[float], finite_max: float) -> np.ndarray:
    """ε on a log axis with ∞ drawn one octave right of the largest finite value."""
    return np.array([finite_max * 2 if math.isinf(e) else e for e in eps], dtype=float)


def figure(method: str, summ: pd.DataFrame):
    """The method's metric(s) over ε: mean ± sd over seeds per private arm; the pooled and
    isolated baselines as horizontal lines."""
    import matplotlib.pyplot as plt

    sm = summ[summ["method"] == method]
    metrics = [m for m in METRIC_NAMES if m in set(sm["metric"])]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 3.4), squeeze=False)
    finite = sm["epsilon"][np.isfinite(sm["epsilon"])]
    fmax = float(finite.max()) if len(finite) else 1.0
    for ax, metric in zip(axes[0], metrics, strict=True):
        d = sm[sm["metric"] == metric]
        for i, arm in enumerate(
            a for a in ("federated", "federated_local", "attack") if a in set(d["arm"])
        ):
            r = d[d["arm"] == arm].sort_values("epsilon")
            x = _x(r["epsilon"], fmax)
            ax.errorbar(
                x,
                r["mean"],
                yerr=r["std"].fillna(0),
                marker="o",
                capsize=3,
                color=f"C{i}",
                label=arm.replace("_", " "),
            )
        for j, arm in enumerate(("pooled", "isolated", "chance")):
            r = d[d["arm"] == arm]
            if len(r):
                ax.axhline(
                    float(r["mean"].iloc[0]),
                    color=f"C{j + 3}",
                    ls="--",
                    lw=1,
                    label="chance" if arm == "chance" else f"{arm} (non-private)",
                )
        ticks = sorted(set(_x(d["epsilon"], fmax)))
        ax.set_xscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels(["∞" if t > fmax else f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("ε (δ fixed)")
        if metric in (
            "objective_gap",
            "attack_record_error",
            "recon_rel_error",
            "recon_pinv_rel_error",
        ):  # spans orders of magnitude
            ax.set_yscale("symlog", linthresh=1e-3)
            ax.set_ylim(bottom=0)
        ax.set_title(METRIC_NAMES[metric], fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(TITLES.get(method, method), fontsize=10)
    fig.tight_layout()
    return fig


#: the curious server's attack panels (:mod:`.attacks`), appended to the data captions
_ATTACK = {
    "admm": lambda m: (
        ". Attack panels: the same run with secure aggregation off, the server reconstructs "
        "every patient's standardised row and target from its centre's iterates, knowing the "
        "centre's other rows (differential privacy's adversary; a success is a relative error "
        "≤ 0.2; chance: the best fixed guess); with secure aggregation on, the server holds "
        "masked shares only. Round 0's moments, not privatised, give the row exactly by the "
        "same differencing at every ε"
        if m["attack"]
        else ""
    ),
    "boosting": lambda m: (
        ". Attack panels: on the run's recorded messages the server recovers every training "
        "patient's bin per feature (root histograms averaged over the trees, minus the others' "
        "counts) and label (tree 1's Σg), knowing the centre's other rows (differential "
        "privacy's adversary; chance: the best constant guess)"
        if m["attack"]
        else ""
    ),
}

#: per method: what its figure's data are, from its config section (schema-filled)
_DATA = {
    "dp_lloyd": lambda m: (
        f"simulated/real MDS features over the {m['split']} centres, k = {m['k']}, "
        f"{m['iterations']} iterations, rows clipped to ‖x‖ ≤ {m['bound']}"
    ),
    "hac": lambda m: (
        f"cohort {m['cohort']} ({m['preprocessing']}), centres by region, n_min = {m['n_min']}, "
        f"{m['linkage']} linkage, k = {m['k']}; centred rows clipped to {m['bound']} (raw rows "
        f"to {m['raw_bound']} for the mean)"
    ),
    "km": lambda m: (
        f"MDS {m['endpoint']} over the {m['split']} centres, public grid of {m['step']} years "
        f"up to {m['max']}"
    ),
    "survival": lambda m: (
        f"survival cohort, endpoint {m['endpoint']}, scenario {m['scenario']}, the stage's "
        f"first grid point; updates clipped to {m['clip']}"
    ),
    "heart": lambda m: (
        f"heart data, five hospitals, {m['rounds']} rounds × {m['epochs']} epoch(s); updates "
        f"clipped to {m['clip']}"
    ),
    "dec": lambda m: (
        f"MDS over the {m['split']} centres, {m['ae_rounds']} TSAE rounds (reduced), "
        f"{m['release_share']} of ε for the centroid release, embeddings clipped to {m['bound']}"
    ),
    "admm": lambda m: (
        f"{m['problem']} on the bundled {m['dataset']} data (real), {m['n_blocks']} equal "
        f"centres, λ = {m['lam']}, ρ = {m['rho']}, {m['iterations']} iterations (releases), "
        f"iterates x_i + w_i clipped to {m['bound']} (Δ₂ = 2·bound, noise at each centre); "
        "isolated: each centre's own optimum on the pooled objective; round 0's "
        "standardisation moments are not privatised" + _ATTACK["admm"](m)
    ),
    "boosting": lambda m: (
        f"bundled breast-cancer data (real), {m['n_centres']} equal centres, {m['trees']} "
        f"trees of depth {m['max_depth']} (the boosting stage's histogram protocol, floor 1), "
        "Gaussian noise at each centre on Σg, Σh and counts (|g| ≤ 1, h ≤ 1/4); pooled: "
        "xgboost on the pooled binned rows, isolated: each centre's own xgboost (mean AUC); "
        "the grid (round 0) and which bins are non-empty are not privatised"
        + _ATTACK["boosting"](m)
    ),
    "generative": lambda m: (
        f"SIMULATED MDS cohort (generative.mds), good node {m['n_good']} rows, poor node "
        f"{m['n_poor']} rows ({m['rate']} of its entries corrupted), {m['n_test']} held-out "
        f"rows, {m['rounds']} FedAvg rounds × {m['local_epochs']} local epochs (reduced); "
        f"updates clipped to {m['clip']}, noise once on the secure sum; pooled: one SAVAE on "
        "both nodes' rows, isolated: the poor node alone; the standardisation moments "
        "(round 0) are not privatised"
    ),
    "fedprep": lambda m: (
        f"raw counts of cohort {m['cohort']} (first {m['genes']} genes, reduced size), the "
        f"{m['split']} split's centres; top {m['top_genes']} genes, ward HAC into {m['k']} "
        "clusters; per-sample entries clipped (log counts, relative deviations, 1/s, VST "
        "deviations), noise at each centre on six sums, genewise dispersions by moments; "
        "pooled: pooled pydeseq2, isolated: each centre alone (size-weighted); the centres' "
        "sample counts are not privatised"
    ),
    "fedcref": lambda m: (
        f"{m['dataset']} glyphs (real), {m['n_clients']} label-skewed clients × "
        f"{m['samples_per_class']} samples per class, dirty-uniform start {m['dirtiness']}, "
        f"θ = {m['theta']}, AE {m['hidden']}, {m['max_iterations']} iteration(s) × "
        f"{m['rounds']} group FedAvg rounds (reduced size); member updates clipped to "
        f"{m['clip']}, noise once on each group's secure sum; accuracy = mean Hungarian "
        "accuracy of the refined clusters over clients; pooled: k-means (K = |U|) on the "
        "pooled samples, isolated: the stage's local-only variant. NOT privatised: Step 1's "
        "local autoencoders (sent all-to-all), the association statistics, the membership "
        "table and the status messages — ε covers the group models only"
    ),
    "bayes": lambda m: (
        f"{m['source']} images (real), the bayes stage's {m['method']} schedule on the "
        f"{m['split']} split, {m['rounds']} rounds × {m['epochs']} local epoch(s), hidden "
        f"layers {m['hidden'] or 'none (Bayesian logistic regression)'} (reduced size); "
        + _bayes_mechanisms(m)
        + "; pooled: centralised BBB, isolated: BBB on each centre's images "
        f"({m['pooled_epochs']} epochs, mean accuracy); the counts and local metrics of the "
        "message are not privatised"
    ),
    "known_io": lambda m: (
        f"cohort {m['cohort']}, first {m['genes']} genes, rows clipped to {m['bound']}, the "
        f"attacker knows {m['fraction']} of the pairs"
    ),
    "property_inference": lambda m: (
        f"cohort {m['cohort']} raw counts, attacker 60 % + 20 % validation / centres 20 % of the "
        f"rows, each side's own {m['preprocessing']} ({m['genes']} genes, at most "
        f"{m['max_genes'] or 'all'}), {m['projection']} projection (k = {m['k']}); each released "
        f"row clipped to {m['bound']} plus Gaussian noise (Δ₂ = 2·bound, one release per row); "
        f"the attacks stage's sex classifier (width {m['d_nn']}, {m['epochs']} epochs, reduced "
        "size); chance: the test rows' majority share"
    ),
    "reconstruction": lambda m: (
        f"cohort {m['cohort']} raw counts split 50/50 attacker / centres, each side's own "
        f"{m['preprocessing']} (at most {m['max_genes'] or 'all'} genes), Gaussian projection "
        f"k = {m['k']}; each released row clipped to {m['bound']} plus Gaussian noise (Δ₂ = "
        f"2·bound, one release per row); the attacks stage's MMD decoder (linear, pseudo-"
        f"inverse start, {m['epochs']} epochs, reduced size) and y Q⁺ beside it; chance: every "
        "row guessed as the attacker's mean row"
    ),
}


def _bayes_mechanisms(m: dict[str, Any]) -> str:
    """Which DP-PVI mechanism(s) the bayes curves show (privacy_utility.bayes.mechanisms)."""
    mech = list(m.get("mechanisms") or ["update_noise"])
    out = []
    if "update_noise" in mech:
        out.append(
            f"federated: each centre's released Δη (natural parameters) clipped to {m['clip']} "
            "with noise at the centre (Δ₂ = 2·clip)"
        )
    if "dp_sgd" in mech:
        loc = ", ".join(f"{k} {v}" for k, v in sorted((m.get("sgd_local") or {}).items()))
        out.append(
            "federated local: DP-SGD inside each centre's local ELBO fit (each image's gradient "
            f"of the data term clipped to {m['sgd_clip']}, Gaussian noise, Poisson sampling"
            + (f"; {loc}" if loc else "")
            + "; Opacus' RDP accountant over every step of every round; the released Δη is "
            "post-processing, the KL term to the cavity is not clipped)"
        )
    return "; ".join(out)


def caption(method: str, cfg: dict[str, Any]) -> str:
    """The figure caption of ``method`` (``cfg``: the schema-filled ``privacy_utility``)."""
    seeds, eps = (
        int(cfg["seeds"]),
        ", ".join("∞" if e is None else f"{e:g}" for e in cfg["epsilons"]),
    )
    data = _DATA[method](cfg[method])
    if method in ATTACK_METHODS[1:]:
        return (
            f"{TITLES[method]}: the attack's success over ε ∈ {{{eps}}} at δ = "
            f"{cfg['delta']:g}, mean ± sd over {seeds} seed(s); dashed: chance. Data: {data}. "
            "∞ = the attacks stage's attack on the same rows without noise."
        )
    return (
        f"{TITLES[method]}: headline metric over ε ∈ {{{eps}}} at δ = {cfg['delta']:g}, mean ± "
        f"sd over {seeds} seed(s); dashed: the non-private pooled and isolated baselines. "
        f"Data: {data}. ∞ = the method without noise (secure aggregation on)."
    )


THRESHOLD_CAPTION = (
    "Per method and private arm: the headline metric without noise (ε = inf, secure aggregation "
    "on), at the largest ε of the grid, and epsilon_within: the smallest ε of the grid from which "
    "on the mean metric stays within {within} of the non-private value (rule column; NaN: at no ε "
    "of the grid). For the attack: the smallest ε from which on it succeeds (median error ≤ "
    "{within}). epsilon_spent: the ε each centre spent there (accountant)."
)


def section_text(cfg: dict[str, Any], methods: Sequence[str]) -> list[str]:
    eps = ", ".join("∞" if e is None else f"{e:g}" for e in cfg["epsilons"])
    return [
        "What secure aggregation and differential privacy cost each federated method (issue "
        f"24): the headline metric over ε ∈ {{{eps}}} at δ = {cfg['delta']:g}, "
        f"{int(cfg['seeds'])} seed(s), beside the pooled and isolated baselines (no noise). "
        "Secure aggregation (pairwise X25519 masks modulo 2^64, src/fedclust/federation/"
        "secagg.py) carries every summing exchange: the server sees uniform shares and only the "
        "sum; it changes no number (ε = ∞ is the method as its stage runs it, to fixed-point "
        "precision). Differential privacy adds Gaussian noise calibrated by Opacus' RDP "
        "accountant to spend exactly ε over all the releases of one run (composition; the "
        "budget table lists ε per centre).",
        "Mechanisms. Central DP-FedAvg (heart FL, survival Weights Averaging, DEC's TSAE): each "
        "centre clips its round update to an L2 bound, the server adds N(0, (z·C)²) once to the "
        "secure sum; the unit of privacy is a whole centre, so with five to ten centres the "
        "noise on the mean update is large (z·C/K per coordinate). Centroid and count releases "
        "(DP-Lloyd, HAC simultaneous sharing, DEC centroids, Kaplan–Meier tables): rows clipped "
        "to a public bound, per-cluster sums (Δ₂ = bound) and counts (Δ₂ = 1) noised once — "
        "after the secure sum (DP-Lloyd, KM, the HAC centring mean) or at the centre (each "
        "centre's own cut clusters). DEC's local arm trains the TSAE by DP-SGD at every centre "
        "(record-level; Opacus' accounting) when privacy_utility.dec.mechanisms lists it. "
        "Consensus ADMM: each centre clips the vector it releases per iteration (x_i + w_i) "
        "to an L2 ball of radius C and adds N(0, (z·2C)²) itself (Δ₂ = 2C: one record can move "
        "the clipped iterate anywhere in the ball); the server sees only the secure sum. "
        "Federated boosting: each centre adds N(0, (z·Δ₂)²) to its gradient and hessian sums "
        "and counts per tree level (logistic loss: |g| ≤ 1, h ≤ 1/4; a level's histogram over "
        "d features has Δ₂ = √d), composed over trees × (2 + 6·depth) releases. SAVAE "
        "(generative): central DP-FedAvg over its two nodes (noise z·C/2 per coordinate of the "
        "mean update). Federated RNA-seq preprocessing (fedprep): every sample's log counts, "
        "relative deviations of its normalised counts from the public geometric mean (and their "
        "squares), 1/s and VST deviations (and squares) clipped entry-wise; each centre adds "
        "N(0, (z·Δ₂)²) to its six sums (Δ₂ = bound·√genes), dispersions by moments. "
        "FedCRef: its group FedAvg under central DP-FedAvg (member updates clipped at the "
        "member, noise once on the group's secure sum; its local "
        "models and association messages stay in the clear). PVI: each centre clips its "
        "released change of natural parameters Δη and adds N(0, (z·2C)²) itself; its local arm "
        "(privacy_utility.bayes.mechanisms: dp_sgd; Heikkilä et al. 2022) instead runs the "
        "local ELBO fit as DP-SGD (per-image gradients clipped, Poisson sampling, Opacus' RDP "
        "accountant over all steps and rounds) and releases Δη as post-processing.",
        "Reading the curves: the threshold table gives, per method, the smallest ε of the grid "
        "from which on the metric stays within 5 % of its non-private value. The known "
        "input–output attack of seed 001 is re-run on perturbed rows released with their own "
        "Gaussian noise: its reconstruction error over ε shows what the budget buys. The "
        "ADMM and boosting figures put the curious server's differencing attack beside the "
        "utility (src/fedclust/privacy_utility/attacks.py): with the other patients known, it "
        "reconstructs every patient without noise; the attack panels show its success over ε "
        "against chance (the best fixed guess). The seed-001 property-inference (sex) and "
        "reconstruction (MMD matching) attacks run on projected rows released like the known "
        "input–output attack's (clipped, Gaussian, one release per row; off in the default "
        "config): their success over ε beside chance. Sizes are "
        "the default config's reduced ones (simulated data where the stage simulates it); "
        "config/thesis.yaml runs the full grid.",
    ]


# ---------------------------------------------------------------------------------- headline
def _pu_tol(s: Sel) -> float:
    src = float(s.row["nonprivate"])
    absolute = str(s.row["metric"]) in ("sup_distance", "objective_gap")  # lower is better
    return 0.05 if absolute else 0.05 * max(abs(src), 1e-12)


def _pu_cause(s: Sel) -> str:
    e = s.row.get("epsilon_within")
    where = (
        f"within 5 % from ε = {float(e):g} on"
        if pd.notna(e)
        else "not within 5 % at any ε of the grid"
    )
    return (
        f"(ε, δ)-DP noise calibrated for the whole run ({s.row['arm']}): {where}; the "
        "source column is the same method without noise"
    )


HEADLINE = Spec(
    doc="Issue 24 has no source values: the reference is the method without noise (ε = ∞).",
    lines=(
        Line(
            "metric at the largest ε vs without noise",
            source=Col("nonprivate", float),
            ours=Col("at_epsilon_max", float),
            table="thresholds",
            cause=_pu_cause,
            where=lambda t: t[~t["method"].isin(ATTACK_METHODS)],
            each=True,
            label=lambda s: (
                f"{s.row['method']} ({str(s.row['arm']).replace('_', ' ')}): {s.row['metric']} "
                f"at ε = {float(s.row['epsilon_max']):g}"
            ),
            note=lambda s: (
                f"within 5 % from ε = {float(s.row['epsilon_within']):g}"
                if pd.notna(s.row.get("epsilon_within"))
                else "not within 5 % at any ε of the grid"
            ),
            tol=_pu_tol,
        ),
    ),
    source_label="same method, no noise (ε = ∞)",
    figure=("heart", "dec", ""),
)

SECTION = StageSection(
    "privacy_utility",
    "Privacy–utility: secure aggregation and differential privacy (issue 24)",
    95,
    HEADLINE,
)


# ----------------------------------------------------------------------------------- section
def _merged_budget(paths: Sequence[str]) -> pd.DataFrame:
    """The methods' budget tables in one (the first, empty one where no method spent ε)."""
    budgets = [read_frame(p) for p in paths]
    filled = [b for b in budgets if len(b)]
    return pd.concat(filled, ignore_index=True) if filled else budgets[0]


def build_section(
    inputs: Mapping[str, Any], outputs: Mapping[str, Any], *, cfg: dict, methods: Sequence[str]
) -> Section:
    """Rule ``privacy_utility_report``: the merged curves, summary, thresholds and ε budget, one
    figure per method and the section (``inputs``: the methods' ``curve`` and ``budget`` files;
    ``outputs``: the rule's named files, ``figures`` in the order of ``methods``); return it."""
    inp, out = SimpleNamespace(**inputs), SimpleNamespace(**outputs)
    curves = pd.concat([read_frame(p) for p in inp.curve], ignore_index=True)
    budget = _merged_budget(inp.budget)
    summ = summary(curves)
    thr = thresholds(summ, budget, float(cfg["within"]))
    write_table(out.curves, curves, index=False)
    write_table(out.summary, summ, index=False)
    write_table(out.thresholds, thr, index=False)
    write_table(out.budget, budget_table(budget), index=False)
    figures = []
    for method, path in zip(methods, out.figures, strict=True):
        save_figure(figure(method, summ), path)
        figures.append(
            {
                "path": path,
                "reproduces": "issue 24 (no source figure)",
                "caption": caption(method, cfg),
            }
        )
    tables = [
        {"path": out.thresholds, "caption": THRESHOLD_CAPTION.format(within=cfg["within"])},
        {
            "path": out.summary,
            "caption": "Every method's metrics per arm and ε: mean, sd and "
            "number of seeds (ε = inf: no noise; pooled and isolated: non-private baselines; "
            "attack: the curious server's attack, chance: its best fixed guess).",
        },
        {
            "path": out.budget,
            "caption": "ε spent per centre per method at each target ε (mean "
            "over seeds): the accountant's value for all the releases of the run (Opacus' RDP "
            "analysis), its mechanism, number of releases and noise multiplier.",
        },
        {"path": out.curves, "caption": "Every run: method, arm, ε, seed, metric, value."},
    ]
    return SECTION.write(
        out.section, text=section_text(cfg, methods), figures=figures, tables=tables
    )
