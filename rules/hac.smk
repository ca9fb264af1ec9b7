# Stage: hac — federated hierarchical clustering of RNA-seq (seed 001, issue 3).
HAC = config.get("hac", {})
HAC_COHORTS = HAC.get("cohorts") or config["data"]["rnaseq"]["cohorts"]
HAC_FIGURES = [
    "pca",
    "bimodal",
    "simultaneous",
    "gradual",
    "nmin10",
    "monotone",
    "toy_projection",
    "min_sketch",
    "projection_cohorts",
    "projection_error",
    "projection_metrics",
    "inversions",
    "outlier",
]

HAC_REPORT = {"caption": "../report/hac.rst", "category": "HAC"}


rule hac_toy:
    output:
        bimodal="results/hac/toy/bimodal.tsv",
        projection="results/hac/toy/projection.tsv",
        min_sketch="results/hac/toy/min_sketch.tsv",
    log:
        "results/logs/hac/hac_toy.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_toy")
    resources:
        **job_resources("hac_toy"),
    params:
        cfg=HAC,
        seed=SEED,
    script:
        "../scripts/hac_toy.py"


rule hac_cohort:
    input:
        sf="results/data/rnaseq/{cohort}/sf.parquet",
        vst="results/data/rnaseq/{cohort}/vst.parquet",
        obs="results/data/rnaseq/{cohort}/obs.tsv",
    output:
        gradual="results/hac/{cohort}/gradual.tsv",
        simultaneous="results/hac/{cohort}/simultaneous.tsv",
        projection="results/hac/{cohort}/projection.tsv",
        exact="results/hac/{cohort}/exact.tsv",
        pca="results/hac/{cohort}/pca.tsv",
        # the same tables with their timing columns (results stay byte-identical across runs)
        gradual_bench="results/benchmarks/hac/{cohort}/gradual.tsv",
        projection_bench="results/benchmarks/hac/{cohort}/projection.tsv",
        cuts="results/hac/{cohort}/cuts.tsv",
    log:
        "results/logs/hac/hac_cohort_{cohort}.log",
    benchmark:
        "results/benchmarks/hac_cohort/{cohort}.tsv"
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_cohort")
    resources:
        **job_resources("hac_cohort"),
    params:
        cfg=HAC,
        seed=SEED,
    script:
        "../scripts/hac_cohort.py"


rule hac_report:
    input:
        toy=rules.hac_toy.output,
        gradual=expand("results/hac/{cohort}/gradual.tsv", cohort=HAC_COHORTS),
        simultaneous=expand("results/hac/{cohort}/simultaneous.tsv", cohort=HAC_COHORTS),
        projection=expand("results/hac/{cohort}/projection.tsv", cohort=HAC_COHORTS),
        exact=expand("results/hac/{cohort}/exact.tsv", cohort=HAC_COHORTS),
        pca=expand("results/hac/{cohort}/pca.tsv", cohort=HAC_COHORTS),
        gradual_bench=expand(
            "results/benchmarks/hac/{cohort}/gradual.tsv", cohort=HAC_COHORTS
        ),
        projection_bench=expand(
            "results/benchmarks/hac/{cohort}/projection.tsv", cohort=HAC_COHORTS
        ),
        cuts=expand("results/hac/{cohort}/cuts.tsv", cohort=HAC_COHORTS),
        obs=expand("results/data/rnaseq/{cohort}/obs.tsv", cohort=HAC_COHORTS),
    output:
        section="results/report/sections/hac.json",
        figures=report(
            expand("results/hac/figures/{name}.png", name=HAC_FIGURES), **HAC_REPORT
        ),
        table41=report("results/hac/tables/table41.tsv", **HAC_REPORT),
        table41_bench="results/benchmarks/hac/table41.tsv",
        nmin10=report("results/hac/tables/nmin10.tsv", **HAC_REPORT),
        exact=report("results/hac/tables/exact.tsv", **HAC_REPORT),
        cuts=report("results/hac/tables/cuts.tsv", **HAC_REPORT),
        skipped=report("results/hac/tables/skipped.tsv", **HAC_REPORT),
        cohorts=report("results/hac/tables/cohorts.tsv", **HAC_REPORT),
        outlier=report("results/hac/tables/outlier.tsv", **HAC_REPORT),
    log:
        "results/logs/hac/hac_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("hac_report")
    resources:
        **job_resources("hac_report"),
    params:
        cfg=HAC,
        cohorts=HAC_COHORTS,
        figure_names=HAC_FIGURES,
        seed=SEED,
        config_name=config["report"]["config_name"],
    script:
        "../scripts/hac_report.py"


if enabled("hac"):
    TARGETS += rules.hac_report.output
    REPORT_SECTIONS.append("results/report/sections/hac.json")
