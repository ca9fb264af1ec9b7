"""Rule `hac_cohort`: every federated HAC variant on one RNA-seq cohort split by region."""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import pandas as pd  # noqa: E402
from _common import run  # noqa: E402

from fedclust.hac import experiments as ex  # noqa: E402
from fedclust.io import write_result_and_benchmark, write_table  # noqa: E402


def main() -> None:
    cfg, seed, out = snakemake.params.cfg, int(snakemake.params.seed), snakemake.output
    cohort = snakemake.wildcards.cohort
    paths = {p: getattr(snakemake.input, p) for p in ("sf", "vst")}
    data, centers = ex.load_cohort(paths, snakemake.input.obs)
    n, links, k_max = len(centers), list(cfg["linkages"]), int(cfg["k_max"])
    logging.info("%s: %d samples, %d centers", cohort, n, centers.max() + 1)

    g = cfg["gradual"]
    n_mins = ex.nmin_grid(n, g["n_min"], g["fraction"])
    tabs, cuts = [], []
    panels = ex.check_panels(
        g["panels"], ("euclidean", "cityblock", "cosine", "correlation"), "hac.gradual.panels"
    )
    variants = tuple(g.get("average_delta", ["stored"]))
    for prep, metric in panels:
        cut_rows: list[dict] = []
        t = ex.gradual_table(
            data[prep], centers, links, metric, n_mins, k_max, g.get("d_min", 0.0), variants,
            cut_rows,
        )  # fmt: skip
        ran = t.loc[~t.skipped, "n_min"]
        tabs.append(t.assign(cohort=cohort, prep=prep, n=n, n_min_top=ran.max()))
        cuts.append(pd.DataFrame(cut_rows).assign(method="gradual", prep=prep))
        logging.info("gradual %s %s done (%d skipped settings)", prep, metric, t.skipped.sum())
    write_result_and_benchmark(out.gradual, out.gradual_bench, pd.concat(tabs, ignore_index=True))

    s = cfg["simultaneous"]
    cut_rows = []
    t = ex.simultaneous_table(
        data[s["preprocessing"]], centers, links, "euclidean", s["n_min"], k_max, cut_rows
    )
    write_table(out.simultaneous, t.assign(cohort=cohort, prep=s["preprocessing"]), index=False)
    cuts.append(pd.DataFrame(cut_rows).assign(method="simultaneous", prep=s["preprocessing"]))
    write_table(out.cuts, pd.concat(cuts, ignore_index=True).assign(cohort=cohort), index=False)

    p = cfg["projection"]
    tabs = []
    panels = ex.check_panels(
        p["panels"], ("euclidean", "cityblock", "cosine"), "hac.projection.panels"
    )
    for prep, metric in panels:
        estimators = [p["estimator"]]
        if metric == "cityblock" and p["compare_median"] and p["estimator"] != "median":
            estimators.append("median")
        for est in estimators:
            t = ex.projection_table(
                data[prep],
                centers,
                links,
                metric,
                p["sketch_sizes"],
                p["seeds"],
                seed,
                k_max,
                est,
                kind=p.get("kind", "gaussian"),
                density=p.get("density"),
                dtype=p.get("dtype", "float32"),
                threads=int(p.get("threads", 1)),
            )
            tabs.append(t.assign(cohort=cohort, prep=prep))
        logging.info("projection %s %s done", prep, metric)
    write_result_and_benchmark(
        out.projection, out.projection_bench, pd.concat(tabs, ignore_index=True)
    )

    write_table(out.pca, ex.pca_table(data).assign(cohort=cohort), index=False)

    e = cfg["exact"]
    t = ex.exact_baselines(
        data["vst"],
        centers,
        e["genes"],
        seed,
        e.get("perturbation_genes", "all"),
        e.get("n_min", 1),
    )
    write_table(out.exact, t.assign(cohort=cohort), index=False)


run(main, snakemake)
