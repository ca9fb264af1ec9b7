"""Rule `perf_hac`: time each federated HAC method against its pooled scipy reference."""

import logging

from _common import run

from fedclust.io import write_json, write_table
from fedclust.perf import hac_benchmark, machine
from fedclust.report import Section, headlines, write_section


def main() -> None:
    cfg, seed, out = snakemake.params.cfg, int(snakemake.params.seed), snakemake.output
    info = machine()
    table = hac_benchmark(
        seed,
        n=int(cfg["samples"]),
        genes=int(cfg["genes"]),
        linkage_method=cfg["linkage"],
        n_min_fraction=float(cfg["n_min_fraction"]),
        sketch=int(cfg["sketch"]),
        gene_objects=int(cfg["gene_objects"]),
        repeat=int(cfg["repeat"]),
    )
    logging.info("\n%s", table.to_string())
    write_table(out.table, table, index=False)
    write_json(out.machine, info)
    where = (
        f"Measured in this run on {info['processor']} with {info['cpu_count']} CPUs, "
        f"OMP_NUM_THREADS={info['omp_num_threads']}, BLAS threads {info['blas_threads']}, "
        f"one rule thread (numpy {info['numpy']}, Python {info['python']})."
    )
    text = [
        "Time of each federated HAC method divided by the time of its pooled reference "
        "(scipy pdist + linkage on the pooled samples; for genewise, on the pooled genes), best "
        f"of {cfg['repeat']} runs, on a simulated VST-like cohort of {cfg['samples']} samples × "
        f"{cfg['genes']} genes in 7 centers of TCGA-like sizes, {cfg['linkage']} linkage, "
        f"n_min = {cfg['n_min_fraction']:.0%} of n, sketch size k = {cfg['sketch']}, "
        f"{cfg['gene_objects']} genes for genewise. " + where,
        "Floats per center: what the largest and the average center send (from each method's "
        "ledger). The simulation draws the public shared-seed projection matrix once for all "
        "centers; center_madds_max is what the largest center computes for its own sketch "
        "(n_c · d · k multiply-adds). The Gaussian matrix is a stream of row blocks, each drawn "
        "from a seeded torch.Generator in float32 (float32 sketch arithmetic changes distances "
        "by < 1e-6 relative against a Johnson–Lindenstrauss error of ~1/√(2k)); "
        "hac.projection also offers very sparse projections (Li, Hastie & Church 2006). "
        "Timings on a shared machine vary between runs; "
        "benchmarks/hac_projection.py and benchmarks/hac_gradual.py measure larger sizes.",
    ]
    write_section(
        out.section,
        Section(
            id="perf",
            title="Performance: federated HAC vs pooled scipy",
            order=90,
            text=text,
            tables=[{"path": out.table, "caption": "Time ratio to pooled and floats per center"}],
            headline=headlines.perf([{"path": out.table}]),
        ),
    )


run(main, snakemake)
