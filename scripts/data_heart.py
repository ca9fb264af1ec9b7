"""Rule `data_heart`: the heart-disease table of seed 004 (features, obs, imputation info).

``data.heart.preprocess``: pooled (the published class medians of the whole table) or federated
(the class medians over the five hospitals from binned counts, issue 23); both are computed and
compared in imputation.json."""

import pandas as pd
from _common import run

import fedclust.transports
from fedclust.data import heart
from fedclust.data.fedpreprocess.tables import heart_impute_federated
from fedclust.federation import Ledger
from fedclust.io import write_json, write_table


def main() -> None:
    cfg, prep = snakemake.params.cfg, snakemake.params.prep
    how = cfg["imputation"]
    mode = cfg.get("preprocess", "pooled")
    raw, uci = heart.load_from_config(cfg)
    pooled = heart.impute_class_conditional(raw, how)
    ledger = Ledger()
    fed = heart_impute_federated(
        raw,
        pd.Series(heart.row_range_hospitals(len(raw)), index=raw.index),
        heart.TARGET,
        how,
        min_samples=int(prep["min_samples"]),
        bins=int(prep["bins"]),
        transport=fedclust.transports.from_config(snakemake.config),
        ledger=ledger,
    )
    feats, obs, info = heart.build(raw, uci, how, imputed=fed if mode == "federated" else pooled)
    diff = {
        col: {
            cls: {"pooled": v["value"], "federated": fed[1][col][cls]["value"],
                  "difference": fed[1][col][cls]["value"] - v["value"], "count": v["count"]}
            for cls, v in classes.items()
        }
        for col, classes in pooled[1].items()
    }  # fmt: skip
    write_table(snakemake.output.features, feats)
    write_table(snakemake.output.obs, obs)
    write_json(
        snakemake.output.imputation,
        {"imputation": how, "preprocess": mode, "fills": info, "federated_vs_pooled": diff,
         "federated_messages": ledger.n_messages, "federated_floats": ledger.n_floats,
         "federated_abstentions": ledger.n_abstentions,
         "min_samples": int(prep["min_samples"]), "bins": int(prep["bins"])},
    )  # fmt: skip


run(main, snakemake)
