"""Rule `data_heart`: the heart-disease table of seed 004 (features, obs, imputation info)."""

from _common import run

from fedclust.data import heart
from fedclust.io import write_json, write_table


def main() -> None:
    cfg = snakemake.params.cfg
    raw, uci = heart.load_from_config(cfg)
    feats, obs, info = heart.build(raw, uci, cfg["imputation"])
    write_table(snakemake.output.features, feats)
    write_table(snakemake.output.obs, obs)
    write_json(snakemake.output.imputation, {"imputation": cfg["imputation"],
                                             "fills": info})  # fmt: skip


run(main, snakemake)
