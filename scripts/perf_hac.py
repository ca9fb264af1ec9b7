"""Rule `perf_hac`: time each federated HAC method against its pooled scipy reference, and the
federated preprocessing against pooled pydeseq2 (issue 23), a secure-aggregation FedAvg round
and a DP-SGD epoch against their plain counterparts (issue 24)."""

import logging

import pandas as pd
from _common import run

from fedclust.io import write_json, write_table
from fedclust.perf.hac import hac_benchmark
from fedclust.perf.machine import machine
from fedclust.perf.preprocess import preprocess_benchmark
from fedclust.perf.privacy import privacy_benchmark
from fedclust.perf.report import build_section


def main() -> None:
    cfg, seed, out = snakemake.params.cfg, int(snakemake.params.seed), snakemake.output
    info = machine()
    table = hac_benchmark(
        seed,
        n=int(cfg["samples"]),
        genes=int(cfg["genes"]),
        linkage_method=cfg["linkage"],
        n_min_fraction=float(cfg["n_min_fraction"]),
        sketch=int(cfg["sketch"]),
        gene_objects=int(cfg["gene_objects"]),
        repeat=int(cfg["repeat"]),
    )
    prep = cfg["preprocess"]
    if prep["enabled"]:
        row = preprocess_benchmark(seed, n=int(prep["samples"]), genes=int(prep["genes"]))
        table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    priv = cfg["privacy"]
    if priv["enabled"]:  # issue 24: secure aggregation per round, DP-SGD per epoch
        rows = privacy_benchmark(
            seed, n=int(priv["samples"]), centres=int(priv["centres"]), rounds=int(priv["rounds"])
        )
        table = pd.concat([table, pd.DataFrame(rows)], ignore_index=True)
    logging.info("\n%s", table.to_string())
    write_table(out.table, table, index=False)
    write_json(out.machine, info)
    build_section(out.section, out.table, cfg=cfg, info=info)


run(main, snakemake)
