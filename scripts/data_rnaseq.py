"""Rule `rnaseq_cohort`: parse Xena files → counts, size-factor normalised, VST (pooled pydeseq2;
its internals in vst_fit.npz, the reference of a federated run), obs, PCA figure."""

import logging

from _common import run

from fedclust.data.fedpreprocess import RnaseqSettings, pooled_rnaseq
from fedclust.data.fedpreprocess.rnaseq import save_vst_fit
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
    settings = RnaseqSettings(
        top_genes=snakemake.params.top_genes,
        vst_fit_genes=snakemake.params.vst_fit_genes,
        vst_fit_pool=snakemake.params.vst_fit_pool,
        seed=derive_seed(snakemake.params.seed, "vst subset", snakemake.wildcards.cohort),
    )
    pooled = pooled_rnaseq(counts[expressed], settings, n_cpus=snakemake.threads)
    write_table(out.counts, counts)
    write_table(out.sf, pooled.sf)
    write_table(out.vst, pooled.vst)
    save_vst_fit(out.fit, pooled.fit, pooled.genes)
    write_table(out.obs, obs)
    color = obs["true_cluster"] if "true_cluster" in obs else obs["center"]
    save_figure(pca_figure(pooled.sf, pooled.vst, color, snakemake.wildcards.cohort), out.pca)


run(main, snakemake)
