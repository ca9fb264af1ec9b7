"""Rule `dec_tsae`: the centralized TSAE of one (dataset, optimizer), handed to its DEC units."""

import torch
from _common import run

from fedclust.dec.io import load_dataset
from fedclust.dec.merge import save_pt, tsae_record
from fedclust.dec.pipeline import check_features, device, train_central_tsae
from fedclust.dec.units import apply_settings, read_settings


def main() -> None:
    torch.set_num_threads(max(1, int(snakemake.threads)))
    ds, opt = snakemake.wildcards.dataset, snakemake.wildcards.optimizer
    settings = read_settings(snakemake.input)
    cfg = apply_settings(snakemake.params.cfg, ds, settings)
    x, _, _ = load_dataset(snakemake.input.features, snakemake.input.obs)
    xt = torch.as_tensor(check_features(x, snakemake.input.features), device=device())
    tsae, curve = train_central_tsae(xt, cfg, ds, opt, int(snakemake.params.seed))
    save_pt(snakemake.output.tsae, tsae_record(tsae, curve))


run(main, snakemake)
