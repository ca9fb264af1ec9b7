"""Rule `dec_train`: merge of the centralized grid units of one dataset (the tables of the
all-in-one run, row for row), the best run's labels and its figures."""

from pathlib import Path

import pandas as pd
import torch
from _common import run

from fedclust.dec.io import load_dataset
from fedclust.dec.merge import load_pt, merge_central
from fedclust.dec.pipeline import reference_scores
from fedclust.dec.plots import (
    digits_grid,
    generated_samples,
    mutation_heatmap,
    training_curves,
    tsne_panels,
)
from fedclust.dec.units import apply_settings, read_settings
from fedclust.io import read_table, save_figure, write_table


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    seed, ds = int(snakemake.params.seed), snakemake.wildcards.dataset
    settings = read_settings(snakemake.input)
    cfg = apply_settings(snakemake.params.cfg, ds, settings)
    out, inp = snakemake.output, snakemake.input
    x, obs, columns = load_dataset(inp.features, inp.obs)
    y = obs["label"].astype(str).to_numpy()
    units = [
        {k: read_table(p) for k, p in zip(("table", "ae_curves", "dec_curves"), t, strict=True)}
        for t in zip(inp.unit_tables, inp.unit_ae, inp.unit_dec, strict=True)
    ]
    tsaes = {Path(p).stem: load_pt(p) for p in inp.get("tsae", [])}
    res = merge_central(units, tsaes, [load_pt(p) for p in inp.unit_best], x, cfg, ds)
    write_table(out.table, res.table, index=False)
    write_table(out.ae_curves, res.ae_curves, index=False)
    write_table(out.dec_curves, res.dec_curves, index=False)
    pred, model = res.best["labels"], res.best["model"]
    write_table(out.labels, pd.DataFrame({"cluster": pred, "label": y}, index=obs.index))
    ref = reference_scores(x, res.best["features"], y, cfg["evaluate"]["silhouette_max_points"])
    write_table(out.reference, pd.DataFrame([{"labels": "reference", **ref}]), index=False)
    key = "{} α={:g} {}".format(*res.best["key"])
    save_figure(
        training_curves(res.ae_curves, res.dec_curves, f"{ds}: training curves"), out.curves
    )
    save_figure(
        tsne_panels(
            res.best["features"],
            pred,
            y,
            seed,
            int(cfg["evaluate"]["tsne_max_points"]),
            f"{ds}: t-SNE of the feature space, best run ({key})",
        ),
        out.tsne,
    )
    samples = generated_samples(model, 5, 0.5, seed)
    if ds == "mds":
        freq = pd.DataFrame(x).groupby(pred).mean()
        freq = freq.reindex(range(samples.shape[0])).fillna(0.0)
        fig = mutation_heatmap(
            samples,
            columns,
            freq,
            f"{ds}: decoded centroids vs observed mutation frequency ({key})",
        )
        save_figure(fig, out.generated)
    else:
        save_figure(
            digits_grid(
                samples, f"{ds}: decoded centroids (col 1) and samples around them ({key})"
            ),
            out.generated,
        )


run(main, snakemake)
