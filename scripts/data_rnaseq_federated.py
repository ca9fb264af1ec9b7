"""Rule `rnaseq_federated`: size factors, VST and top-N genes computed by the centres of the
cohort's split (issue 23), and their agreement with the pooled rule's pydeseq2 run."""

import logging

import pandas as pd
from _common import run

import fedclust.transports
from fedclust.data.fedpreprocess import RnaseqSettings, agreement, federated_rnaseq
from fedclust.data.fedpreprocess.rnaseq import load_pooled
from fedclust.federation import Ledger
from fedclust.io import read_table, write_table
from fedclust.seeds import derive_seed


def main() -> None:
    i, out, cohort = snakemake.input, snakemake.output, snakemake.wildcards.cohort
    counts = read_table(i.counts)
    split = pd.read_csv(i.split, sep="\t", dtype=str).set_index("sample_id")["center"]
    settings = RnaseqSettings(
        top_genes=snakemake.params.top_genes,
        vst_fit_genes=snakemake.params.vst_fit_genes,
        vst_fit_pool=snakemake.params.vst_fit_pool,
        seed=derive_seed(snakemake.params.seed, "vst subset", cohort),
    )
    ledger = Ledger()
    fed = federated_rnaseq(
        counts,
        split,
        settings,
        min_samples=int(snakemake.params.prep["min_samples"]),
        transport=fedclust.transports.from_config(snakemake.config),
        ledger=ledger,
    )
    row = agreement(fed, load_pooled(i.pooled_sf, i.pooled_vst, i.pooled_fit), counts)
    logging.info("federated vs pooled: %s", row)
    write_table(out.sf, fed.sf)
    write_table(out.vst, fed.vst)
    write_table(out.agreement, pd.DataFrame([{"dataset": f"rnaseq/{cohort}",
                                              "split": snakemake.params.split, **row}]),
                index=False)  # fmt: skip
    write_table(out.ledger, ledger.table(), index=False)


run(main, snakemake)
