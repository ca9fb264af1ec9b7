"""Rule `dec_best_states`: re-run the best centralized configuration of one dataset, keep the
end-of-TSAE and end-of-clustering embeddings, draw the t-SNE density (seed 000 Fig. 5.8 / 5.10)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.dec.figures_extra import (  # noqa: E402
    centralized_states,
    labelled_dataset,
    write_best_states,
)


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    cfg, seed, ds = snakemake.params.cfg, int(snakemake.params.seed), snakemake.wildcards.dataset
    x, _, y = labelled_dataset(snakemake.input.features, snakemake.input.obs)
    results = pd.read_csv(snakemake.input.results, sep="\t")
    st = centralized_states(x, y, cfg, ds, seed, results, int(cfg["evaluate"]["tsne_max_points"]))
    stage = {
        "accuracy_rerun": st["row"].get("accuracy"),
        "accuracy_stage": float(results.iloc[0].get("accuracy", float("nan"))),
    }
    title = f"{ds}: t-SNE density of the feature space, best centralized run ({st['key']}"
    write_best_states(snakemake.output, ds, st, stage, title)


run(main, snakemake)
