"""The DEC stage's report section (order 30) and its summary tables."""

from __future__ import annotations

import pandas as pd

from fedclust.io import save_figure, write_table
from fedclust.report import StageSection
from fedclust.report.headlines import Agg, Col, Line, Spec

from .tuning_plots import THESIS_FIGURES, figure_caption

THESIS_NOTE = (
    "Thesis reference (seed 000 §8): best Hungarian accuracy 0.8824 (MNIST, α=9, normal-l1, Yogi) "
    "and 0.8932 (BMNIST, α=9, normal-l2, Yogi) on the 60 000 MNIST training images, against 0.843 "
    "for the original DEC; EUROMDS (private) centralized Silh_data 0.235, federated 0.147 (best)."
)


DIGITS_CAUSE = (
    "this config's digits data set and training schedule, the thesis' 60 000 28×28 MNIST "
    "images (data section)"
)
_MDS = (
    "this run's MDS cohort and reference labels, the thesis' private EUROMDS against HDP "
    "groups (data section)"
)
HEADLINE = Spec(
    doc="Seed 000: best Hungarian accuracy MNIST 0.8824, BMNIST 0.8932; EUROMDS best centralized "
    "accuracy 0.61527 and Silh_data 0.23511, HDP labels 0.1505; best federated 0.60842.",
    lines=(
        Line(
            "MNIST best Hungarian accuracy",
            source=0.8824,
            ours=Agg("accuracy", "max"),
            table="dec/mnist/centralized/results",
            cause=DIGITS_CAUSE,
            note="thesis 60 000 28×28 images; default: 1797 8×8 digits",
        ),
        Line(
            "BMNIST best Hungarian accuracy",
            source=0.8932,
            ours=Agg("accuracy", "max"),
            table="dec/bmnist/centralized/results",
            cause=DIGITS_CAUSE,
        ),
        Line(
            "MDS best centralized accuracy vs reference",
            source=0.61527,
            ours=Agg("accuracy", "max"),
            table="dec/mds/centralized/results",
            cause=_MDS,
            note="thesis: EUROMDS vs HDP labels; default: simulated MDS",
        ),
        Line(
            "MDS best centralized Silh_data",
            source=0.23511,
            ours=Agg("sil_data", "max"),
            table="dec/mds/centralized/results",
            cause=_MDS,
        ),
        Line(
            "MDS Silh_data of the reference labels",
            source=0.1505,
            ours=Col("sil_data"),
            table="dec/mds/centralized/reference_scores",
            cause=_MDS,
        ),
        Line(
            "MDS best federated accuracy",
            source=0.60842,
            ours=Agg("accuracy", "max"),
            table="federated_summary",
            cause=_MDS + " and this config's federated rounds",
            where={"dataset": "mds"},
        ),
    ),
    source_label="thesis (seed 000)",
    figure=("mds/centralized/km", "km.png"),
)

SECTION = StageSection("dec", "Federated deep embedded clustering (seed 000)", 30, HEADLINE)


