"""Rule `bayes_federated`: federated units (PVI, VIRTUAL-style BBB, FedAvg, pooled; the
conjugate check): per unit the per-round table, the ledger and the result."""

import torch
from _common import run

import fedclust.transports
from fedclust.bayes.experiment import load_data, run_units
from fedclust.io import write_json, write_table


def _paths(v) -> list[str]:
    """One path (a unit job) or a list (a grouped job)."""
    return [v] if isinstance(v, str) else list(v)


def main() -> None:
    cfg = snakemake.params.cfg
    torch.set_num_threads(int(cfg["threads"]))
    transport = fedclust.transports.from_config(snakemake.config)
    units = list(snakemake.params.units)
    runs = run_units(
        "federated", cfg, load_data(snakemake.input.data), units, snakemake.params.seed, transport
    )
    out = snakemake.output
    files = zip(_paths(out.rounds), _paths(out.ledger), _paths(out.result), strict=True)
    for (rounds, ledger, result), (a, b, c) in zip(runs, files, strict=True):
        write_table(a, rounds, index=False)
        write_table(b, ledger, index=False)
        write_json(c, result)


run(main, snakemake)
