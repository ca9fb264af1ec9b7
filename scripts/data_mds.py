"""Rule `mds`: IPSS-M cohort (real) or the MDS-like simulator → features.parquet (NaN imputed by
the pooled column frequency), features_raw.parquet (NaN kept, for the federated imputation),
obs.tsv."""

import pandas as pd
from _common import run

from fedclust.data.mds import load_ipssm
from fedclust.data.preprocess import impute_binary_frequency
from fedclust.data.simulate import simulate_mds
from fedclust.io import write_table


def main() -> None:
    cfg, out = snakemake.params.cfg, snakemake.output
    if cfg["source"] == "ipssm":
        i = snakemake.input
        raw, obs, _ = load_ipssm(i.clinical, i.mut, i.cna, label=cfg["label"], impute=False)
        feats, n_nan = impute_binary_frequency(raw, where=f"{i.mut} + {i.cna}")
    else:
        raw, obs = simulate_mds(seed=snakemake.params.seed, **cfg["simulate"])
        feats, n_nan = impute_binary_frequency(raw, where="simulated MDS")
    write_table(out.features, feats)
    write_table(out.raw, raw.astype(float))
    write_table(out.obs, obs)
    write_table(out.nans, pd.DataFrame({"nans_imputed": n_nan}))


run(main, snakemake)
