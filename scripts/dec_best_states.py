"""Rule `dec_best_states`: re-run the best centralized configuration of one dataset, keep the
end-of-TSAE and end-of-clustering embeddings, draw the t-SNE density (seed 000 Fig. 5.8 / 5.10)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from _common import run  # noqa: E402

from fedclust.dec.figures_extra import centralized_states, density_figure, save_states  # noqa: E402
from fedclust.dec.io import load_dataset  # noqa: E402
from fedclust.io import save_figure, write_table  # noqa: E402


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    cfg, seed, ds = snakemake.params.cfg, int(snakemake.params.seed), snakemake.wildcards.dataset
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    y = obs["label"].astype(str).to_numpy()
    results = pd.read_csv(snakemake.input.results, sep="\t")
    st = centralized_states(x, y, cfg, ds, seed, results, int(cfg["evaluate"]["tsne_max_points"]))
    save_states(snakemake.output.states, st)
    summary = {
        "dataset": ds,
        "setting": st["key"],
        "subset": len(st["idx"]),
        "subset_mse_tsae": st["mse_ae"],
        "subset_mse_dec": st["mse_dec"],
        "accuracy_rerun": st["row"].get("accuracy"),
        "accuracy_stage": float(results.iloc[0].get("accuracy", float("nan"))),
    }
    write_table(snakemake.output.table, pd.DataFrame([summary]).round(6), index=False)
    fig = density_figure(
        st["emb_dec"],
        st["emb_ae"],
        f"{ds}: t-SNE density of the feature space, best centralized run "
        f"({st['key']}, {len(st['idx'])} points)",
    )
    save_figure(fig, snakemake.output.density)


run(main, snakemake)
