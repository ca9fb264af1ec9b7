"""The hac stage's report (seed 001): figures, Table 4.1 and the other tables, the section and
its headline (:data:`HEADLINE`)."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..io import read_table, save_figure, write_result_and_benchmark, write_table
from ..report import StageSection, by_name
from ..report.headlines import Agg, Col, Line, Sel, Spec
from . import appendix
from . import figures as fg


def _nmin_cause(s: Sel) -> str:
    cohorts = ", ".join(sorted(map(str, s.frame["cohort"].unique()))) if "cohort" in s.frame else ""
    return (
        "gradual sharing at n_min = 10 % depends on how many members of a cluster one center "
        f"holds, the thesis' ≥ 25 condition, for this run's cohorts {cohorts} in the cohort table"
    )


_NMIN = {"table": "nmin10", "cause": _nmin_cause}
HEADLINE = Spec(
    doc="Seed 001 §4.2.3 (FMI > 0.95 for gradual sharing up to 10 %, CCC > 0.8 average "
    "linkage), the exact methods (= pooled), Appendix A.",
    lines=(
        Line(
            "gradual sharing FMI at n_min = 10 %, average linkage (mean over cohorts)",
            source="> 0.95",
            ours=Agg("fmi", "mean"),
            where={"linkage": "average"},
            note="thesis: real TCGA; ours: simulated cohorts",
            **_NMIN,
        ),
        Line(
            "gradual sharing CCC at n_min = 10 %, average linkage",
            source="> 0.8",
            ours=Agg("ccc", "mean"),
            where={"linkage": "average"},
            **_NMIN,
        ),
        Line(
            "gradual sharing CCC at n_min = 10 %, single linkage",
            source="> 0.9",
            ours=Agg("ccc", "mean"),
            where={"linkage": "single"},
            **_NMIN,
        ),
        Line(
            "exact methods: largest |federated − pooled| distance",
            source=0,
            ours=Agg("max_abs_dist_error", "max"),
            table="exact",
            cause="floating-point error above 1e-8: the exact methods differ from pooled only by "
            "rounding, so this is a defect to report",
            note="genewise (Alg. 3) and orthogonal perturbation (Alg. 2); 0 in exact arithmetic",
            tol=1e-8,
        ),
        Line(
            "App. A: mean CCC of shuffled trees with the outlier",
            source=0.71,
            ours=Col("mean CCC (ours)"),
            table="outlier",
            cause=lambda s: (
                f"another draw of {s.row.get('shufflings', 'the')} shufflings than the thesis'"
            ),
            pick="last",
        ),
    ),
    source_label="thesis (seed 001)",
    figure=("nmin10", "gradual"),
)

SECTION = StageSection("hac", "Federated hierarchical clustering (seed 001)", 20, HEADLINE)


def _cat(paths) -> pd.DataFrame:
    return pd.concat([read_table(p).reset_index() for p in paths], ignore_index=True)


def _figure_cohorts(cfg: dict, cohorts: list[str]) -> list[str]:
    """Fig 4.4's cohorts: hac.gradual.figure_cohorts (thesis: its five), else every cohort."""
    chosen = list(cfg["gradual"]["figure_cohorts"] or cohorts)
    missing = sorted(set(chosen) - set(cohorts))
    if missing:
        raise ConfigError(
            f"hac.gradual.figure_cohorts names cohorts that are not clustered: {missing}",
            where="config hac.gradual.figure_cohorts",
            fix=f"use cohorts among {cohorts} (hac.cohorts / data.rnaseq.cohorts), or null",
        )
    return chosen


