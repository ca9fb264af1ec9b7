"""Rule `dec_best_states`: re-run the best centralized configuration of one dataset, keep the
end-of-TSAE and end-of-clustering embeddings, draw the t-SNE density (seed 000 Fig. 5.8 / 5.10)."""

import pandas as pd
from _common import run

from fedclust.dec.figures_extra import (
    best_states_inputs,
    centralized_states,
    write_best_states,
)


def main() -> None:
    cfg, seed, ds, x, _, y = best_states_inputs(snakemake)
    results = pd.read_csv(snakemake.input.results, sep="\t")
    st = centralized_states(x, y, cfg, ds, seed, results, int(cfg["evaluate"]["tsne_max_points"]))
    stage = {
        "accuracy_rerun": st["row"].get("accuracy"),
        "accuracy_stage": float(results.iloc[0].get("accuracy", float("nan"))),
    }
    title = f"{ds}: t-SNE density of the feature space, best centralized run ({st['key']}"
    write_best_states(snakemake.output, ds, st, stage, title)


run(main, snakemake)
