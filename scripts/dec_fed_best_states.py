"""Rule `dec_fed_best_states`: re-run the best federated configuration of one dataset (over all
splits), keep its federated-TSAE and final embeddings, draw the t-SNE density (Fig. 5.17)."""

from pathlib import Path

import pandas as pd
from _common import run

from fedclust.dec.figures_extra import (
    best_federated,
    best_states_inputs,
    federated_states,
    write_best_states,
)
from fedclust.dec.io import load_centers


def main() -> None:
    cfg, seed, ds, x, obs, y = best_states_inputs(snakemake)
    tables = [pd.read_csv(p, sep="\t") for p in snakemake.input.results]
    best = best_federated(tables, cfg["datasets"][ds]["selection"])
    split = str(best["split"])
    split_file = [p for p in snakemake.input.splits if Path(p).stem == split][0]
    centers = load_centers(split_file, obs.index)
    st = federated_states(
        x,
        y,
        centers,
        cfg,
        ds,
        split,
        str(best["strategy"]),
        str(best["centroids"]),
        seed,
        int(cfg["evaluate"]["tsne_max_points"]),
    )
    stage = {
        "sil_data_rerun": st["row"].get("sil_data"),
        "sil_data_stage": best["sil_data"],
        "accuracy_rerun": st["row"].get("accuracy"),
        "accuracy_stage": best.get("accuracy", float("nan")),
    }
    title = f"{ds}: t-SNE density, best federated run ({st['key']}; pooled evaluation"
    write_best_states(snakemake.output, ds, st, stage, title)


run(main, snakemake)
