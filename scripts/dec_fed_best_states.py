"""Rule `dec_fed_best_states`: re-run the best federated configuration of one dataset (over all
splits), keep its federated-TSAE and final embeddings, draw the t-SNE density (Fig. 5.17)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.dec.figures_extra import (  # noqa: E402
    best_federated,
    density_figure,
    federated_states,
    save_states,
)
from fedclust.dec.io import load_centers, load_dataset  # noqa: E402
from fedclust.io import save_figure, write_table  # noqa: E402


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    cfg, seed, ds = snakemake.params.cfg, int(snakemake.params.seed), snakemake.wildcards.dataset
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    y = obs["label"].astype(str).to_numpy()
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
    save_states(snakemake.output.states, st)
    summary = {
        "dataset": ds,
        "setting": st["key"],
        "subset": len(st["idx"]),
        "subset_mse_tsae": st["mse_ae"],
        "subset_mse_dec": st["mse_dec"],
        "sil_data_rerun": st["row"].get("sil_data"),
        "sil_data_stage": best["sil_data"],
        "accuracy_rerun": st["row"].get("accuracy"),
        "accuracy_stage": best.get("accuracy", float("nan")),
    }
    write_table(snakemake.output.table, pd.DataFrame([summary]).round(6), index=False)
    fig = density_figure(
        st["emb_dec"],
        st["emb_ae"],
        f"{ds}: t-SNE density, best federated run ({st['key']}; pooled "
        f"evaluation, {len(st['idx'])} points)",
    )
    save_figure(fig, snakemake.output.density)


run(main, snakemake)
