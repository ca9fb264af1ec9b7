"""Rule `perf_hac`: time each federated HAC method against its pooled scipy reference."""

import logging

import pandas as pd
from _common import run

from fedclust.io import write_json, write_table
from fedclust.perf import hac_benchmark, machine, preprocess_benchmark, privacy_benchmark
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
    prep = cfg.get("preprocess") or {}
    if prep.get("enabled", True):  # issue 23: federated preprocessing vs pooled pydeseq2
        row = preprocess_benchmark(
            seed, int(prep.get("samples", 200)), int(prep.get("genes", 1000))
        )
        table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    priv = cfg.get("privacy") or {}
    if priv.get("enabled", True):  # issue 24: secure aggregation per round, DP-SGD per epoch
        rows = privacy_benchmark(
            seed, int(priv.get("samples", 1000)), int(priv.get("centres", 10)),
            int(priv.get("rounds", 3)),
        )  # fmt: skip
        table = pd.concat([table, pd.DataFrame(rows)], ignore_index=True)
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
    if prep.get("enabled", True):
        text.append(
            "Row 'preprocessing' (issue 23): federated size factors + pydeseq2 VST + top-N "
            "genes (genewise dispersions by scipy's L-BFGS-B driven in lockstep from the "
            "centres' summed likelihood terms, 7 centres in-process) against pooled pydeseq2 on "
            "the same simulated counts, one run each; goal ≤ 1.5×. At TCGA size (1188 × 20 000) "
            "benchmarks/data_federated_preprocess.py measures 0.33× (benchmarks/README.md)."
        )
    if priv.get("enabled", True):
        text.append(
            "Rows 'secure aggregation' and 'DP-SGD' (issue 24): the mean time of a FedAvg round "
            "of DEC's TSAE with secure aggregation (pairwise X25519 masks modulo 2^64 at every "
            "centre, the unmask round at the server; the one-off key set-up is in the objects "
            "column) over the plain round, in-process, goal ≤ 1.3×; one local epoch of DP-SGD "
            "(Poisson sampling, per-sample clipping, Gaussian noise) over one plain minibatch "
            "SGD epoch at the same batch size: the tied TSAE via torch.func, an MLP of the same "
            "widths via Opacus' per-sample hooks."
        )
    write_section(
        out.section,
        Section(
            id="perf",
            title="Performance: federated HAC vs pooled scipy, federated preprocessing, "
            "secure aggregation and DP-SGD",
            order=90,
            text=text,
            tables=[{"path": out.table, "caption": "Time ratio to pooled and floats per center"}],
            headline=headlines.perf([{"path": out.table}]),
        ),
    )


run(main, snakemake)
