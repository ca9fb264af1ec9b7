"""Rule `decentral_train`: the approaches of one unit (all of a mode × client split, or one
approach: ``decentral.fanout``), all rounds."""

import torch
from _common import run

from fedclust.decentral.experiment import run_unit, unit_data
from fedclust.decentral.simulate import optimizer_state_for
from fedclust.io import read_table, write_json, write_table
from fedclust.transports import from_config


def main() -> None:
    cfg = snakemake.params.cfg
    w = snakemake.wildcards
    torch.set_num_threads(snakemake.threads)
    feats = read_table(snakemake.input.features)
    obs = read_table(snakemake.input.obs)
    unit = unit_data(feats, obs, w.split, w.mode, cfg, snakemake.params.heart)
    data, impute_ledger, impute_info = unit.clients, unit.impute_ledger, unit.impute_info
    kw = dict(
        rounds=cfg["rounds"],
        epochs=cfg["epochs"],
        batch_size=cfg["batch_size"],
        lr=cfg["learning_rate"],
        optimizer_state=optimizer_state_for(w.mode, cfg.get("optimizer_state")),
        seed=snakemake.params.seed,
        published_validation_split=cfg["published_validation_split"],
    )
    res = run_unit(
        data, list(snakemake.params.approaches), w.mode, vectorise=cfg["vectorise"],
        impute_ledger=impute_ledger, transport=from_config(snakemake.config), **kw,
    )  # fmt: skip
    write_table(snakemake.output.metrics, res.metrics, index=False)
    write_table(snakemake.output.divergence, res.divergence, index=False)
    write_table(snakemake.output.ledger, res.ledger, index=False)
    write_json(
        snakemake.output.run,
        {
            "split": w.split,
            "mode": w.mode,
            "threads": snakemake.threads,
            "clients": [d.name for d in data],
            "n_train": [len(d.y_train) for d in data],
            "n_test": [len(d.y_test) for d in data],
            "optimizer_state": kw["optimizer_state"]
            + (
                " (as_published: the published code's shared Adam state)"
                if w.mode == "as_published"
                else ""
            ),
            "imputation": "pooled (as_published)" if impute_info is None else "per center",
            "imputation_fills": [] if impute_info is None else impute_info.to_dict("records"),
            "runs": res.runs,
        },  # fmt: skip
    )


run(main, snakemake)
