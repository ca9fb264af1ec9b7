"""Rule `dec_d62_unit`: one D6.2 ch. 7 unit (Table 7.1 configuration, k, clients), or every unit
(``dec.d62.fanout: all``): result, per-round curves, every patient's cluster, ledger."""

import pandas as pd
from _common import run

from fedclust.dec.d62.experiment import Unit, run_unit
from fedclust.io import read_table, write_json, write_table
from fedclust.transports import from_config


def main() -> None:
    import torch

    torch.set_num_threads(1)
    x = read_table(snakemake.input.features)
    out = snakemake.output
    transport = from_config(snakemake.config)
    units = list(snakemake.params.units)
    paths = [out.result, out.curves, out.labels, out.ledger]
    paths = [[p] if isinstance(p, str) else list(p) for p in paths]
    for i, uid in enumerate(units):
        res, curves, labels, ledger = run_unit(
            x.to_numpy(), Unit.parse(uid), snakemake.params.cfg, snakemake.params.seed, transport
        )
        write_json(paths[0][i], res)
        write_table(paths[1][i], curves, index=False)
        write_table(
            paths[2][i], pd.DataFrame({"cluster": labels}, index=x.index.rename("sample_id"))
        )
        write_table(paths[3][i], ledger, index=False)


run(main, snakemake)
