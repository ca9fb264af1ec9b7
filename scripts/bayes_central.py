"""Rule `bayes_central`: Table 4.1's central runs (one unit, or all with bayes.fanout: all):
each unit's per-epoch curve and result."""

import torch
from _common import run

from fedclust.bayes.experiment import load_data, run_units
from fedclust.io import write_json, write_table


def _paths(v) -> list[str]:
    """One path (a unit job) or a list (a grouped job)."""
    return [v] if isinstance(v, str) else list(v)


def main() -> None:
    cfg = snakemake.params.cfg
    torch.set_num_threads(int(cfg["threads"]))
    units = list(snakemake.params.units)
    runs = run_units("central", cfg, load_data(snakemake.input.data), units, snakemake.params.seed)
    out = snakemake.output
    for (curve, result), pc, pr in zip(runs, _paths(out.curve), _paths(out.result), strict=True):
        write_table(pc, curve, index=False)
        write_json(pr, result)


run(main, snakemake)
