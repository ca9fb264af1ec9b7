"""Rule `hac_exact`: exact baselines (genewise Alg. 3, orthogonal perturbation Alg. 2) and the
PCA table of one RNA-seq cohort split by region."""

from _common import run

from fedclust.hac import experiments as ex
from fedclust.io import write_table
from fedclust.transports import from_config


def main() -> None:
    cfg, seed, out = snakemake.params.cfg, int(snakemake.params.seed), snakemake.output
    cohort = snakemake.wildcards.cohort
    paths = {p: getattr(snakemake.input, p) for p in ("sf", "vst")}
    data, centers = ex.load_cohort(paths, snakemake.input.obs)
    write_table(out.pca, ex.pca_table(data).assign(cohort=cohort), index=False)
    e = cfg["exact"]
    t = ex.exact_baselines(
        data["vst"],
        centers,
        e["genes"],
        seed,
        e.get("perturbation_genes", "all"),
        e.get("n_min", 1),
        transport=from_config(snakemake.config),  # genewise and the perturbation
    )
    write_table(out.exact, t.assign(cohort=cohort), index=False)


run(main, snakemake)
