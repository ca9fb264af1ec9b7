"""Rule `survival_report`: Tables 8.1–8.3 (ours beside D6.2), KM of predicted risk groups, the
federated-reference checks and the report section."""

from _common import files, run

from fedclust.survival.report import build_section


def main() -> None:
    build_section(
        files(snakemake.input),
        files(snakemake.output),
        cfg=snakemake.params.cfg,
        pred_jobs=[tuple(j) for j in snakemake.params.pred_jobs],
        prep=snakemake.params.prep,
        seed=int(snakemake.params.seed),
    )


run(main, snakemake)