def _shape_text(shape: pd.DataFrame, grad: pd.DataFrame) -> str:
    """Which cohorts meet the thesis' condition, and what that does to FMI (cohort table)."""
    if "meets ≥ 25 condition" not in shape:
        return (
            "Cohort shapes (sizes, smallest / biggest center share) are in the cohort table; "
            "the thesis reports smallest centers of 0.59–7.9 % and biggest of 22–58 %."
        )
    top = grad[grad.n_min == grad.groupby("cohort").n_min.transform("max")]
    fmi_top = top.groupby("cohort").fmi.mean()
    fmi_25 = grad[grad.n_min <= 25].groupby("cohort").fmi.mean()
    parts = []
    for _, r in shape.iterrows():
        c = r["cohort"]
        parts.append(
            f"{c} ({r['n']} samples, centers {r['smallest center %']}–"
            f"{r['biggest center %']} %, largest cluster in one center "
            f"{r['largest cluster in one center']}: ≥ 25 condition "
            f"{'met' if r['meets ≥ 25 condition'] else 'not met'}, "
            f"{r['clusters with ≥ 25 in a center']} of {r['clusters']} clusters reach 25 and "
            f"{r['clusters with ≥ n_min(10 %) in a center']} reach n_min = 10 % "
            f"= {r['n_min = 10 %']} in some center; mean FMI over panels and linkages "
            f"{fmi_25.get(c, float('nan')):.2f} for n_min ≤ 25 and "
            f"{fmi_top.get(c, float('nan')):.2f} at its largest n_min)"
        )
    return (
        "Two kinds of simulated cohort (cohort table): a TCGA-like shape (data.rnaseq.simulate "
        "shape tcga: center sizes from the real TSS → region table, subtype shares like TCGA "
        "BRCA PAM50, a cohort size like SKCM/PRAD) and the hard case (shape random: a few random "
        "sites per region with Dirichlet weights, so most region × cluster cells hold a "
        "handful of samples). The thesis' condition is that an important cluster has ≥ 25 "
        "samples in one center (n_min up to 10 % must stay below it, bimodal rule); the hard "
        "case breaks it on purpose, which is where FMI falls. " + "; ".join(parts) + ". "
        "Where the 10 % point lies above the per-center counts of most clusters (with 7 "
        "regions few subtype × region cells reach 10 % of a cohort) FMI drops there as in the "
        "bimodal toy; the thesis' real cohorts keep FMI > 0.95 up to 10 %, which a "
        "region-shaped simulation with PAM50-like shares does not reproduce."
    )