def ledger_summary(ledgers: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Per (dataset, split, strategy, centroid aggregation, message kind): messages, rounds,
    floats, and floats per center per round. "shared" = the TSAE rounds and the local k-means,
    run once per strategy and shared by its four centroid aggregations. Kind "abstain": centers
    that sent nothing (fewer than k samples or a local cluster smaller than m): how often, who."""
    rows = []
    for (ds, split), t in ledgers.items():
        for (st, cm, kind), g in t.groupby(["strategy", "centroids", "kind"], sort=False):
            center = g.sender.where(g.sender != "server", g.receiver)
            rounds = g["round"].nunique()
            ab = kind == "abstain"
            who = g.sender.value_counts().sort_index()
            rows.append(
                {
                    "dataset": ds,
                    "split": split,
                    "strategy": st,
                    "centroids": cm,
                    "kind": kind,
                    "messages": 0 if ab else len(g),
                    "rounds": rounds,
                    "floats": int(g.floats.sum()),
                    "floats_per_center_round": int(g.floats.sum())
                    // max(center.nunique() * rounds, 1),
                    "abstentions": len(g) if ab else 0,
                    "abstained": "; ".join(f"{c} x{n}" for c, n in who.items()) if ab else "",
                }
            )
    return pd.DataFrame(rows)


def build_section(
    section_path: str,
    *,
    cycle_figure: str,
    federated_out: str,
    ledger_out: str,
    datasets: list[str],
    federated: list[tuple[str, str]],
    survival: bool,
    default_config: bool,
    tuning: list[str] | None = None,
    sources: dict[str, str | None] | None = None,
    cfg: dict | None = None,
) -> None:
    fed = [
        pd.read_csv(f"results/dec/{d}/federated/{s}/results.tsv", sep="\t").assign(dataset=d)
        for d, s in federated
    ]
    fed_table = pd.concat(fed, ignore_index=True) if fed else pd.DataFrame()
    if not fed_table.empty:
        cols = [
            "dataset",
            "split",
            "strategy",
            "centroids",
            "accuracy",
            "ari",
            "nmi",
            "cycle_accuracy",
            "recon_loss",
            "ae_loss",
            "sil_data",
            "sil_feat",
            "ch_data",
            "ln_ch_data",
            "ch_feat",
            "ln_ch_feat",
            "changed_vs_init",
            "init_accuracy",
        ]
        fed_table = fed_table[[c for c in cols if c in fed_table.columns]]
    write_table(federated_out, fed_table.round(5), index=False)
    ledgers = {
        (d, s): pd.read_csv(f"results/dec/{d}/federated/{s}/ledger.tsv", sep="\t")
        for d, s in federated
    }
    write_table(ledger_out, ledger_summary(ledgers), index=False)
    from .plots import cycle_vs_recon

    central = {
        d: pd.read_csv(f"results/dec/{d}/centralized/results.tsv", sep="\t") for d in datasets
    }
    save_figure(cycle_vs_recon(central), cycle_figure)

    scale = (
        "Default configuration: scikit-learn 8×8 digits (1797 images, stands in for MNIST) "
        "and the simulated MDS-like cohort (2043 × 54 binary, 6 generating components) with a "
        "reduced TSAE [N, 64, 64, 128, 10], few epochs and rounds: the numbers exercise the "
        "method, they do not reproduce the thesis."
        if default_config
        else "Thesis configuration: MNIST/BMNIST (60 000 training images) and the public IPSS-M "
        "cohort in place of the private EUROMDS data (reference labels: IPSS-M risk "
        "category, not the unpublished HDP components)."
    )
    text = [
        "Deep embedded clustering with a tied stacked autoencoder (TSAE), centralized and "
        "federated (seed 000). Step 1 trains the TSAE on reconstruction; Step 2 initialises "
        "centroids by k-means (20 restarts) in the feature space and minimises KL(P‖Q) with a "
        "Student-t kernel. Federated runs simulate Flower-style clients (1 local epoch per "
        "round, optimizer state reset each round) with FedAvg+SGD, FedAdam+Adam, FedYogi+Yogi "
        "on the server, and one of four centroid aggregations; they are evaluated on the "
        "pooled data as in the thesis.",
        scale,
        THESIS_NOTE,
        "CH = Calinski–Harabasz, given raw and as ln(CH); the thesis' Table B.7 used ln(ln(CH)). "
        "Silhouette: cosine in data space, Euclidean in feature space. cycle_accuracy = "
        "Hungarian accuracy of predictions on reconstructions vs on originals.",
    ]
    if cfg is not None:
        text.append(tuning_provenance(cfg))
    figures, tables = [], []
    for d in datasets:
        tables.append(
            {
                "path": f"results/dec/{d}/centralized/reference_scores.tsv",
                "caption": f"{d}: internal scores of the reference labels (samples with a "
                "reference category; n_without_reference left out): silhouette (cosine, data "
                "space; Euclidean, feature space of the best centralized model) and "
                "Calinski–Harabasz raw and ln. Thesis Table 5.1 (HDP labels, EUROMDS): "
                "Silh_data 0.1505, Silh_feat −0.1482, ln CH_data 1.892, ln CH_feat 1.764"
                + (
                    "; here the reference is the IPSS-M risk category (thesis config) or the "
                    "simulator's generating component (default), not HDP."
                    if d == "mds"
                    else "; here the reference is the true digit."
                ),
            }
        )
        tables.append(
            {
                "path": f"results/dec/{d}/centralized/results.tsv",
                "caption": f"{d}: centralized results, optimizer × α × scaler, sorted by "
                "the thesis' selection order (reproduces the layout of seed 000 "
                "Tables B.4/B.5 for digits, B.6/B.7 for MDS).",
                "max_rows": 40,
            }
        )
        figures += [
            {
                "path": f"results/dec/{d}/centralized/curves.png",
                "caption": f"{d}: TSAE reconstruction loss, DEC KL loss and fraction of labels "
                "changed per epoch.",
                "reproduces": "seed 000 training curves",
            },
            {
                "path": f"results/dec/{d}/centralized/tsne.png",
                "caption": f"{d}: 2-D t-SNE (scikit-learn) of the feature space after clustering, "
                "reference labels vs DEC clusters.",
                "reproduces": "seed 000 Fig. 5.6 (MNIST) / 5.9 (EUROMDS)",
            },
            {
                "path": f"results/dec/{d}/centralized/generated.png",
                "caption": f"{d}: decoded cluster centroids and samples around them"
                + (
                    " (mutation probabilities vs observed frequencies per cluster)."
                    if d == "mds"
                    else " (generated digits)."
                ),
                "reproduces": "seed 000 §1.7 generative use, Fig. 3.2",
            },
        ]
    figures.append(
        {
            "path": cycle_figure,
            "caption": "Cycle accuracy vs reconstruction loss after clustering, one point "
            "per centralized grid run (on this configuration's data).",
            "reproduces": "seed 000 Fig. 5.14 (layout)",
        }
    )
    if survival:
        figures.append(
            {
                "path": "results/dec/mds/centralized/km.png",
                "caption": "MDS: Kaplan–Meier (lifelines) per DEC cluster (left) and per "
                "reference group (right). Clusters are matched one-to-one to the reference "
                "groups by the Hungarian method (scipy linear_sum_assignment) as in the "
                "thesis, so a cluster and its matched group share colour and position "
                "('c3 ≙ Low'); clusters without a partner are 'unmatched'. Outcomes: OS "
                "(Fig. 5.12), LFS = death or AML (the thesis' AML-adjusted OS, Fig. 5.13) "
                "and AMLt = AML transformation censored at death (the thesis' "
                "'leukemia-free survival' event, evolution to AML, Fig. 5.11). Patients "
                "without a reference category are left out of the reference panel and its "
                "log-rank test (their number is in the panel title and the table). The "
                "multivariate log-rank p is an extension (the thesis reports none).",
                "reproduces": "seed 000 Figs 5.11–5.13",
            }
        )
        tables.append(
            {
                "path": "results/dec/mds/centralized/km.tsv",
                "caption": "MDS: per group n, events, KM median survival (years; inf = "
                "not reached), the multivariate log-rank p-value and n_unknown_excluded "
                "(patients without a reference category, left out of the reference test).",
            }
        )
    for d in dict.fromkeys(d for d, _ in federated):
        figures.append(
            {
                "path": f"results/dec/{d}/splits.png",
                "caption": f"{d}: samples per center of every split, stacked by reference "
                "label (uniform and skewed-Gaussian histogram procedure with 10 equal-width "
                "bins; only the quantity is skewed). Thesis sizes for n = 2043, seed 51550: "
                "uniform [223, 204, 213, 197, 218, 204, 169, 228, 201, 186], skewed "
                "[44, 300, 465, 495, 332, 204, 117, 52, 23, 11].",
                "reproduces": "seed 000 Figs 4.1/4.2",
            }
        )
        tables.append(
            {
                "path": f"results/dec/{d}/splits.tsv",
                "caption": f"{d}: samples per center and split, by reference label.",
            }
        )
    if federated:
        tables.append(
            {
                "path": federated_out,
                "caption": "Federated results, split × server optimizer × centroid "
                "aggregation, pooled evaluation (layout of seed 000 Tables "
                "C.1/C.2).",
                "max_rows": 60,
            }
        )
        tables.append(
            {
                "path": ledger_out,
                "caption": "Privacy ledger: every message between centers and server "
                "(TSAE parameters every round, then encoder + centroids only: the decoder "
                "never travels in the DEC stage; k centroids + cluster sizes once), counted in "
                "floats. Kind 'abstain': centers that sent no centroids because they have at "
                "most k samples or a local cluster smaller than m (dec.federated."
                "min_cluster_size); 'abstained' says who and how often. The federated "
                "results are evaluated on the pooled data (an evaluation, not part of the "
                "protocol).",
            }
        )
        for d, s in federated:
            figures.append(
                {
                    "path": f"results/dec/{d}/federated/{s}/curves.png",
                    "caption": f"{d} / {s}: federated TSAE and DEC losses per round "
                    "(sample-weighted mean over clients).",
                    "reproduces": "seed 000 §4.2 federated training",
                }
            )
    tuning_figures, tuning_tables = tuning_entries(tuning or [], sources or {}, default_config)
    figures += tuning_figures
    tables += tuning_tables
    SECTION.write(section_path, text=text, figures=figures, tables=tables)


PUBLIC = ("mnist", "bmnist")  # public data sets: tuning on them pools no patient


def tuning_provenance(cfg: dict) -> str:
    """Issue 23: where the federated runs' hyper-parameters come from — this config's settings,
    the dataset's own tuning on pooled data (a step no consortium can run), or a public dataset's
    selection (``dec.tuning.reuse.<dataset>: {source: mnist, grids: [...]}``)."""
    from .tuning_spec import GRIDS
    from .workflow import reuse_source, tuned_datasets

    t = cfg.get("tuning") or {}
    fed = list(cfg.get("federated_datasets") or [])
    if not fed:
        return ""
    head = "Hyper-parameters of the federated runs (issue 23): "
    if not t.get("enabled") or not t.get("apply"):
        return head + (
            "this config's settings (dec.autoencoder / dec.clustering); the tuning grids, if run, "
            "are reported but not applied, so no pooled tuning feeds them."
        )
    parts = []
    for d in fed:
        if d not in tuned_datasets(cfg):
            parts.append(f"{d}: this config's settings (not tuned)")
            continue
        if d in PUBLIC:
            parts.append(f"{d}: tuned on {d} itself, public data (no pooling of patients)")
            continue
        src = {g: reuse_source(cfg, d, g) for g in GRIDS}
        public = sorted({s for s in src.values() if s})
        own = [g for g, s in src.items() if not s]
        if public:
            parts.append(
                f"{d}: grids {', '.join(g for g, s in src.items() if s)} selected on "
                f"{', '.join(public)} (public data, applied to the federated {d} runs)"
                + (f", grids {', '.join(own)} on pooled {d}" if own else "")
            )
        else:
            parts.append(
                f"{d}: tuned on pooled {d} (seed 000 §4.1) — a pooled step a consortium could "
                f"not run; dec.tuning.reuse.{d}: {{source: mnist, grids: [...]}} takes the public "
                "MNIST selection for those grids instead (both data sets tuned)"
            )
    return head + "; ".join(parts) + "."


def tuning_entries(
    tuning: list[str], sources: dict[str, str | None], default_config: bool
) -> tuple[list[dict], list[dict]]:
    """The tuning grids' figures (Figs 5.1–5.4, A.1–A.10; captions with our best values beside
    the thesis', read from results/dec/<dataset>/tuning/<grid>.tsv) and best tables."""
    figures: list[dict] = []
    tables: list[dict] = []
    for path in [p for p in tuning if p.endswith(".png")]:  # Figs 5.1–5.4, A.1–A.10
        ds, grid_panel = path.split("/")[2], path.rsplit("/", 1)[-1].removesuffix(".png")
        grid, panel = grid_panel.split("_", 1)
        table = pd.read_csv(f"results/dec/{ds}/tuning/{grid}.tsv", sep="\t")
        figures.append(
            {
                "path": path,
                "caption": figure_caption(table, ds, grid, panel, sources.get(ds)),
                "reproduces": "seed 000 "
                + THESIS_FIGURES.get((ds, grid, panel), "§4.1 tuning (no thesis figure)"),
            }
        )
    for path in [p for p in tuning if not p.endswith(".png")]:  # issue 16: selections
        name = path.rsplit("/", 1)[-1].removesuffix("_best.tsv")
        tables.append(
            {
                "path": path,
                "caption": f"Tuning grid '{name}' ({path.split('/')[2]}): the selected row per "
                "optimizer (Step 1: lowest MSE on held-out rows; Step 2: the data set's §3.8 "
                "order) and, as thesis_<column>, the thesis' value where it prints one "
                "(source column). lr: TSAE LR × scheduler, the no-scheduler LR is kept; "
                "batch: batch × activations; regularizers: reported only; cluster: Step-2 "
                "batch × LR at α = 1, no scaler (seed 000 Tables A.1–A.8, B.1–B.3, B.6). The full "
                "grid is results/dec/<dataset>/tuning/<grid>.tsv."
                + (
                    " Default config: two points per grid, tiny epochs, selection not applied."
                    if default_config
                    else " The selected settings feed the training rules."
                ),
            }
        )
    return figures, tables
