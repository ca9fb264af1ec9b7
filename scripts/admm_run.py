"""Rule `admm_run`: one ADMM job (task × mode): history, result and ledger tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.convex.pipeline import load_task, run_job  # noqa: E402
from fedclust.io import write_json, write_table  # noqa: E402


def main() -> None:
    cfg, task, w = snakemake.params.cfg, snakemake.params.task, snakemake.wildcards
    inp = snakemake.input
    data = load_task(
        cfg,
        task,
        snakemake.params.seed,
        w.task,
        features=inp.get("features"),
        obs=inp.get("obs"),
        split=inp.get("split"),
        source=snakemake.params.mds_source,
    )
    res, info = run_job(cfg, task, w.admm_mode, data)
    write_table(snakemake.output.history, res.history, index=False)
    write_table(snakemake.output.ledger, res.ledger.table(), index=False)
    write_json(snakemake.output.result, {"task": w.task, **info})


run(main, snakemake)
