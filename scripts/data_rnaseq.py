"""Rule `rnaseq_cohort`: parse Xena files → counts, size-factor normalised, VST, obs, PCA figure."""

import logging

from _common import run

from fedclust.data.preprocess import preprocess_rnaseq
from fedclust.data.summary import pca_figure
from fedclust.data.tcga import load_xena_cohort
from fedclust.io import save_figure, write_table
from fedclust.seeds import derive_seed


def main() -> None:
    out = snakemake.output
    counts, obs = load_xena_cohort(
        snakemake.input.counts, snakemake.input.clinical, snakemake.input.sites
    )
    expressed = counts.columns[(counts > 0).any(axis=0)]
    logging.info("%d samples, %d genes (%d with a non-zero count)", *counts.shape, len(expressed))
    sf, vst = preprocess_rnaseq(
        counts[expressed],
        snakemake.params.top_genes,
        n_cpus=snakemake.threads,
        vst_fit_genes=snakemake.params.vst_fit_genes,
        vst_fit_pool=snakemake.params.vst_fit_pool,
        seed=derive_seed(snakemake.params.seed, "vst subset", snakemake.wildcards.cohort),
    )
    write_table(out.counts, counts)
    write_table(out.sf, sf)
    write_table(out.vst, vst)
    write_table(out.obs, obs)
    color = obs["true_cluster"] if "true_cluster" in obs else obs["center"]
    save_figure(pca_figure(sf, vst, color, snakemake.wildcards.cohort), out.pca)


run(main, snakemake)
