"""Rule `dec_train_unit`: one block of the centralized grid (one configuration in the thesis
config, a whole dataset in the default config), its tables and its best model."""

from pathlib import Path

import torch
from _common import run

from fedclust.dec.io import load_dataset
from fedclust.dec.merge import best_record, load_pt, load_tsae, save_pt
from fedclust.dec.pipeline import run_central_unit
from fedclust.dec.units import apply_settings, central_units, read_settings
from fedclust.io import write_table


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    ds, unit = snakemake.wildcards.dataset, snakemake.wildcards.unit
    settings = read_settings(snakemake.input)
    cfg = apply_settings(snakemake.params.cfg, ds, settings)
    x, obs, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    y = obs["label"].astype(str).to_numpy()
    configs = central_units(cfg)[unit]
    files = snakemake.input.get("tsae", [])
    tsaes = {Path(p).stem: load_tsae(load_pt(p), cfg, x.shape[1]) for p in files}
    res = run_central_unit(x, y, cfg, ds, int(snakemake.params.seed), configs, tsaes)
    out = snakemake.output
    write_table(out.table, res.table, index=False)
    write_table(out.ae_curves, res.ae_curves, index=False)
    write_table(out.dec_curves, res.dec_curves, index=False)
    save_pt(out.best, best_record(res))


run(main, snakemake)
