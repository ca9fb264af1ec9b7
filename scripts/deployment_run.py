"""Rule `deployment_run` (opt-in, config `deployment`): one registered stage on a Flower
deployment on this machine with the workflow's centre split, beside the in-process run of the
same centre files: the deployed tables and the comparison (equal: true/false)."""

import numpy as np
import pandas as pd
from _common import files, run

from fedclust import deployrun
from fedclust.admm.deployment import workflow_centres
from fedclust.io import write_json_and_benchmark, write_table


def main() -> None:
    dep, name = snakemake.params.dep, snakemake.params.task
    centres, params = workflow_centres(
        snakemake.params.admm, name, snakemake.params.seed, snakemake.params.mds_source,
        files(snakemake.input), dep.get("iterations"),
    )  # fmt: skip
    res = deployrun.run(dep["stage"], centres, params, tls=bool(dep["tls"]),
                        timeout=float(dep["timeout"]))  # fmt: skip
    got, ref = res["deployed"], res["inprocess"]
    write_table(snakemake.output.history, got["history"], index=False)
    cols = ["round", "sender", "receiver", "kind", "protocol", "fields", "floats"]
    write_table(snakemake.output.ledger, got["ledger"][cols], index=False)
    z = pd.DataFrame({"deployed": np.ravel(got["z"][0]), "inprocess": np.ravel(ref["z"][0])})
    write_table(snakemake.output.coefficients, z.rename_axis("coefficient"))
    write_json_and_benchmark(
        snakemake.output.comparison, snakemake.output.timing,
        {"stage": dep["stage"], "task": name, "tls": bool(dep["tls"]),
         "centres": res["done"]["centres"], "messages": res["done"]["messages"],
         "iterations": got["iterations"], "converged": got["converged"],
         "equal": all(res["equal"].values()), "equal_by_output": res["equal"],
         "wall_s": res["wall_s"]},
    )  # fmt: skip


run(main, snakemake)
