"""Rule `dec_tune_point`: points of one tuning grid (seed 000 Tables A.1–A.8, B.1–B.3, B.6):
one point per job in the thesis config, the whole (two-point) grid in the default config."""

from pathlib import Path

import pandas as pd
import torch
from _common import run

from fedclust.dec.io import load_dataset
from fedclust.dec.merge import load_pt, load_tsae
from fedclust.dec.tuning import grid_points, point_ids, run_cluster_point, run_tsae_point
from fedclust.dec.units import apply_settings, read_settings
from fedclust.io import write_table


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    w, seed = snakemake.wildcards, int(snakemake.params.seed)
    settings = read_settings(snakemake.input)
    cfg = apply_settings(snakemake.params.cfg, w.dataset, settings)
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    y = obs["label"].astype(str).to_numpy()
    points = grid_points(cfg, w.dataset, w.grid, seed)
    files = snakemake.input.get("tsae", [])
    tsaes = {Path(p).stem: load_tsae(load_pt(p), cfg, x.shape[1])[0] for p in files}
    rows = []
    for i in point_ids(cfg, w.dataset, w.grid, seed)[w.unit]:
        p = points[i]
        if w.grid == "cluster":
            row = run_cluster_point(x, y, tsaes[p["optimizer"]], cfg, w.dataset, p, seed)
        else:
            row = run_tsae_point(x, cfg, w.dataset, w.grid, p, seed)
        rows.append({"point": i, **row})
    write_table(snakemake.output.table, pd.DataFrame(rows), index=False)


run(main, snakemake)