def build_section(
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    *,
    cfg: dict,
    cohorts: list[str],
    config_name: str,
    seed: int,
) -> None:
    """Rule ``hac_report``: the figures (seed 001 Figs 3.1–4.13, App. A), Table 4.1 and the
    other tables, and the hac section. ``inputs``/``outputs``: the rule's named files."""
    inp, out = SimpleNamespace(**inputs), SimpleNamespace(**outputs)
    where = f"cohorts {', '.join(cohorts)} ({config_name})"
    bimodal, toyproj, minsk = (
        read_table(p).reset_index() for p in (inp.bimodal, inp.toy_projection, inp.min_sketch)
    )
    # benchmark copies = the result tables plus their timing columns (Table 4.1 reports seconds)
    grad, grad_skipped = fg.split_skipped(_cat(inp.gradual_bench))
    simu, simu_skipped = fg.split_skipped(_cat(inp.simultaneous))
    skipped = pd.concat(
        [grad_skipped.assign(method="gradual"), simu_skipped.assign(method="simultaneous")],
        ignore_index=True,
    )
    cols = ["method", "cohort", "prep", "metric", "linkage", "n_min", "skip_reason"]
    skipped = skipped.reindex(columns=cols)
    write_table(out.skipped, skipped, index=False)
    cuts = fg.cuts_summary(_cat(inp.cuts), grad)
    write_table(out.cuts, cuts, index=False)
    proj, exact = _cat(inp.projection_bench), _cat(inp.exact)
    figs = by_name(out.figures)

    save_figure(fg.pca(_cat(inp.pca)), figs["pca"])
    save_figure(fg.bimodal(bimodal, seed), figs["bimodal"])
    save_figure(fg.simultaneous(simu), figs["simultaneous"])
    fig44 = _figure_cohorts(cfg, cohorts)
    save_figure(fg.gradual(grad[grad.cohort.isin(fig44)]), figs["gradual"])
    fraction = float(cfg["gradual"]["fraction"])
    obs_of = by_name(inp.obs, parts=2)
    obs = pd.concat(
        [read_table(obs_of[f"{c}/obs"]).reset_index().assign(cohort=c) for c in cohorts],
        ignore_index=True,
    )
    shape = fg.cohort_shape(obs, fraction)
    write_table(out.cohorts, shape, index=False)
    z_inv, zp_inv, inv_meta = appendix.inversion_example(seed)
    save_figure(fg.inversions(z_inv, zp_inv, inv_meta), figs["inversions"])
    outlier_runs = int(cfg["toy"]["outlier_runs"])
    demo = appendix.outlier_demo(seed, runs=outlier_runs)
    x_out, is_out = appendix.outlier_data(seed)
    save_figure(
        fg.outlier(x_out, is_out, appendix.pooled_linkage(x_out, "average"), demo), figs["outlier"]
    )
    outlier_table = pd.DataFrame(
        {
            "comparison": ["without the outlier", "with the outlier (merged last)"],
            "mean CCC (ours)": [
                demo.ccc_without_outlier.mean(),
                demo.ccc_with_outlier.mean(),
            ],
            "mean CCC (thesis App. A)": [8.9e-5, 0.71],
            "shufflings": [len(demo), len(demo)],
        }
    )
    write_table(out.outlier, outlier_table, index=False)
    nmin10 = fg.nmin10_table(grad)
    save_figure(fg.nmin10(nmin10), figs["nmin10"])
    save_figure(fg.monotone(grad), figs["monotone"])
    save_figure(fg.toy_projection(toyproj), figs["toy_projection"])
    save_figure(fg.min_sketch(minsk), figs["min_sketch"])
    save_figure(fg.projection_cohorts(proj), figs["projection_cohorts"])
    save_figure(fg.projection_error(proj), figs["projection_error"])
    save_figure(fg.projection_metrics(proj), figs["projection_metrics"])
    write_table(out.nmin10, nmin10, index=False)
    table41 = fg.table41(grad, simu, proj, exact, cfg)
    write_result_and_benchmark(out.table41, out.table41_bench, table41)
    write_table(out.exact, exact, index=False)

    cap = {
        "pca": (
            "Figs 3.1–3.2",
            "Cumulative explained variance of PCA per number of components, size-factor "
            f"normalised vs VST data; {where}. Thesis: size factors are captured by far fewer "
            "components than VST.",
        ),
        "bimodal": (
            "Figs 4.1–4.2",
            "Bimodal toy (2 modes at distance 1, σ = 0.1, 50 points each, 3 centers balanced per "
            "mode). Left: data coloured by center. Right: CCC (gradual sharing vs pooled) vs "
            f"n_min, mean over {cfg['toy']['runs']} runs. Thesis: CCC ≈ 1, then a step to "
            "≈ 0.4–0.5 at n_min = 18.",
        ),
        "simultaneous": (
            "Fig 4.3",
            f"Simultaneous sharing (preprocessing {cfg['simultaneous']['preprocessing']}, "
            f"Euclidean): CCC and FMI (mean over k = 2…{cfg['k_max']}) vs minimum cluster size; "
            f"{where}. Thesis: LUSC, decent at n_min = 2, collapse by ≈ 15.",
        ),
        "gradual": (
            "Fig 4.4",
            "Gradual sharing: CCC and FMI (mean over the last 10 merges) vs n_min up to 10 % of "
            "the cohort, per preprocessing × metric panel; line = mean, bands = 10–90 % and "
            f"25–75 % quantiles over the cohorts {', '.join(fig44)} (thesis: its five "
            "similarly-sized cohorts COAD, LUAD, LUSC, PRAD, SKCM). 'average' = the thesis' δ "
            "bookkeeping, 'average (δ≈d)' (dashed) = approximation.",
        ),
        "nmin10": (
            "Fig 4.5",
            f"Gradual sharing at n_min = 10 % of each cohort (the largest n_min that ran), VST, "
            f"Euclidean; {where}. 'average' = thesis δ bookkeeping, 'average (δ≈d)' = "
            "approximation.",
        ),
        "inversions": (
            "Fig 4.6",
            "A federated dendrogram with inversions (gradual sharing on the bimodal toy, the run "
            f"with the most inversions: {inv_meta['method']} linkage, n_min = "
            f"{inv_meta['n_min']}, {inv_meta['inversions']} merges lower than a child), the same "
            "tree with monotone heights enforced (the Fig 4.7 post-process), and the pooled "
            "tree. Inversions make merge order and heights hard to read (thesis §4.2.3.3).",
        ),
        "outlier": (
            "Appendix A (Fig A.1)",
            "Why the CCC is complemented by FMI and relative error: 3 blobs and one stark outlier "
            "(left), its pooled average-linkage dendrogram (middle; the outlier merges last), "
            f"and the CCC of {len(demo)} trees that keep every pooled merge height but merge "
            "random pairs (right): without the outlier mean CCC "
            f"{demo.ccc_without_outlier.mean():.2g} (thesis 8.9e-5); with the outlier forced "
            f"into the last merge {demo.ccc_with_outlier.mean():.2f} (thesis 0.71; the exact "
            "value depends on how far the outlier lies, here at (22, 22); the thesis does not "
            "say).",
        ),
        "monotone": (
            "Fig 4.7",
            "Mean CCC(enforced monotone) − CCC(original) of gradual sharing over cohorts and "
            f"panels vs n_min; {where}.",
        ),
        "toy_projection": (
            "Figs 4.8–4.9",
            f"Random projections on toy data ({cfg['toy']['n']} points, d = {cfg['toy']['dim']}): "
            "5 Gaussian blobs σ = 0.1 and uniform; CCC and ARI (5 clusters) vs sketch size, mean "
            f"over {cfg['toy']['runs']} runs (thesis: 100).",
        ),
        "min_sketch": (
            "Fig 4.10",
            f"Smallest tested sketch size with mean CCC > 0.95 ({cfg['toy']['spread_runs']} runs, "
            f"{cfg['toy']['spread_points']} points from 5 blobs) vs blob spread σ; missing = "
            "not reached within the tested sizes.",
        ),
        "projection_cohorts": (
            "Fig 4.11",
            "Random projections, VST, Euclidean: CCC, FMI and pooled-vs-projected distance "
            f"correlation vs sketch size (mean over seeds); {where}.",
        ),
        "projection_error": (
            "Fig 4.12",
            "Mean relative cophenetic error of random projections, size factors, Euclidean, vs "
            f"sketch size; {where} (thesis: BRCA).",
        ),
        "projection_metrics": (
            "Fig 4.13",
            "Random projections on VST data across metrics (Euclidean: Gaussian; cityblock: Cauchy "
            f"with the {cfg['projection']['estimator']} estimator, and the median estimator for "
            "comparison when enabled — beyond the thesis; cosine: normalised Gaussian): "
            f"CCC and FMI vs sketch size; {where} (thesis: PAAD).",
        ),
    }
    figures = [
        {"path": figs[k], "caption": c, "reproduces": f"seed 001 {r}"} for k, (r, c) in cap.items()
    ]
    text = [
        "Federated agglomerative clustering (seed 001, Nilsson 2025): genewise (Alg. 3, exact), "
        "centroid-based samplewise with simultaneous (§3.3.2) and gradual sharing (Alg. 4), "
        "random projections (Alg. 5) and orthogonal perturbation (Alg. 2, exact). Every metric "
        "compares the federated dendrogram with scipy's pooled one (same linkage and metric).",
        f"Data: {where}; centers = regions from obs.tsv. The default configuration uses simulated "
        "cohorts and reduced grids (few seeds); thesis.yaml runs the TCGA cohorts and full grids.",
        "Thesis values for comparison (TCGA, §4.2.3): gradual sharing FMI(last 10 merges) > 0.95 "
        "for every preprocessing, metric and n_min tested; CCC > 0.9 (single) and > 0.8 "
        "(average); complete and Ward vary between cohorts. The thesis' own rule (bimodal toy, "
        "Figs 4.1–4.2) is that n_min must stay below the largest per-center count of an "
        "important cluster spread over several centers; where a simulated cohort has fewer "
        "members of every cluster per center than 10 % of its size, the 10 % point collapses "
        "exactly as the toy does at n_min = 18.",
        "Implementation notes: gradual sharing runs as a multi-round protocol: each center "
        "object holds only its own samples and its distances (local clusters × local and global "
        "clusters), the server only the global × global distances it received; every candidate "
        "minimum, merge, centroid (≥ n_min samples, enforced by the ledger) and distance "
        "correction is a ledger message. Average linkage keeps the thesis' bookkeeping: the "
        "approximated part δ of each distance is stored per center and replaced exactly when a "
        "centroid is published (checked against a brute-force replay); 'average (δ≈d)' is the "
        "earlier approximation that takes δ as the current distance, shown beside it in Figs "
        "4.4/4.5; "
        "centroid/Ward distances are recomputed from what the computing party can see (own "
        "points, published centroids, other centers' unshared points at the public centroid). "
        "Invariants tested against scipy: n_min = 1 and a single center give the pooled tree "
        "for all five linkages; genewise and orthogonal perturbation equal pooled distances to "
        "1e-10. Messages counted by the ledger are in Table 4.1.",
    ]
    text.append(_shape_text(shape, grad))
    if len(skipped):
        text.append(
            f"Skipped settings: {len(skipped)} (method × cohort × panel × linkage × n_min) had "
            "n_min above the largest center, so no center could share anything; they are "
            "listed in the skipped-settings table and absent from the figures (issue 17)."
        )
    if "abstentions" in simu and simu.abstentions.sum():
        text.append(
            "Abstentions (simultaneous sharing): a center smaller than n_min sends nothing and "
            f"its samples are left out ({int(simu.abstentions.sum())} center-runs, "
            f"{int(simu.samples_left_out.sum())} sample-runs in total); those runs are compared "
            "with the pooled tree of the same samples."
        )
    tables = [
        {"path": out.table41, "caption": "Table 4.1 with measured numbers (this run)."},
        {
            "path": out.cuts,
            "caption": "Flat cuts per k (k = 2 … k_max) at the largest n_min run per cohort: "
            "FMI / ARI of the federated vs the pooled cut, and the silhouette (on the panel's "
            "metric) and Calinski–Harabasz index (Euclidean) of the federated and the pooled "
            "cut; mean over cohorts.",
        },
        {
            "path": out.skipped,
            "caption": "Settings skipped because n_min exceeds every center (none: empty).",
        },
        {
            "path": out.cohorts,
            "caption": "Cohort shapes: size, number of centers, smallest / biggest center share "
            "(thesis, real TCGA: 0.59–7.9 % / 22–58 %) and, for simulated cohorts, the largest "
            "count of one planted cluster in one center vs the thesis' ≥ 25 condition.",
        },
        {
            "path": out.outlier,
            "caption": "Appendix A: mean CCC of shuffled-merge trees (pooled heights, random "
            "pairs) without and with the outlier, ours vs the thesis.",
        },
        {"path": out.nmin10, "caption": "Gradual sharing at n_min = 10 % (Fig 4.5 numbers)."},
        {
            "path": out.exact,
            "caption": "Exact methods (genewise Alg. 3, orthogonal perturbation Alg. 2): largest "
            "deviation from pooled distances and cophenetic distances, and communication.",
        },
    ]
    SECTION.write(out.section, text=text, figures=figures, tables=tables)
