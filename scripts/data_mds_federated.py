"""Rule `mds_federated`: NaN → the column frequency of ones computed by the centres of a split
(issue 23), and its agreement with the pooled imputation."""

import numpy as np
import pandas as pd
from _common import run

import fedclust.transports
from fedclust.data.fedpreprocess.tables import mds_impute_federated
from fedclust.federation import Ledger
from fedclust.io import read_table, write_table


def main() -> None:
    i, out = snakemake.input, snakemake.output
    raw, pooled = read_table(i.raw), read_table(i.pooled)
    split = pd.read_csv(i.split, sep="\t", dtype=str).set_index("sample_id")["center"]
    ledger = Ledger()
    fed, n_nan, fill = mds_impute_federated(
        raw,
        split,
        min_samples=int(snakemake.params.prep["min_samples"]),
        transport=fedclust.transports.from_config(snakemake.config),
        ledger=ledger,
    )
    pooled_fill = raw.mean(axis=0, skipna=True)
    up = ledger.messages()
    up = up[up["receiver"] == "server"]
    row = {
        "dataset": "mds",
        "split": snakemake.params.split,
        "samples": int(len(raw)),
        "centres": int(split.nunique()),
        "nans_imputed": int(n_nan.sum()),
        "fill_max_abs": float(np.nanmax(np.abs(fill - pooled_fill))) if len(fill) else 0.0,
        "features_max_abs": float(np.abs(fed.to_numpy() - pooled.loc[fed.index].to_numpy()).max()),
        "messages": int(len(ledger.messages())),
        "floats_per_centre_max": int(up.groupby("sender")["floats"].sum().max()),
        "abstentions": int(ledger.n_abstentions),
    }
    write_table(out.features, fed)
    write_table(out.agreement, pd.DataFrame([row]), index=False)
    write_table(out.ledger, ledger.table(), index=False)


run(main, snakemake)
