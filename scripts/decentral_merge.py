"""Rule `decentral_merge`: the per-unit heart run files → one set per split × mode."""

import pandas as pd
from _common import run

from fedclust.decentral.fanout import merge_units
from fedclust.io import read_json, write_json, write_table


def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t")


def main() -> None:
    i, o = snakemake.input, snakemake.output
    start = 0
    for k, (run_name, n) in enumerate(zip(snakemake.params.runs, snakemake.params.units,
                                          strict=True)):  # fmt: skip
        part = slice(start, start + n)
        start += n
        m, d, led, info = merge_units(
            [_read(p) for p in i.metrics[part]], [_read(p) for p in i.divergence[part]],
            [_read(p) for p in i.ledger[part]], [read_json(p) for p in i.run[part]],
            where=f"results/decentral/runs/{run_name}",
        )  # fmt: skip
        write_table(o.metrics[k], m, index=False)
        write_table(o.divergence[k], d, index=False)
        write_table(o.ledger[k], led, index=False)
        write_json(o.run[k], info)


run(main, snakemake)
